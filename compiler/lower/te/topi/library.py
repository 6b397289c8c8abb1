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
from . import algorithm  # noqa: F401,E402  (topk; issue 14)
