"""What an edit of one statement re-reads of the scan (compiler/parser/scan.py `rescan`)
and of the `ty=` comments (compiler/parser/result.py `annotation_ends` over a range)."""

from __future__ import annotations

from relaylens.compiler.ir.span import Source
from relaylens.compiler.parser.result import annotation_ends
from relaylens.compiler.parser.scan import rescan, scan


def printed(n: int) -> str:
    lines = ['#[version = "0.0.5"]', "def @main(%x: Tensor[(16), float32]) {",
             "  %0 = add(%x, %x) /* ty=Tensor[(16), float32] */;"]
    lines += [f"  %{k} = add(%{k - 1}, %{k - 1}) /* ty=Tensor[(16), float32] */;" for k in range(1, n)]
    return "\n".join(lines + [f"  %{n - 1}", "}"]) + "\n"


def _edit(text: str, old: str, new: str):
    start = text.index(old)
    edited = text[:start] + new + text[start + len(old):]
    return edited, start, start + len(old), start + len(new)


def _comments(s):
    return [(c.start, c.end, c.body, c.block) for c in s.comments]


def test_rescan_gives_the_scan_of_the_edited_text():
    text = printed(40)
    old = scan(Source("t", text))
    for new in ("%20 = add(%10, %19)", "%20 = add(%191, %19)", "%20 = add(%1, %19)"):
        edited, start, old_stop, new_stop = _edit(text, "%20 = add(%19, %19)", new)
        again = rescan(old, edited, start, old_stop, new_stop)
        fresh = scan(Source("t", edited))
        assert again.code == fresh.code and _comments(again) == _comments(fresh)
        assert [(i.keyword, i.start, i.end) for i in again.items] == [(i.keyword, i.start, i.end) for i in fresh.items]
        if len(new) == len("%20 = add(%19, %19)"):  # same length: the comments are kept, not made again
            assert all(a is b for a, b in zip(again.comments, old.comments))


def test_annotation_ends_over_a_range_are_those_of_the_whole_text_in_it():
    text = printed(30)
    scanned = scan(Source("t", text))
    whole = annotation_ends(scanned)
    start = text.index("  %12 = ")
    end = text.index(";", start)
    part = annotation_ends(scanned, start, end)
    assert part and part == {k: v for k, v in whole.items() if start <= k <= end}
    assert annotation_ends(scanned, 0, None) == whole
