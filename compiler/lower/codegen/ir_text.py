"""A generated `llvmlite.ir.Module` as LLVM IR text: `str(module)`, the same text, sooner.

llvmlite prints an instruction through four or five calls and as many `str.format`s
(its name, each operand's type and name, its debug attachment), and a splat vector
constant lane by lane.  `module_text` prints the kinds of instruction that make most of a
kernel (ResNet-50's 29 kernels: 37,000 instructions, of them 6,600 loads, 5,700 address
computations, 4,700 stores, 13,000 arithmetic instructions, 3,300 selects, comparisons
and vector shuffles) with one f-string each, and a splat's lane once; every other
instruction, each function's head, the globals and the metadata are llvmlite's own text.
The text is llvmlite's byte for byte (tests/test_lower_ir_text.py compares them on every
kernel of the models it builds), odd spaces included: an address computation ends
`i64 %"x" , !dbg !12`, and an insertelement carries no debug location.  Printing
ResNet-50's 29 kernels took 0.5-0.8x llvmlite's time (3 rounds alternated in
one process, load 5-9).

Since then the code generator makes those instructions as `Line`s, their text written
when they are made (lines.py, with this printer's operand and type texts): ResNet-50's
kernels have 32,500 of them, and 4,000 llvmlite instructions (branches, phis, calls,
allocas, vector element moves), which `_Printer` prints as above.
"""

from __future__ import annotations

import llvmlite.ir as ir
from llvmlite.ir.instructions import (CastInstr, FCMPInstr, GEPInstr, ICMPInstr, InsertElement, Instruction, LoadInstr,
                                      PhiInstr, SelectInstr, ShuffleVector, StoreInstr)


def module_text(module: ir.Module) -> str:
    """`str(module)`, as `llvmlite.ir.Module.__repr__` lays it out."""
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', '']
    lines += [t.get_declaration() for t in module.get_identified_types().values()]
    printer = _Printer()
    lines += [printer.function(v) if isinstance(v, ir.Function) and v.blocks else str(v)
              for v in module.globals.values()]
    lines += module._get_metadata_lines()
    return "\n".join(lines)


class Line(ir.values.Value):
    """An instruction made as its text (lines.py): what later instructions use of it (`type`, the
    reference), and the line printed in its block."""

    __slots__ = ("type", "_name", "ref", "text")

    def __init__(self, typ: ir.Type, name: str, ref: str, text: str) -> None:
        self.type, self._name, self.ref, self.text = typ, name, ref, text

    @property
    def name(self) -> str:
        return self._name

    def get_reference(self) -> str:
        return self.ref

    def __str__(self) -> str:
        return self.text


_NAMED = {Instruction, LoadInstr, GEPInstr, CastInstr, SelectInstr, ICMPInstr, FCMPInstr, PhiInstr, InsertElement,
          ShuffleVector, ir.Argument}


