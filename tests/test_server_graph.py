"""`relaylens/graph`: the worker computes the graph of a kept build's snapshot, the server
answers the request with Model Explorer's JSON and each node's document range
(docs/lsp.md).  The worker alone first, then end to end over stdio with pytest-lsp; every
wait is for a notification or a response, never a sleep."""

from __future__ import annotations

import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from build_events import BuildEvents
from relaylens.server.slow import frames

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32]) {
  %0 = nn.dense(%x, %w) /* span=fc1/Gemm:0:0 */;
  %1 = nn.relu(%0) /* span=fc1/Relu:0:0 */;
  add(%1, %x) /* span=out/Add:0:0 */
}
"""
asyncio_module = pytest.mark.asyncio(loop_scope="module")


def _until(proc, kind: str) -> tuple:
    while (message := frames.read(proc.stdout))[0] != kind:
        pass
    return message


def test_the_worker_draws_the_snapshots_of_its_last_build() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "relaylens.server.slow.worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert frames.read(proc.stdout) == ("ready", proc.pid)
        frames.write(proc.stdin, ("graph", 5, "file:///g.relay", 1, None))  # nothing built yet
        assert _until(proc, "graph") == ("graph", 5, None, "the build worker keeps no build of version 1 of file:///g.relay")
        frames.write(proc.stdin, ("build", 1, "file:///g.relay", 1, TEXT, None))
        frames.write(proc.stdin, ("graph", 6, "file:///g.relay", 1, "FuseOps"))  # queued behind the build
        assert _until(proc, "done")[1] == 1
        _, request, doc, why = _until(proc, "graph")
        assert (request, why, doc.pass_name) == (6, None, "FuseOps")
        nodes = doc.collection["graphs"][0]["nodes"]
        dense = next(n for n in nodes if n["label"] == "nn.contrib_dense_pack")  # x86's AlterOpLayout
        assert "fused_nn_contrib_dense_pack" in dense["namespace"]
        start, end = doc.offsets["main"][dense["id"]]
        assert TEXT[start:end].startswith("nn.dense(%x, %w)")
        frames.write(proc.stdin, ("graph", 7, "file:///g.relay", 1, "NoSuchPass"))
        assert "no pass 'NoSuchPass' ran" in _until(proc, "graph")[3]
        frames.write(proc.stdin, ("graph", 8, "file:///g.relay", 2, None))  # a version it did not build
        assert _until(proc, "graph")[2] is None
        frames.write(proc.stdin, ("forget", "file:///g.relay"))
        frames.write(proc.stdin, ("build", 2, "file:///other.relay", 1, TEXT, None))
        frames.write(proc.stdin, ("graph", 9, "file:///g.relay", 1, None))  # forgotten with its document
        assert _until(proc, "graph")[2] is None
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0


# --- end to end ----------------------------------------------------------------------------

EVENTS = BuildEvents()
FINISHES = EVENTS.seen


async def finished(uri: str, version: int, timeout: float = 120) -> dict:
    return await EVENTS.of(uri, version, timeout=timeout)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "relaylens.server"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    EVENTS.listen(lsp_client)
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


def _get(result, name: str):
    return result[name] if isinstance(result, dict) else getattr(result, name)


@asyncio_module
async def test_relaylens_graph_answers_with_the_json_and_ranges(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-graph/g.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=TEXT)))
    assert (await finished(uri, 1))["state"] == "done"
    result = await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "after": "input"})
    assert (_get(result, "passName"), _get(result, "index"), _get(result, "version")) == ("input", 0, 1)
    graph = _get(result, "graph")
    nodes = _get(_get(graph, "graphs")[0], "nodes")
    by_label = {_get(n, "label"): n for n in nodes}
    assert _get(by_label["nn.dense"], "namespace") == "fc1"
    ranges = _get(_get(result, "ranges"), "main")
    dense = _get(ranges, _get(by_label["nn.dense"], "id"))
    start = _get(dense, "start")
    assert (_get(start, "line"), _get(start, "character")) == (2, TEXT.split("\n")[2].index("nn.dense"))
    fused = await client.protocol.send_request_async("relaylens/graph", {"uri": uri})
    assert _get(fused, "passName") == "InferType" and _get(fused, "index") > 0
    groups = _get(_get(_get(fused, "graph"), "graphs")[0], "groupNodeAttributes")
    values = groups.values() if isinstance(groups, dict) else groups._asdict().values()  # a namedtuple here
    assert any(_get(g, "kind") == "fused function" for g in values)


@asyncio_module
async def test_relaylens_graph_says_why_it_cannot(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-graph/g.relay"
    with pytest.raises(JsonRpcException, match="no pass 'Nope' ran"):
        await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "after": "Nope"})
    with pytest.raises(JsonRpcException, match="has no build"):
        await client.protocol.send_request_async("relaylens/graph", {"uri": "file:///tmp/relaylens-graph/none.relay"})
    with pytest.raises(JsonRpcException, match="`after` is a pass name"):
        await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "after": [1]})


@asyncio_module
async def test_relaylens_graph_with_layout_and_the_snapshot_before(client: LanguageClient) -> None:
    uri = "file:///tmp/relaylens-graph/g.relay"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="relay", version=1, text=TEXT)))
    await finished(uri, 1)
    plain = await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "after": "FuseOps"})
    assert not hasattr(plain, "layout") and not hasattr(plain, "before")  # only when asked
    result = await client.protocol.send_request_async(
        "relaylens/graph", {"uri": uri, "after": "FuseOps", "layout": True, "compare": True})
    nodes = _get(_get(_get(result, "graph"), "graphs")[0], "nodes")
    ids = {_get(n, "id") for n in nodes}
    placed = _get(_get(_get(result, "layout"), "main"), "nodes")
    placed = placed if isinstance(placed, dict) else placed._asdict()  # pytest-lsp renames `%x` in a namedtuple
    assert len(placed) == len(ids) and {i for i in ids if i.startswith("n")} <= set(placed)
    assert all(len(box) == 4 for box in placed.values())
    before = _get(result, "before")
    assert _get(before, "index") == _get(result, "index") - 1
    before_ids = {_get(n, "id") for n in _get(_get(_get(before, "graph"), "graphs")[0], "nodes")}
    assert _get(_get(before, "layout"), "main")
    entries = _get(_get(result, "mapping"), "main")
    dense = ("nn.dense", "nn.contrib_dense_pack")  # AlterOpLayout packs it, as TVM's x86 strategy does
    dense_before = next(_get(n, "id") for n in _get(_get(_get(before, "graph"), "graphs")[0], "nodes")
                        if _get(n, "label") in dense)
    dense_after = next(_get(n, "id") for n in nodes if _get(n, "label") in dense)
    # FuseOps keeps the call; the weight's layout_transform carries the dense's range (it runs
    # for that dense: layout_rewrite.input_span), so the two map together, on both sides
    kept = next(e for e in entries if dense_after in e[1])
    assert dense_before in kept[0] and len(kept[0]) == len(kept[1]) == 2, entries
    assert all(set(left) <= before_ids and set(right) <= ids for left, right in entries)
    first = await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "after": 0, "compare": True})
    assert _get(first, "before") is None
    with pytest.raises(JsonRpcException, match="`layout` is true or false"):
        await client.protocol.send_request_async("relaylens/graph", {"uri": uri, "layout": "yes"})
