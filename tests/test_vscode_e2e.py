"""The VS Code extension end to end, in a real VS Code (code-server) driven in Debian's
chromium by playwright-core (vscode-client/e2e/scenario.js).

Scenario, on a corpus model: it opens and builds (status bar); hover on an operator shows
its type and its provenance; the `ƒ <fused function>` code lens opens the module's LLVM IR;
go to definition on an LLVM IR line returns to the Relay line its debug location names;
more virtual documents (a schedule, Show LLVM IR, lenses, F12 back and forth) leave exactly
one language server and at most one build worker (it exits when idle) under code-server and
no duplicated lens; breaking
a line shows an error squiggle and the status bar counts as many errors as `relaylens check`
finds in the same text (a second server would double them); undone, a binding written without
`let` (`%y = ...`) has an error whose hover says so and a quick fix (Ctrl+.) that inserts
`let `, after which the model builds.  Before that, the Graph view
(step graph-view): a click on a node selects its Relay line, the cursor highlights its node,
FuseOps before/after maps the nodes, and a reload keeps the view.

vscode-client/scripts/setup-e2e.sh installs chromium (apt), Node 24 and code-server (npm,
cached in ~/.cache/relaylens); the test skips only when chromium cannot be installed.
Screenshots, result.json and code-server's log go to vscode-client/test-results/e2e/.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS
from relaylens.compiler.lower.codegen.llvm_map import function_ranges, line_locations

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "vscode-client"
ARTIFACTS = CLIENT / "test-results" / "e2e"
MODEL = "084.relay"  # depthwise conv + pointwise conv + relus: two fused functions
CHROMIUM_MISSING = 3  # setup-e2e.sh's exit status when chromium cannot be installed

pytestmark = pytest.mark.slow


def unlimited_address_space() -> None:
    """Lift conftest's address-space cap in children: V8 and chromium reserve far more than
    they use."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def run(*command: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=CLIENT, capture_output=True, text=True,
                          preexec_fn=unlimited_address_space, **kwargs)


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: code-server and playwright-core cannot be installed")
    setup = run("scripts/setup-e2e.sh", timeout=1800)
    if setup.returncode == CHROMIUM_MISSING:
        pytest.skip(f"chromium cannot be installed here: {setup.stderr.strip()}")
    assert setup.returncode == 0, f"setup-e2e.sh failed:\n{setup.stderr[-4000:]}"
    found = dict(line.split("=", 1) for line in setup.stdout.splitlines() if "=" in line)
    vsix = run("scripts/vsix.sh", timeout=900, env={**os.environ, "PYTHON": sys.executable})
    assert vsix.returncode == 0, f"vsix.sh failed:\n{vsix.stdout[-2000:]}\n{vsix.stderr[-2000:]}"
    found["VSIX"] = vsix.stdout.strip().splitlines()[-1]
    return found


def first_located_line(model: Path) -> tuple[int, int]:
    """(module.ll line, Relay line), both 1-based: the first line of the first fused function
    whose debug location names a Relay line, in the IR that `relaylens build` emits."""
    ir = subprocess.run([str(Path(sys.executable).with_name("relaylens")), "build", str(model), "--emit", "llvm"],
                        capture_output=True, text=True, check=True).stdout
    first, last = next(r for name, r in function_ranges(ir).items() if "fused" in name)
    located = line_locations(ir)
    line = next(n for n in range(first, last + 1) if n in located)
    return line, located[line][0]


def define_lines(model: Path) -> dict[str, int]:
    """Each function's 1-based `define` line in the IR that `relaylens build` emits."""
    ir = subprocess.run([str(Path(sys.executable).with_name("relaylens")), "build", str(model), "--emit", "llvm"],
                        capture_output=True, text=True, check=True).stdout
    return {name: first for name, (first, _) in function_ranges(ir).items()}


def error_count(text: str, tmp_path: Path) -> int:
    """How many errors `relaylens check` reports in `text`."""
    broken = tmp_path / "broken.relay"
    broken.write_text(text)
    check = subprocess.run([str(Path(sys.executable).with_name("relaylens")), "check", str(broken)],
                           capture_output=True, text=True)
    return sum(1 for line in check.stderr.splitlines() if ": error: " in line)


BYOC_MODEL = (ROOT / "examples" / "byoc" / "mynpu_model.relay").read_text()  # names its table in a comment


def byoc_workspace(workspace: Path) -> dict[str, str]:
    """The BYOC step's files (docs/byoc.md): a model that names its pattern table, its weights
    (so the convolution's are constants, as the table's Constants= asks) and the table."""
    import numpy as np

    model = workspace / "byoc_model.relay"
    model.write_text(BYOC_MODEL)
    np.savez(workspace / "byoc_model.npz", w=np.ones((4, 3, 3, 3), "float32"), b=np.ones(4, "float32"))
    table = workspace / "mynpu_patterns.relay"
    shutil.copy(ROOT / "examples" / "byoc" / "mynpu_patterns.relay", table)
    line = next(i for i, text in enumerate(BYOC_MODEL.splitlines(), 1) if "nn.bias_add(" in text)
    column = BYOC_MODEL.splitlines()[line - 1].index("nn.bias_add(") + 4
    return {"BYOC_MODEL": str(model), "BYOC_TABLE": str(table), "BYOC_HOVER_LINE": str(line),
            "BYOC_HOVER_COLUMN": str(column)}


