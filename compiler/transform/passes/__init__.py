"""One file per pass; importing this package registers them all by name."""

from . import fuse_ops, infer_type  # noqa: F401
from . import simplify_inference  # noqa: F401
from . import fold_constant  # noqa: F401
from . import canonicalize_ops  # noqa: F401
from . import simplify_expr  # noqa: F401
from . import eliminate_common_subexpr  # noqa: F401
from . import dead_code_elimination  # noqa: F401
from . import remove_unused_functions  # noqa: F401
from . import canonicalize_cast  # noqa: F401
from . import simplify_expr_post_alter_op  # noqa: F401
from . import to_basic_block_normal_form  # noqa: F401
from . import flatten_atrous_conv  # noqa: F401
from . import plan_devices  # noqa: F401
from . import fold_scale_axis  # noqa: F401  (and its Backward/Forward members)
from . import fast_math  # noqa: F401
from . import combine_parallel_conv2d  # noqa: F401
from . import combine_parallel_dense  # noqa: F401
from . import combine_parallel_batch_matmul  # noqa: F401
from . import defuse_ops  # noqa: F401
from . import dynamic_to_static  # noqa: F401
from . import legalize, legalize_x86, qnn_legalize, qnn_canonicalize  # noqa: F401
from . import qnn_composite_rules  # noqa: F401,E402  (qnn.add, qnn.concatenate, qnn.conv2d_transpose, qnn.batch_matmul)
from . import merge_composite, annotate_target, merge_compiler_regions, partition_graph  # noqa: F401  (BYOC)
from . import alter_op_layout  # noqa: F401
from . import convert_layout  # noqa: F401