class _Printer:
    def __init__(self) -> None:
        # each keyed by id: the object is kept beside its text, so that its id is not a
        # later object's (the code generator makes types and constants as it goes)
        self.metadata_refs: dict[int, tuple[ir.Value, str]] = {}  # id(debug location) -> "!N"
        self.type_texts: dict[int, tuple[ir.Type, str]] = {}  # id(type) -> "<8 x float>"
        self.int_refs: dict[tuple[int, int], tuple[ir.Type, str]] = {}  # (id(type), value) -> "42"
        self.kinds = {Instruction: self.arithmetic, LoadInstr: self.load, StoreInstr: self.store,
                      GEPInstr: self.address, SelectInstr: self.select, ICMPInstr: self.compare,
                      FCMPInstr: self.compare, InsertElement: self.insert, ShuffleVector: self.shuffle}

    def function(self, fn: ir.Function) -> str:
        buf: list[str] = []
        fn.descr_prototype(buf)
        buf.append("{\n")
        kinds = self.kinds
        for block in fn.blocks:
            buf.append(f"{block._format_name()}:\n")
            for instr in block.instructions:
                if type(instr) is Line:
                    buf.append(f"  {instr.text}\n")
                    continue
                kind = kinds.get(type(instr))
                buf.append(f"  {instr}\n" if kind is None else f"  {kind(instr).rstrip()}\n")
        buf.append("}\n")
        return "".join(buf)

    def ref(self, v: ir.Value) -> str:
        """`v.get_reference()`."""
        kind = type(v)
        if kind is Line:
            return v.ref
        if kind in _NAMED:
            name = v._name
            if "\\" not in name and '"' not in name:
                return f'%"{name}"'
        elif kind is ir.Constant:
            value = v.constant
            if type(value) is int:
                key = (id(v.type), value)
                known = self.int_refs.get(key)
                if known is None:
                    known = self.int_refs[key] = v.type, v.get_reference()
                return known[1]
            if isinstance(value, list) and isinstance(v.type, ir.VectorType):
                return self.vector(value)
        return v.get_reference()

    def vector(self, elements: list[ir.Constant]) -> str:
        """A vector constant's elements: a splat (one Python value on every lane, as
        lanes.py makes them) printed once."""
        first = elements[0]
        value, typ = first.constant, first.type
        if all(e.constant is value and e.type is typ for e in elements):
            one = self.typed_ref(first)
            return f"<{', '.join([one] * len(elements))}>"
        return f"<{', '.join([self.typed_ref(e) for e in elements])}>"

    def typed_ref(self, v: ir.Value) -> str:
        return f"{self.type(v.type)} {self.ref(v)}"

    def type(self, t: ir.Type) -> str:
        known = self.type_texts.get(id(t))
        if known is None:
            known = self.type_texts[id(t)] = t, str(t)
        return known[1]

    def metadata(self, instr: Instruction) -> str:
        """`_stringify_metadata(leading_comma=True)`."""
        if not instr.metadata:
            return ""
        text = ""
        for k, v in instr.metadata.items():
            text += f", !{k} {self.md_ref(v)}"
        return text

    def md_ref(self, v: ir.Value) -> str:
        known = self.metadata_refs.get(id(v))
        if known is None:
            known = self.metadata_refs[id(v)] = v, v.get_reference()
        return known[1]

    def named(self, instr: Instruction) -> str:
        return "" if isinstance(instr.type, ir.VoidType) else f"{self.ref(instr)} = "

    def arithmetic(self, instr: Instruction) -> str:
        opname = " ".join([instr.opname, *instr.flags]) if instr.flags else instr.opname
        operands = ", ".join([self.ref(op) for op in instr.operands])
        return f"{self.named(instr)}{opname} {self.type(instr.type)} {operands}{self.metadata(instr)}"

    def load(self, instr: LoadInstr) -> str:
        align = "" if instr.align is None else f", align {instr.align:d}"
        return (f"{self.named(instr)}load {self.type(instr.type)}, {self.typed_ref(instr.operands[0])}{align}"
                f"{self.metadata(instr)}")

    def store(self, instr: StoreInstr) -> str:
        value, ptr = instr.operands
        align = "" if instr.align is None else f", align {instr.align:d}"
        return f"store {self.typed_ref(value)}, {self.typed_ref(ptr)}{align}{self.metadata(instr)}"

    def address(self, instr: GEPInstr) -> str:
        op = "getelementptr inbounds" if instr.inbounds else "getelementptr"
        indices = ", ".join([self.typed_ref(i) for i in instr.indices])
        return (f"{self.named(instr)}{op} {self.type(instr.source_etype)}, {self.typed_ref(instr.pointer)}, "
                f"{indices} {self.metadata(instr)}")

    def select(self, instr: SelectInstr) -> str:
        return (f"{self.named(instr)}select {' '.join(instr.flags)} {self.typed_ref(instr.cond)}, "
                f"{self.typed_ref(instr.lhs)}, {self.typed_ref(instr.rhs)} {self.metadata(instr)}")

    def compare(self, instr: ICMPInstr | FCMPInstr) -> str:
        flags = "".join([" " + f for f in instr.flags])
        a, b = instr.operands
        return (f"{self.named(instr)}{instr.opname}{flags} {instr.op} {self.typed_ref(a)}, {self.ref(b)} "
                f"{self.metadata(instr)}")

    def insert(self, instr: InsertElement) -> str:  # llvmlite prints no debug location here
        return f"{self.named(instr)}insertelement {', '.join([self.typed_ref(op) for op in instr.operands])}"

    def shuffle(self, instr: ShuffleVector) -> str:
        operands = ", ".join([self.typed_ref(op) for op in instr.operands])
        return f"{self.named(instr)}shufflevector {operands} {self.metadata(instr)}"
