"""Imports every file of compute rules (each registers its rules on import)."""

from . import (  # noqa: F401
    activations,
    broadcast,
    dense_pack,
    elemwise,
    nn_conv,
    nn_norm,
    plumbing,
    pooling,
    reduce,
    transform,
    transform_index,
)

# issue 14 (h-opsb): ROI pooling and deformable convolution
from . import nn_deformable, vision  # noqa: F401,E402
