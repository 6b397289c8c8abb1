"""`// relaylens: ...` comment lines: what a file says about its own BYOC role (docs/byoc.md).

    // relaylens: --patterns mynpu_patterns.relay --target mynpu [--target-ops exp,nn.relu]
    // relaylens: pattern-table

The first, in a model, names the pattern table and the targets its editor builds
partition for, with the options and meanings of `relaylens build` (the path is relative
to the model's folder).  The second marks a file as a pattern table (table_check.py) when
nothing else in it says so.  A directive is a whole `//` comment line anywhere in the file;
the first of each kind counts.

    found = build_directive(text)     # a BuildDirective, or None when the file has none
    found.problems                    # [(start, end, message)]: what the line gets wrong
    is_table_directive(text)          # True when a line says `pattern-table`
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

DIRECTIVE = re.compile(r"^[ \t]*//[ \t]*relaylens:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
TABLE_WORD = "pattern-table"
OPTIONS = ("--patterns", "--target", "--target-ops")


@dataclass
class BuildDirective:
    start: int  # the directive's line, as character offsets into the text
    end: int
    patterns: str | None = None
    targets: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    problems: list[tuple[int, int, str]] = field(default_factory=list)


def _directives(text: str):
    if "relaylens:" not in text:  # the common case, without the regular expression
        return
    yield from DIRECTIVE.finditer(text)


def is_table_directive(text: str) -> bool:
    return any(m.group(1).split()[:1] == [TABLE_WORD] for m in _directives(text))


def build_directive(text: str) -> BuildDirective | None:
    """The first `// relaylens: --...` line, read; None when there is none."""
    for m in _directives(text):
        if m.group(1).startswith("--"):
            return _read(m.group(1), m.start(), m.end())
    return None


def _read(words: str, start: int, end: int) -> BuildDirective:
    found = BuildDirective(start, end)

    def problem(message: str) -> None:
        found.problems.append((start, end, f"relaylens directive: {message}"))

    try:
        items = shlex.split(words)
    except ValueError as err:
        problem(f"cannot read it ({err})")
        return found
    i = 0
    while i < len(items):
        option, value = items[i], None
        if "=" in option:
            option, value = option.split("=", 1)
        elif i + 1 < len(items) and not items[i + 1].startswith("--"):
            value = items[i + 1]
            i += 1
        i += 1
        if option not in OPTIONS:
            problem(f"unknown option {option} (known: {', '.join(OPTIONS)})")
        elif not value:
            problem(f"{option} needs a value")
        elif option == "--patterns":
            found.patterns = value
        elif option == "--target":
            found.targets = [t.strip() for t in value.split(",") if t.strip()]
        else:
            found.ops = [o.strip() for o in value.split(",") if o.strip()]
    if found.ops and not found.targets:
        problem("--target-ops needs --target (the target that takes them)")
    if not found.targets and not found.problems:
        problem("--target is missing: which external compiler takes the matches?")
    return found
