"""Model Explorer itself opens our graph JSON: `model-explorer out.json` (PyPI
ai-edge-model-explorer, the optional extra `relaylens[explorer]`) serves it, headless
chromium loads the page, and Model Explorer's JSON adapter reads the file in the browser;
its graph-info panel then counts our nodes and layers.  Skipped without the package or
chromium, and unless RELAYLENS_BROWSER_TESTS=1 (the browser takes a minute or more on a
busy machine)."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.graph.explorer_json import graph_collection
from relaylens.compiler.graph.model import module_graphs

pytest.importorskip("model_explorer")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="no chromium to load the page"),
              pytest.mark.skipif(os.environ.get("RELAYLENS_BROWSER_TESTS") != "1",
                                 reason="a browser run of a minute or more: set RELAYLENS_BROWSER_TESTS=1")]

TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* span=/stem/conv/Conv:0:0 */;
  %1 = nn.bias_add(%0, %b) /* span=/stem/conv/Conv:0:0 */;
  %2 = nn.relu(%1) /* span=/stem/relu/Relu:0:0 */;
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]) /* span=/head/pool/MaxPool:0:0 */;
  nn.batch_flatten(%3) /* span=/head/Flatten:0:0 */
}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unlimited_address_space() -> None:
    """conftest.py caps the tests' address space; a browser reserves far more than it uses."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _wait_until_served(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"model-explorer exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)  # polling a server that starts in another process
    pytest.fail(f"model-explorer did not serve {url} within {seconds:.0f} s")


def test_model_explorer_reads_our_graph(tmp_path: Path) -> None:
    result = compile(TEXT, "m.relay", stop_after="passes")
    graphs = module_graphs(result.snapshots[-1].module)  # after FuseOps: layers and fused groups
    assert graphs[0].fused_groups
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(graph_collection(graphs, "m.relay for model explorer")))
    port = _free_port()
    script = Path(sys.executable).parent / "model-explorer"
    proc = subprocess.Popen([str(script), str(path), "--no_open_in_browser", f"--port={port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://localhost:{port}/"
        _wait_until_served(base, proc)
        page = base + "?data=" + urllib.parse.quote(json.dumps({"models": [{"url": str(path)}]}))
        dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-dev-shm-usage",
                              f"--user-data-dir={tmp_path / 'chromium'}",  # its own profile: no lock to share
                              "--virtual-time-budget=8000", "--dump-dom", page],
                             capture_output=True, text=True, timeout=400, preexec_fn=_unlimited_address_space)
        dom, log = dom.stdout, dom.stderr
    finally:
        proc.kill()
        proc.wait(timeout=30)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", dom))
    assert "m.relay for model explorer" in text, (text[:2000], log[-2000:])
    count = re.search(r"op node count (\d+)", text)
    assert count is not None, text[:2000]
    assert int(count[1]) == len(graphs[0].nodes)
    layers = re.search(r"layer count (\d+)", text)
    namespaces = {"/".join(n.namespace[:d]) for n in graphs[0].nodes for d in range(1, len(n.namespace) + 1)}
    assert layers is not None and int(layers[1]) == len(namespaces)
