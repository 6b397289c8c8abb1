"""The printer's output before it is text: a tree of token lists, and scopes of lines.

Printing an expression returns *tokens*: a string, or a list of tokens, so a printed
expression is placed inside a larger one without copying it.  `Open(node)` and
`Close(node)` mark where a node's text starts and ends; `render` joins the tree into one
string (with an explicit stack, however deep the tree) and turns the marks into offsets.

A `Scope` is a block being printed at one depth: the `%N = ...;` and `let` lines emitted so
far, then its value (the tail).  Every line of a scope starts with a newline and the
scope's indentation, two spaces per level, joined to the line's first string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Tokens = Any  # str | Open | Close | list[Tokens]


@dataclass(slots=True, eq=False)
class Open:
    node: Any


@dataclass(slots=True, eq=False)
class Close:
    node: Any


def newline(depth: int) -> str:
    return "\n" + "  " * depth


@dataclass(slots=True, eq=False)
class Scope:
    depth: int
    lines: list = field(default_factory=list)  # tokens; a line's first string starts "\n  "
    prelude: list = field(default_factory=list)  # the `free_var` lines, printed first

    def line(self, first: str, *tokens: Tokens) -> None:
        self.lines.append(newline(self.depth) + first)
        self.lines.extend(tokens)

    def declare(self, first: str, *tokens: Tokens) -> None:
        self.prelude.append(newline(self.depth) + first)
        self.prelude.extend(tokens)

    def close(self, tail: Tokens) -> list:
        """The scope's lines and then its tail on a line of its own (the first token
        starts with the first line's newline)."""
        return [*self.prelude, *self.lines, newline(self.depth), tail]


def render(tokens: Tokens) -> tuple[str, dict[Any, tuple[int, int]]]:
    """The text of a token tree, and [start, end) of each marked node (its first marks)."""
    out: list[str] = []
    starts: list[int] = []
    where: dict[Any, tuple[int, int]] = {}
    pos = 0
    stack = [iter(tokens if isinstance(tokens, list) else [tokens])]
    while stack:
        for item in stack[-1]:
            kind = type(item)
            if kind is str:
                out.append(item)
                pos += len(item)
            elif kind is list:
                stack.append(iter(item))
                break
            elif kind is Open:
                starts.append(pos)
            else:
                start = starts.pop()
                if item.node not in where:
                    where[item.node] = (start, pos)
        else:
            stack.pop()
    return "".join(out), where
