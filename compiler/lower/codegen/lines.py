"""An IRBuilder whose common instructions are made as their line of LLVM IR text.

llvmlite makes an instruction as an object (its name registered, its operands, flags and
metadata kept), and `str(module)` (or ir_text.py's `module_text`) prints it later from
those.  The code generator never looks at an instruction again once made, but for its
value's type and reference where later ones use it, so `TextBuilder` makes the kinds that
are most of a kernel (loads, stores, addresses, arithmetic, comparisons, selects, casts)
as a `Line`: the value's type and reference, and the instruction's text, written once, as
llvmlite would print it (ir_text.py's `_Printer` writes the operands).  Every other
instruction (branches, phis, calls, allocas, vector element moves) is llvmlite's, and
names still come from the function's scope in the same order, so the module's text is the
one llvmlite would print, byte for byte (tests/test_lower_ir_text.py builds every
instruction both ways; every kernel of ResNet-50, the GPT-2 block, MobileNet v2 and BERT,
99 in all, compared with the text before): the same LLVM input, so the same machine code
and cache entries.  ResNet-50's 29 kernels make 32,500 lines and 4,000 llvmlite
instructions, which leaves half the objects a worker collects (222,000 -> 109,000).
Generating and printing them took 3.26 -> 2.80 s (medians of 8 timings each, in two
processes a side alternated, load 4); cold ResNet-50 builds alternated with the base in
fresh processes, CPU paired 0.922 (6 rounds, load 6.7-7.3) and 0.963 (8 rounds, load
6-8.6).
"""

from __future__ import annotations

import llvmlite.ir as ir

from .ir_text import Line, _Printer

_CMP = {">": "gt", "<": "lt", "==": "eq", "!=": "ne", ">=": "ge", "<=": "le"}
_I1 = ir.IntType(1)