def test_the_extension_in_code_server(tools, tmp_path):
    if not (CORPUS / MODEL).is_file():
        pytest.skip(f"no corpus at {CORPUS}")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = workspace / MODEL
    text = (CORPUS / MODEL).read_text()
    model.write_text(text)
    lines = text.splitlines()
    hover_line = next(i for i, line in enumerate(lines, 1) if "nn.conv2d(" in line)
    result_line = next(i for i in range(len(lines), 0, -1) if lines[i - 1].strip() not in ("", "}"))  # `nn.relu(%4)`
    llvm_line, relay_line = first_located_line(model)
    defines = define_lines(model)  # before the scenario: its last step breaks the file
    byoc = byoc_workspace(workspace)
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    env = {**byoc, **os.environ, **tools, "PYTHON": sys.executable, "WORKSPACE": str(workspace), "MODEL": str(model),
           "ARTIFACTS": str(ARTIFACTS), "HOVER_LINE": str(hover_line),
           "HOVER_COLUMN": str(lines[hover_line - 1].index("nn.conv2d(") + len("nn.con")),
           "BROKEN_LINE": str(hover_line), "LLVM_LINE": str(llvm_line),
           "RESULT_LINE": str(result_line), "RESULT_COLUMN": str(len(lines[result_line - 1]) - len(lines[result_line - 1].lstrip()))}
    try:
        scenario = run("node", "e2e/scenario.js", env=env, timeout=600)
    except subprocess.TimeoutExpired:  # the steps done so far, written after each one
        partial = ARTIFACTS / "result.json"
        pytest.fail("the scenario ran out of time after:\n" + (partial.read_text()[:6000] if partial.is_file() else "no step"))
    result = json.loads((ARTIFACTS / "result.json").read_text())
    report = json.dumps(result, indent=2)[:6000] + "\n" + scenario.stderr[-3000:]
    steps = result["steps"]
    assert list(steps) == ["open-and-build", "hover", "hover-link-opens-llvm-ir", "code-lens-opens-llvm-ir", "definition-in-llvm-ir",
                           "one-server-many-documents", "optimised-ir-and-assembly", "schedule-lens",
                           "pass-diff-without-renumbering", "profile", "profile-view", "graph-view", "check-numerics",
                           "byoc", "broken-line-diagnostic", "missing-let-quick-fix"], report
    assert all(step["ok"] for step in steps.values()), report
    assert result["relayLineAfterDefinition"] == relay_line, report
    assert result["hoverLinkLine"] == defines[re.search(r"tvmgen_default_fused_\w+", result["hover"])[0]], report
    assert result["servers"]["server"] == 1 and result["servers"]["worker"] <= 1, report  # the worker exits when idle
    broken = lines[:hover_line - 1] + [lines[hover_line - 1] + " )"] + lines[hover_line:]
    assert result["errorsInStatus"] == error_count("\n".join(broken) + "\n", tmp_path), report
    assert "without 'let'" in result["missingLetMessage"], report
    # the row as shown: the inlay hint of %y's type (`: (1, 256, 128, 128) f32`) is back once it builds
    assert re.fullmatch(rf"let %y(: [^=]+)? = {re.escape(lines[result_line - 1].strip())};", result["missingLetFixed"]), report
    assert scenario.returncode == 0, report
    assert sorted(p.name for p in ARTIFACTS.glob("*.png"))[:1] == ["01-open-and-build.png"]
    assert result["byocLenses"] == ["mynpu · 3 ops · conv2d_bias_relu", "mynpu · 2 ops · add_relu"], report


def test_zero_configuration_in_code_server(tools, tmp_path):
    """A new user: no interpreter setting and no Python on the PATH that has relaylens.
    Opening a model offers to create a private environment; one click installs the wheel the
    .vsix carries (and its dependencies) there, and the model builds."""
    if not (CORPUS / MODEL).is_file():
        pytest.skip(f"no corpus at {CORPUS}")
    base = Path(getattr(sys, "_base_executable", "") or shutil.which("python3") or "")
    if not base.is_file() or subprocess.run([str(base), "-c", "import relaylens"], capture_output=True).returncode == 0:
        pytest.skip(f"no Python without relaylens to play a new user with ({base})")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / MODEL).write_text((CORPUS / MODEL).read_text())
    path = tmp_path / "bin"  # the PATH a new user has: a python3 without relaylens
    path.mkdir()
    (path / "python3").symlink_to(base)
    artifacts = ARTIFACTS.with_name("e2e-zero-config")
    shutil.rmtree(artifacts, ignore_errors=True)
    env = {**os.environ, **tools, "PATH": f"{path}:/usr/local/bin:/usr/bin:/bin", "ZERO_CONFIG": "1",
           "WORKSPACE": str(workspace), "MODEL": str(workspace / MODEL), "ARTIFACTS": str(artifacts)}
    env.pop("VIRTUAL_ENV", None)
    scenario = run(shutil.which("node") or "node", "e2e/scenario.js", env=env, timeout=900)
    result = json.loads((artifacts / "result.json").read_text())
    report = json.dumps(result, indent=2)[:6000] + "\n" + scenario.stderr[-3000:]
    assert list(result["steps"]) == ["offer-private-environment", "private-environment-builds"], report
    assert all(step["ok"] for step in result["steps"].values()), report
    assert "cannot import relaylens.server" in result["offer"], report
    assert result["servers"]["server"] == 1 and result["servers"]["worker"] <= 1, report  # the worker exits when idle
