"""What to tell a user whose node needs a value that depends on a dimension not fixed.

PyTorch exports `x.view(x.size(0), -1)` with a dynamic batch as Shape → Slice → Concat →
Reshape: the new shape is a value computed at run time from the input's unknown batch.
The importer needs such values before run time (Relay's reshape, expand and the like take
them as attributes), so the node is refused; the way on is to fix the dimension with
`--shape`.  This module finds the graph inputs the needed tensor is computed from whose
dimensions are not all known, and words that advice:

    it depends on graph input 'pixel_values', whose dimension 0 ('batch_size') is not
    fixed: give its shape, e.g. --shape pixel_values=1,3,32,32

The walk goes from the tensor back through the nodes that produce it (never past an
initializer) to graph inputs; it runs only when such an error is raised.
"""

from __future__ import annotations

from typing import Mapping

from onnx import GraphProto

from ...ir.types import ANY, TensorType


def unfixed_inputs_hint(graph: GraphProto, tensor: str, types: Mapping[str, TensorType]) -> str:
    """`; it depends on graph input ...` for the graph inputs (name → their type in @main)
    that `tensor` is computed from and that have a dimension not fixed; "" when none."""
    producer = {out: node for node in graph.node for out in node.output if out}
    seen: set[str] = set()
    found: list[str] = []
    todo = [tensor]
    while todo:
        name = todo.pop()
        if name in seen or not name:
            continue
        seen.add(name)
        if name in types:
            found.append(name)
        elif name in producer:
            todo.extend(producer[name].input)
    declared = {info.name: info for info in graph.input}
    parts = []
    for name in sorted(found, key=list(types).index):
        dims = types[name].shape
        unknown = [k for k, d in enumerate(dims) if d is ANY]
        if not unknown:
            continue
        proto = declared[name].type.tensor_type.shape.dim if name in declared else ()
        which = ", ".join(f"{k} ('{proto[k].dim_param}')" if k < len(proto) and proto[k].dim_param else str(k)
                          for k in unknown)
        example = ",".join("1" if d is ANY else str(d) for d in dims)
        noun = "dimension" if len(unknown) == 1 else "dimensions"
        verb = "is" if len(unknown) == 1 else "are"
        parts.append(f"graph input '{name}', whose {noun} {which} {verb} not fixed: give its shape, "
                     f"e.g. --shape {name}={example}")
    return f"; it depends on {'; and on '.join(parts)}" if parts else ""
