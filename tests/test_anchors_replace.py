"""Anchors.replace (compiler/ir/anchors.py): a re-read statement's new region takes the
old one's place, the regions after it move by the change in length, and `piece_at` finds
the new regions whether its table of starts was built before the edit or not."""

from relaylens.compiler.ir.anchors import Anchors, Piece

BOUNDS = [0, 10, 20, 30, 40]


def _fresh(looked_up: bool) -> Anchors:
    anchors = Anchors(list(BOUNDS), 50, None)
    if looked_up:
        anchors.piece_at(0)  # the table of starts is built (or kept from the bounds)
    else:
        anchors._starts = None  # as after an edit that left it to be rebuilt
    return anchors


def _regions(anchors: Anchors) -> list[tuple[int, int]]:
    return [(p.base, p.limit) for p in anchors.pieces]


def test_same_length_edit_moves_nothing_and_finds_the_new_region():
    for looked_up in (True, False):
        anchors = _fresh(looked_up)
        before = _regions(anchors)
        new = Piece(20, 30)
        anchors.replace(2, new, 0)
        assert _regions(anchors) == before
        assert anchors.piece_at(20) is new and anchors.piece_at(29) is new
        assert anchors.index_of(25) == 2
        assert anchors.piece_at(30) is anchors.pieces[3]


def test_longer_and_shorter_edits_move_the_regions_after():
    for looked_up in (True, False):
        for delta in (3, -4):
            anchors = _fresh(looked_up)
            new = Piece(10, 20 + delta)
            anchors.replace(1, new, delta)
            assert _regions(anchors) == [(0, 10), (10, 20 + delta), (20 + delta, 30 + delta),
                                         (30 + delta, 40 + delta), (40 + delta, 1 << 62)]
            assert anchors.piece_at(10) is new
            for offset in range(0, 60):
                expected = max(i for i, p in enumerate(anchors.pieces) if p.base <= offset)
                assert anchors.index_of(offset) == expected, (delta, offset)


def test_replacing_the_last_region_keeps_its_open_end():
    anchors = _fresh(True)
    new = Piece(40, 1 << 62)
    anchors.replace(4, new, 2)
    assert _regions(anchors)[-1] == (40, 1 << 62)
    assert anchors.piece_at(1000) is new
