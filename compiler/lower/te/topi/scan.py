"""cumsum and cumprod as reductions (TVM runs a sequential scan; a compute rule has only
index arithmetic and reductions): element i along the axis is the sum (product) of the
elements j <= i (j < i exclusive), the others read as 0 (1):

    T_cumprod[.., i, ..] = prod over j of select(j <= i, x[.., j, ..], 1)

That is n^2 reads per row of n where a scan makes n: fine for the short axes exporters
scan (sequence positions, masks); ops/scan.py says what the attributes mean.  Without an
axis the data are flattened first (T_scan_flat).  Elements are cast to the result's dtype
before they are combined, as TVM accumulates in it.
"""

from __future__ import annotations

from .. import expr as te
from ....ops.scan import SCANS, scan_axis
from .registry import register_compute
from .transform import type_of, unravel


def _scan_rule(op: str, identity: int) -> None:
    @register_compute(op)
    def _(x: te.Tensor, attrs, out_type) -> te.Tensor:
        axis = scan_axis(type_of(x), attrs, op)
        if axis is None:
            x, axis = te.compute(out_type.shape, lambda i: x[unravel(i, x.shape)], "T_scan_flat"), 0
        n, dtype = x.shape[axis], out_type.dtype
        before = te.lt if attrs.exclusive else te.le
        combine = te.sum if op == "cumsum" else te.prod

        def body(*i):
            j = te.reduce_axis(n, "j")
            term = te.select(before(j, i[axis]), te.cast(x[i[:axis] + (j,) + i[axis + 1:]], dtype),
                             te.const(identity, dtype))
            return combine(term, [j])

        return te.compute(out_type.shape, body, f"T_{op}", tag=op)


for _op, (_, _identity) in SCANS.items():
    _scan_rule(_op, _identity)
