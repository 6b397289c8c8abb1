"""LLVM IR and assembly as a reader wants them, with Compiler Explorer's filters.

    View(text, lines, functions)
        lines      view line (1-based) -> Relay (line, column)
        functions  function name -> (first line, last line) in the view
    ir_view(text, nodebug=False)     LLVM IR; nodebug drops the debug information
    asm_view(text, nodebug=False)    assembly; nodebug drops directives and local labels

The debug information is read before it is dropped, so a view without it still maps each
line to the Relay expression it computes.  In the IR, `nodebug` removes the `!dbg !N`
attachments, the metadata lines (`!N = ...`, `!llvm.dbg.cu = ...`), debug records
(`#dbg_value(...)`) and calls and declarations of `llvm.dbg.*` intrinsics.  In assembly
the location of an instruction is the last `.loc FILE LINE COL` before it (a `.loc` with
line 0 has none); `nodebug` removes the assembler directives (lines starting with `.`
other than data: `.byte`, `.long`, `.quad`, `.zero`, ...), labels of the form `.Ltmp`
and `.Lfunc_begin` no branch targets, comments, and everything from the first
`.section .debug_*` on (the DWARF tables).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .llvm_map import function_ranges, line_locations


@dataclass(frozen=True, slots=True)
class View:
    text: str
    lines: dict[int, tuple[int, int]] = field(default_factory=dict)
    functions: dict[str, tuple[int, int]] = field(default_factory=dict)

    def function_at(self, line: int) -> str | None:
        for name, (first, last) in self.functions.items():
            if first <= line <= last:
                return name
        return None


_IR_DEBUG_LINE = re.compile(r"^\s*(!|#dbg_|declare\b.*@llvm\.dbg\.|(tail )?call void @llvm\.dbg\.)")
_IR_ATTACHMENT = re.compile(r"(,\s*| )!dbg !\d+")


def ir_view(text: str, nodebug: bool = False) -> View:
    if not nodebug:
        return View(text, line_locations(text), function_ranges(text))
    located = line_locations(text)
    kept: list[str] = []
    lines: dict[int, tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if _IR_DEBUG_LINE.match(line):
            continue
        kept.append(_IR_ATTACHMENT.sub("", line))
        if number in located:
            lines[len(kept)] = located[number]
    out = _squeeze_blank_lines("\n".join(kept))
    return View(out[0], {out[1][k]: v for k, v in lines.items() if k in out[1]}, function_ranges(out[0]))


def _squeeze_blank_lines(text: str) -> tuple[str, dict[int, int]]:
    """The text with runs of blank lines made one (dropped metadata leaves runs of them),
    and old line -> new line for the lines kept."""
    out: list[str] = []
    moved: dict[int, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
        moved[number] = len(out)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n", moved


_LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)\s+(\d+)")
_FUNCTION_TYPE = re.compile(r"^\s*\.type\s+([^,\s]+),\s*@function")
_LABEL = re.compile(r"^([^\s:#]+):")
_FUNC_END = re.compile(r"^\.Lfunc_end\d+:")
_DATA = re.compile(r"^\s*\.(byte|short|long|quad|zero|ascii|asciz|string|value|int|octa)\b")
_DROPPED_LABEL = re.compile(r"^\.L(tmp|func_begin|func_end)\d+:")


def asm_view(text: str, nodebug: bool = False) -> View:
    functions_named = {m[1] for m in map(_FUNCTION_TYPE.match, text.splitlines()) if m}
    kept: list[str] = []
    lines: dict[int, tuple[int, int]] = {}
    functions: dict[str, tuple[int, int]] = {}
    where: tuple[int, int] | None = None
    current: tuple[str, int] | None = None
    for line in text.splitlines():
        if nodebug and re.match(r"^\s*\.section\s+\.debug_", line):
            break
        loc = _LOC.match(line)
        if loc:
            where = (int(loc[1]), int(loc[2])) if int(loc[1]) > 0 else None
        label = _LABEL.match(line)
        if label and label[1] in functions_named:
            current, where = (label[1], len(kept) + 1), None
        if current is not None and _FUNC_END.match(line):
            functions[current[0]] = (current[1], len(kept))
            current = None
        if nodebug and _dropped(line):
            continue
        kept.append(line)
        if where is not None and line.startswith("\t") and not line.lstrip().startswith("."):
            lines[len(kept)] = where  # an instruction
    return View("\n".join(kept) + "\n", lines, functions)


def _dropped(line: str) -> bool:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return True
    if _DROPPED_LABEL.match(line):
        return True
    return stripped.startswith(".") and not _LABEL.match(line) and not _DATA.match(line)
