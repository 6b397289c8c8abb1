"""Read LLVM IR text (as generated or as optimised) back to the Relay source, and re-point it.

`function_ranges` gives each defined function's lines; `line_locations` gives, for each
instruction line with a `!dbg !N` attachment, the Relay (line, column) of the
`!N = !DILocation(...)` it names.  Lines are 1-based.  `relocate` moves the debug
information of a kernel's texts to where a structurally equal function sits (the compile
cache reuses its machine code there).

An instruction inlined from another function has a location with `inlinedAt:` pointing at
the call site.  Every function of our modules maps into the same Relay file, and the
instruction's own location is the expression it computes (the call site is only the
parallel loop that outlined it), so the instruction's own location is taken; the chain
is followed outwards only past locations on line 0 (code without a source location).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping

_DEFINE = re.compile(r'^define\b[^@]*@("(?:[^"\\]|\\.)*"|[-$._A-Za-z0-9]+)\s*\(')
_LOCATION = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!DILocation\((.*)\)\s*$")
_FIELD = re.compile(r"\b(line|column|inlinedAt):\s*(!?\d+)")
_DBG = re.compile(r"!dbg !(\d+)")
_MOVABLE = re.compile(r"\b(line|column): (\d+)")
_SUBPROGRAM = re.compile(r'^!\d+\s*=\s*(?:distinct\s+)?!DISubprogram\(.*\bname: "((?:[^"\\]|\\.)*)"')
_SUBPROGRAM_LINES = re.compile(r"\b(line|scopeLine): (\d+)")


def function_ranges(text: str) -> dict[str, tuple[int, int]]:
    """Each defined function's (first line, last line): its `define` line to its `}`."""
    ranges: dict[str, tuple[int, int]] = {}
    name, first = None, 0
    for number, line in enumerate(text.splitlines(), start=1):
        if name is None:
            m = _DEFINE.match(line)
            if m:
                name, first = m.group(1), number
                if name.startswith('"'):
                    name = name[1:-1]
                if line.rstrip().endswith("}"):  # a one-line body
                    ranges[name], name = (first, number), None
        elif line.startswith("}"):
            ranges[name], name = (first, number), None
    return ranges


def _locations(text: str) -> dict[int, tuple[int, int, int | None]]:
    """`!N` → (line, column, inlinedAt N or None) for every DILocation."""
    table: dict[int, tuple[int, int, int | None]] = {}
    for line in text.splitlines():
        m = _LOCATION.match(line)
        if not m:
            continue
        fields = dict(_FIELD.findall(m.group(2)))
        inlined = fields.get("inlinedAt")
        table[int(m.group(1))] = (int(fields.get("line", 0)), int(fields.get("column", 0)),
                                  int(inlined[1:]) if inlined else None)
    return table


class LineTable(Mapping[int, tuple[int, int]]):
    """A read-only `{IR line: (Relay line, column)}` kept in three arrays of machine
    integers, sorted by IR line (12 bytes an entry: the dict it replaces took 130, 9 MB
    for ResNet-50's module, held by the language server for each build it keeps)."""

    __slots__ = ("_keys", "_lines", "_columns")

    def __init__(self, items: Mapping[int, tuple[int, int]] | None = None) -> None:
        pairs = sorted((items or {}).items())
        self._keys = array("i", [k for k, _ in pairs])  # from lists: allocated to size
        self._lines = array("i", [v[0] for _, v in pairs])
        self._columns = array("i", [v[1] for _, v in pairs])

    def __getitem__(self, key: int) -> tuple[int, int]:
        i = bisect_left(self._keys, key)
        if i == len(self._keys) or self._keys[i] != key:
            raise KeyError(key)
        return self._lines[i], self._columns[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"LineTable({dict(self)!r})"


def line_locations(text: str) -> LineTable:
    """IR line → Relay (line, column), for every line whose `!dbg` is a DILocation with a
    source line (line 0, "no source", is left out)."""
    table = _locations(text)

    def resolve(n: int) -> tuple[int, int] | None:
        seen = set()
        while n in table and n not in seen:
            seen.add(n)
            line, col, outer = table[n]
            if line > 0:
                return line, col
            if outer is None:
                return None
            n = outer
        return None

    result: dict[int, tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        m = _DBG.search(line)
        if m:
            where = resolve(int(m.group(1)))
            if where is not None:
                result[number] = where
    return LineTable(result)


def relocate(texts: list[str], moved: Mapping[tuple[int, int], tuple[int, int]]) -> list[str]:
    """The texts of one kernel (as generated first, then optimised) with their debug
    information moved: every DILocation at a Relay (line, column) of `moved` at its new
    place, and every DISubprogram at the new line of its function's own location, the
    location of the first instruction of that function in the generated text (the code
    generator puts a function's subprogram on its location's line: the fused function's,
    or the parallel loop's for an outlined body)."""
    lines_by_name: dict[str, int] = {}
    table = _locations(texts[0])
    name = None
    for line in texts[0].splitlines():
        m = _DEFINE.match(line)
        if m:
            name = m.group(1)[1:-1] if m.group(1).startswith('"') else m.group(1)
            continue
        dbg = _DBG.search(line) if name is not None else None
        if dbg is not None:
            line_col = table.get(int(dbg.group(1)), (0, 0, None))[:2]
            if line_col in moved:
                lines_by_name[name] = moved[line_col][0]
            name = None
    return [_relocated(text, moved, lines_by_name) for text in texts]


def _relocated(text: str, moved: Mapping[tuple[int, int], tuple[int, int]], lines_by_name: dict[str, int]) -> str:
    out = []
    for line in text.split("\n"):
        if _LOCATION.match(line):
            fields = {k: int(v) for k, v in _MOVABLE.findall(line)}
            target = moved.get((fields.get("line", 0), fields.get("column", 0)))
            if target is not None:
                new = {"line": target[0], "column": target[1]}
                line = _MOVABLE.sub(lambda m: f"{m[1]}: {new[m[1]]}", line)
        else:
            sub = _SUBPROGRAM.match(line)
            if sub is not None and sub.group(1) in lines_by_name:
                new_line = lines_by_name[sub.group(1)]
                line = _SUBPROGRAM_LINES.sub(lambda m: f"{m[1]}: {new_line}", line)
        out.append(line)
    return "\n".join(out)


_DIFILE = re.compile(r'!DIFile\(filename: "((?:[^"\\]|\\.)*)", directory: "((?:[^"\\]|\\.)*)"')


def source_file(text: str) -> tuple[str, str] | None:
    """(filename, directory) of the source the IR's debug information names (its first
    DIFile: the Relay file the module was built from)."""
    m = _DIFILE.search(text)
    return (m.group(1), m.group(2)) if m else None


_DIFILE_ANY = re.compile(r"!DIFile\([^)]*\)")  # fields in either order: llvmlite sorts them, LLVM does not
_DIFILE_FIELD = re.compile(r'\b(filename|directory): "(?:[^"\\]|\\.)*"')


def refile(text: str, filename: str, directory: str) -> str:
    """`text` with every DIFile naming `filename` in `directory` (a kernel cached from a
    build of another file, or of the same file under another name)."""
    fields = {"filename": _escaped(filename), "directory": _escaped(directory)}
    return _DIFILE_ANY.sub(lambda m: _DIFILE_FIELD.sub(lambda f: f'{f[1]}: "{fields[f[1]]}"', m[0]), text)


def _escaped(text: str) -> str:
    """A metadata string's contents as LLVM prints them: printable ASCII but `"` and `\\`
    as is, every other byte of the UTF-8 as `\\XX`."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}"
                   for b in text.encode("utf-8"))
