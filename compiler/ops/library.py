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
