"""Every op file, imported once so that each registers its ops."""

from . import (  # noqa: F401
    activations,
    binary,
    einsum,
    elemwise,
    grid_sample,
    nn_conv,
    nn_norm,
    plumbing,
    pooling,
    qnn,
    reduce,
    scan,
    scatter,
    transform,
    transform_index,
    winograd,
)
from . import algorithm  # noqa: F401,E402  (topk; issue 14)
from . import dynamic  # noqa: F401,E402  (after the static ops its dyn.* forms stand for)

# ops that read other ops' definitions (nn.conv2d_transpose, concatenate, qnn.requantize, nn.conv2d)
from . import nn_deformable, qnn_composite, simulated_quantize, vision  # noqa: F401,E402
