"""One file per pass; importing this package registers them all by name."""

from . import fuse_ops, infer_type  # noqa: F401
