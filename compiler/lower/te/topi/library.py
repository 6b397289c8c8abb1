"""Imports every file of compute rules (each registers its rules on import)."""

from . import (  # noqa: F401
    activations,
    broadcast,
    dense_pack,
    einsum,
    elemwise,
    grid_sample,
    nn_conv,
    nn_norm,
    plumbing,
    pooling,
    reduce,
    scan,
    scatter,
    transform,
    transform_index,
    winograd,
)

# the quantization toolkit's annotation; ROI pooling and deformable convolution
from . import nn_deformable, simulated_quantize, vision  # noqa: F401,E402
from . import algorithm  # noqa: F401,E402  (topk)
