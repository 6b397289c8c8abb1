"""Syntax-level facts about one analysis, for the editing features, computed once.

`Syntax(result)` hangs off an `Analysis` (`analysis.syntax`); each fact is computed on
first use and kept, so every request on that version reads it:

* `tokens`: the semantic tokens, as `(start, end, type, modifiers)` offsets (tokens.py),
  and `ops_in_text`, the operator names the text uses;
* `scopes`: where each `%` local is visible, and the locals, graph bindings and type
  variables at an offset (scopes.py);
* `folds`: the folding ranges, as offsets (folds.py).

What works on raw text that may not parse is elsewhere: the cursor context in cursor.py,
offsets across an edit in text_edits.py.
"""

from __future__ import annotations

from functools import cached_property

from ..compiler.parser import ParseResult
from .folds import folds
from .scopes import Scopes
from .tokens import semantic_tokens


class Syntax:
    def __init__(self, result: ParseResult) -> None:
        self.result = result

    @cached_property
    def scopes(self) -> Scopes:
        return Scopes(self.result)

    @cached_property
    def _tokens(self) -> tuple[list[tuple[int, int, int, int]], set[str]]:
        return semantic_tokens(self.result, self.scopes.params)

    @property
    def tokens(self) -> list[tuple[int, int, int, int]]:
        return self._tokens[0]

    @property
    def ops_in_text(self) -> set[str]:
        """The operator names the text uses (as the lexer classified them)."""
        return self._tokens[1]

    @cached_property
    def folds(self) -> list[tuple[int, int, str | None]]:
        return folds(self.result)
