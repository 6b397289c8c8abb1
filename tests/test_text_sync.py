"""server/text_sync.py: incremental changes spliced give pygls's own text, edit after edit,
and the server's workspace makes spliced documents."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
from lsprotocol import types
from pygls.workspace import Workspace
from pygls.workspace.text_document import TextDocument

from relaylens.server.text_sync import SplicedDocument, SplicedWorkspace, _line_starts, use_spliced_documents

PIECES = ["a", "%1 = add(%0, %0);", "\n", "\n", "é", "😋", "  ", "\r\n", "\r", "\u2028"]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
plain = st.lists(st.sampled_from([p for p in PIECES if p not in ("\r\n", "\r", "\u2028")]), max_size=30).map("".join)


@st.composite
def changes(draw, pieces=texts):
    line = st.integers(0, 12)
    column = st.integers(0, 25)
    start = types.Position(draw(line), draw(column))
    end = types.Position(draw(line), draw(column)) if draw(st.booleans()) else \
        types.Position(start.line + draw(st.integers(0, 2)), draw(column))
    return types.TextDocumentContentChangePartial(range=types.Range(start, end), text=draw(pieces))


def _check(text, edits, full_at=None):
    ours = SplicedDocument("file:///t.relay", text, version=1)
    theirs = TextDocument("file:///t.relay", text, version=1)
    for i, change in enumerate(edits):
        if i == full_at:
            whole = types.TextDocumentContentChangeWholeDocument(text=text)
            ours.apply_change(whole)
            theirs.apply_change(whole)
        ours.apply_change(change)
        theirs.apply_change(change)
        assert ours.source == theirs.source, (i, change)
        if ours._starts is not None:
            assert ours._starts == _line_starts(ours.source)


@settings(max_examples=400, deadline=None)
@given(plain, st.lists(changes(plain), max_size=8), st.one_of(st.none(), st.integers(0, 7)))
def test_plain_texts_edit_as_pygls_does(text, edits, full_at):
    _check(text, edits, full_at)


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(changes(), max_size=8))
def test_any_line_breaks_edit_as_pygls_does(text, edits):
    _check(text, edits)


def test_a_long_document_keeps_its_line_starts_across_edits():
    text = "".join(f"  %{k} = add(%{k - 1}, %{k - 1});\n" for k in range(1, 2000))
    doc = SplicedDocument("file:///t.relay", text, version=1)
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(1000, 12), types.Position(1000, 13)), text="0")
    doc.apply_change(edit)
    starts = doc._starts
    assert starts is not None and starts == _line_starts(doc.source)
    doc.apply_change(types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(5, 0), types.Position(5, 0)), text="x\ny"))
    assert doc._starts == _line_starts(doc.source) and len(doc._starts) == len(starts) + 1


def test_the_workspace_makes_spliced_documents():
    workspace = Workspace(None)
    use_spliced_documents(workspace)
    assert isinstance(workspace, SplicedWorkspace)
    workspace.put_text_document(types.TextDocumentItem(uri="file:///t.relay", language_id="relay",
                                                       version=1, text="a\nb\n"))
    assert isinstance(workspace.get_text_document("file:///t.relay"), SplicedDocument)
