"""The scanner's event search (compiler/parser/scan.py `_EVENT`): its keyword branches
put the look behind after the keyword (so `re` skips to the next candidate character);
it must find exactly what the plain form, with the look behind in front, finds."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from relaylens.compiler.parser import scan

# The definition: a comment's or a string's start, `#`, or def / type / extern with no
# [%@.\w/] before it and no [\w/] after it.
PLAIN = re.compile(r'/\*|//|"|#|(?<![%@.\w/])(?:def|type|extern)(?![\w/])')

PIECES = ["def", "define", "type", "types", "extern", "/*", "*/", "//", '"', "#", " ", "\n", "%", "@",
          ".", "/", "x", "_", "1", "d", "e", "f", "t", "(", "é"]


def events(pattern: re.Pattern, text: str, start: int, end: int) -> list[tuple[int, str]]:
    found, pos = [], start
    while (m := pattern.search(text, pos, end)) is not None:
        found.append((m.start(), m.group()))
        pos = m.end()
    return found


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.data())
def test_the_event_search_finds_what_the_plain_pattern_finds(pieces: list[str], data) -> None:
    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert events(scan._EVENT, text, start, end) == events(PLAIN, text, start, end)
