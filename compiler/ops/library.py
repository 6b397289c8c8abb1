"""Every op file, imported once so that each registers its ops."""

from . import (  # noqa: F401
    activations,
    binary,
    elemwise,
    nn_conv,
    nn_norm,
    plumbing,
    pooling,
    qnn,
    reduce,
    transform,
    transform_index,
)
from . import dynamic  # noqa: F401,E402  (after the static ops its dyn.* forms stand for)

# issue 14 (h-opsb): ROI pooling and deformable convolution
from . import nn_deformable, vision  # noqa: F401,E402