class TextBuilder(ir.IRBuilder):
    """`ir.IRBuilder` making the common instructions as `Line`s (the module doc)."""

    def __init__(self, block: ir.Block, printer: _Printer) -> None:
        super().__init__(block)
        self.printer = printer

    def _line(self, typ: ir.Type, name: str, body: str) -> Line:
        """`body`, an instruction's text after `%"name" = `, as a new value named from
        `name` as llvmlite names it (NameScope.deduplicate); its debug location is the
        builder's."""
        scope = self._block.scope
        used = scope._useset
        base = name
        while name in used:
            ident = scope._basenamemap[base] + 1
            scope._basenamemap[base] = ident
            name = f"{base}.{ident}"
        used.add(name)
        meta = self.debug_metadata  # llvmlite strips the space some instructions leave before it
        body = body.rstrip() if meta is None else f"{body}, !dbg {self.printer.md_ref(meta)}"
        if type(typ) is ir.VoidType:
            line = Line(typ, name, "", body)
        else:
            ref = f'%"{name}"' if "\\" not in name and '"' not in name else \
                '%"{}"'.format(name.replace("\\", "\\5c").replace('"', "\\22"))
            line = Line(typ, name, ref, f"{ref} = {body}")
        self._block.instructions.insert(self._anchor, line)
        self._anchor += 1
        return line

    # the spacing of each instruction is llvmlite's (ir_text.py's _Printer)

    def _arith(self, opname: str, lhs: ir.Value, rhs: ir.Value, name: str, flags) -> Line:
        typ = lhs.type
        if rhs.type is not typ and rhs.type != typ:
            raise ValueError(f"Operands must be the same type, got ({typ}, {rhs.type})")
        if flags:
            opname = " ".join([opname, *flags])
        p = self.printer
        return self._line(typ, name, f"{opname} {p.type(typ)} {p.ref(lhs)}, {p.ref(rhs)}")

    def add(self, lhs, rhs, name="", flags=()):
        return self._arith("add", lhs, rhs, name, flags)

    def sub(self, lhs, rhs, name="", flags=()):
        return self._arith("sub", lhs, rhs, name, flags)

    def mul(self, lhs, rhs, name="", flags=()):
        return self._arith("mul", lhs, rhs, name, flags)

    def fadd(self, lhs, rhs, name="", flags=()):
        return self._arith("fadd", lhs, rhs, name, flags)

    def fsub(self, lhs, rhs, name="", flags=()):
        return self._arith("fsub", lhs, rhs, name, flags)

    def fmul(self, lhs, rhs, name="", flags=()):
        return self._arith("fmul", lhs, rhs, name, flags)

    def fdiv(self, lhs, rhs, name="", flags=()):
        return self._arith("fdiv", lhs, rhs, name, flags)

    def and_(self, lhs, rhs, name="", flags=()):
        return self._arith("and", lhs, rhs, name, flags)

    def or_(self, lhs, rhs, name="", flags=()):
        return self._arith("or", lhs, rhs, name, flags)

    def xor(self, lhs, rhs, name="", flags=()):
        return self._arith("xor", lhs, rhs, name, flags)

    def shl(self, lhs, rhs, name="", flags=()):
        return self._arith("shl", lhs, rhs, name, flags)

    def ashr(self, lhs, rhs, name="", flags=()):
        return self._arith("ashr", lhs, rhs, name, flags)

    def load(self, ptr, name="", align=None, typ=None):
        if typ is None or not isinstance(ptr.type, ir.PointerType):
            return super().load(ptr, name, align, typ)
        p = self.printer
        align = "" if align is None else f", align {align:d}"
        return self._line(typ, name, f"load {p.type(typ)}, {p.typed_ref(ptr)}{align}")

    def store(self, value, ptr, align=None):
        if not (isinstance(ptr.type, ir.PointerType) and ptr.type.is_opaque):
            return super().store(value, ptr, align)
        p = self.printer
        align = "" if align is None else f", align {align:d}"
        return self._line(ir.VoidType(), "", f"store {p.typed_ref(value)}, {p.typed_ref(ptr)}{align}")

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if source_etype is None:
            return super().gep(ptr, indices, inbounds, name, source_etype)
        p = self.printer
        op = "getelementptr inbounds" if inbounds else "getelementptr"
        return self._line(ptr.type, name, f"{op} {p.type(source_etype)}, {p.typed_ref(ptr)}, "
                                          f"{', '.join([p.typed_ref(i) for i in indices])} ")

    def select(self, cond, lhs, rhs, name="", flags=()):
        p = self.printer
        return self._line(lhs.type, name, f"select {' '.join(flags)} {p.typed_ref(cond)}, {p.typed_ref(lhs)}, "
                                          f"{p.typed_ref(rhs)} ")

    def _compare(self, opname: str, op: str, lhs, rhs, name: str, flags) -> Line:
        typ = ir.VectorType(_I1, lhs.type.count) if isinstance(lhs.type, ir.VectorType) else _I1
        p = self.printer
        flags = "".join([" " + f for f in flags])
        return self._line(typ, name, f"{opname}{flags} {op} {p.typed_ref(lhs)}, {p.ref(rhs)} ")

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        op = _CMP[cmpop]
        return self._compare("icmp", op if cmpop in ("==", "!=") else "s" + op, lhs, rhs, name, ())

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        op = _CMP[cmpop]
        return self._compare("icmp", op if cmpop in ("==", "!=") else "u" + op, lhs, rhs, name, ())

    def fcmp_ordered(self, cmpop, lhs, rhs, name="", flags=()):
        return self._compare("fcmp", "o" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs, name, flags)

    def fcmp_unordered(self, cmpop, lhs, rhs, name="", flags=()):
        return self._compare("fcmp", "u" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs, name, flags)

    def _cast(self, opname: str, value, typ, name: str) -> Line:
        p = self.printer
        return self._line(typ, name, f"{opname} {p.typed_ref(value)} to {p.type(typ)} ")

    def trunc(self, value, typ, name=""):
        return self._cast("trunc", value, typ, name)

    def zext(self, value, typ, name=""):
        return self._cast("zext", value, typ, name)

    def sext(self, value, typ, name=""):
        return self._cast("sext", value, typ, name)

    def fptrunc(self, value, typ, name=""):
        return self._cast("fptrunc", value, typ, name)

    def fpext(self, value, typ, name=""):
        return self._cast("fpext", value, typ, name)

    def bitcast(self, value, typ, name=""):
        return self._cast("bitcast", value, typ, name)

    def fptosi(self, value, typ, name=""):
        return self._cast("fptosi", value, typ, name)

    def fptoui(self, value, typ, name=""):
        return self._cast("fptoui", value, typ, name)

    def sitofp(self, value, typ, name=""):
        return self._cast("sitofp", value, typ, name)

    def uitofp(self, value, typ, name=""):
        return self._cast("uitofp", value, typ, name)
