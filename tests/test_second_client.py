"""The language server seen from a second, independent client: Neovim's built-in LSP
client (0.7 API), headless, so the server is shown not to be tuned to VS Code.

tests/nvim/scenario.lua runs the scenario on a copy of corpus model 073 (two conv2d and an
add: two fused functions): it opens the file, hovers, jumps to a definition, lists
references, document symbols and code lenses, follows the first lens into the LLVM IR and
back, breaks a line and fixes it, and formats.  It records what Neovim saw (the hover
window's text, where the cursor landed, the quickfix list, vim.diagnostic, the lenses'
virtual text) as JSON; the tests below assert on that record, one feature each.

tests/nvim/install.sh installs Debian's neovim when `nvim` is missing; the tests skip only
when it cannot be installed.  The scenario takes about 5 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS
from relaylens.compiler.driver import compile

HERE = Path(__file__).resolve().parent / "nvim"
MODEL = "073.relay"
NVIM_MISSING = 3  # install.sh's exit status when Neovim cannot be installed
WAIT_MS = 30_000  # the longest the scenario waits for any one answer
ERROR = 1  # vim.diagnostic.severity.ERROR, and LSP's MessageType.Error


def _nvim() -> str:
    setup = subprocess.run([str(HERE / "install.sh")], capture_output=True, text=True, timeout=600)
    if setup.returncode == NVIM_MISSING:
        pytest.skip(f"Neovim cannot be installed here: {setup.stderr.strip()}")
    assert setup.returncode == 0, f"tests/nvim/install.sh failed:\n{setup.stderr[-4000:]}"
    return setup.stdout.strip().splitlines()[-1].removeprefix("NVIM=")


class Model:
    """The copy of the model that Neovim edits, and the positions the scenario uses
    (0-based lines, byte columns), found in its text rather than written down."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = path.as_uri()
        self.text = path.read_text(encoding="utf-8")
        lines = self.text.split("\n")
        self.binding = next(i for i, line in enumerate(lines) if "%0 = nn.conv2d(" in line)
        self.binding_col = lines[self.binding].index("%0")
        self.other_conv = next(i for i, line in enumerate(lines) if "%1 = nn.conv2d(" in line)
        self.use = next(i for i, line in enumerate(lines) if "add(%0, %1)" in line)
        self.use_col = lines[self.use].index("%0")
        self.op = (self.binding, lines[self.binding].index("nn.conv2d") + 3)
        self.break_col = lines[self.use].index("add(%0, %1)") + len("add(%0, %1)")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Model:
    source = CORPUS / MODEL
    if not source.is_file():
        pytest.skip(f"no corpus at {CORPUS}")
    path = tmp_path_factory.mktemp("nvim") / MODEL
    path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    return Model(path)


@pytest.fixture(scope="module")
def seen(model: Model) -> dict:
    """What Neovim observed; a scenario that stopped fails here, with its reason."""
    nvim = _nvim()
    work = model.path.parent
    out = work / "observed.json"
    plan = work / "plan.json"
    plan.write_text(json.dumps({
        "cmd": [sys.executable, "-m", "relaylens.server"], "file": str(model.path),
        "out": str(out), "timeout_ms": WAIT_MS,
        "hover": model.op, "use": [model.use, model.use_col], "break": [model.use, model.break_col, ")"],
    }))
    env = dict(os.environ, RELAYLENS_NVIM_PLAN=str(plan), XDG_CONFIG_HOME=str(work / "config"),
               XDG_DATA_HOME=str(work / "data"), XDG_STATE_HOME=str(work / "state"),
               XDG_CACHE_HOME=str(work / "cache"))
    run = subprocess.run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
                          "-c", f"luafile {HERE / 'scenario.lua'}"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=180)
    assert out.is_file(), f"Neovim wrote no observations (exit {run.returncode}):\n{run.stderr[-4000:]}"
    seen = json.loads(out.read_text(encoding="utf-8"))
    if "error" in seen:
        log = Path(seen["lsp_log"])
        pytest.fail(f"the Neovim {seen['nvim']} scenario stopped in step {seen['steps'][-1]!r}: {seen['error']}\n"
                    f"--- Neovim's stderr\n{run.stderr[-2000:]}\n"
                    f"--- {log}\n{log.read_text()[-4000:] if log.is_file() else '(none)'}")
    assert run.returncode == 0, run.stderr[-4000:]
    return seen


def test_the_server_announces_what_the_scenario_uses(seen: dict) -> None:
    caps = seen["capabilities"]
    for provider in ("hoverProvider", "definitionProvider", "referencesProvider",
                     "documentSymbolProvider", "documentFormattingProvider"):
        assert caps.get(provider), f"{provider} missing from {sorted(caps)}"
    assert "codeLensProvider" in caps
    assert caps["textDocumentSync"]["change"] == 2  # incremental: Neovim sends its own line edits


def test_diagnostics_appear_on_the_broken_line_and_go_when_fixed(seen: dict, model: Model) -> None:
    assert seen["open"]["diagnostics"] == []
    broken = seen["broken"]["diagnostics"]
    assert [(d["lnum"], d["col"], d["severity"], d["source"]) for d in broken] == [
        (model.use, model.break_col, ERROR, "relaylens syntax")], broken
    assert "found ')'" in broken[0]["message"]
    assert seen["fixed"]["diagnostics"] == []
    assert seen["fixed"]["version"] > seen["broken"]["version"]


def test_hover_on_an_op_call_shows_its_type_and_provenance(seen: dict) -> None:
    hover = "\n".join(seen["hover"])
    assert hover.startswith("**call** `nn.conv2d`"), hover
    assert ": Tensor[(1, 4, 16, 16), float32]" in hover
    assert "**fused into** conv2d + add  \n`tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add`" in hover  # from the build


def test_definition_jumps_to_the_binding(seen: dict, model: Model) -> None:
    assert seen["definition"] == {"line": model.binding, "col": model.binding_col, "buffer_is_file": True}


def test_references_fill_the_quickfix_list(seen: dict, model: Model) -> None:
    assert [(r["line"], r["col"]) for r in seen["references"]] == [
        (model.binding, model.binding_col), (model.use, model.use_col)]


def test_document_symbols(seen: dict, model: Model) -> None:
    symbols = seen["symbols"]
    assert [(s["name"], s["kind"]) for s in symbols] == [("@main", 12)]  # SymbolKind.Function
    assert symbols[0]["range"]["start"]["line"] < model.binding < model.use <= symbols[0]["range"]["end"]["line"]


def _fused_names(text: str) -> dict[str, str]:
    """The fused functions' symbols → their display names, as the lenses show them."""
    built = compile(text, MODEL, stop_after="passes")
    return {name: built.provenance.display_name(func) for func, name in built.fused_names.items()}


def test_code_lenses_name_the_fused_functions(seen: dict, model: Model) -> None:
    expected = set(_fused_names(model.text).values())
    assert _fused_names(model.text) == {  # AlterOpLayout: NCHWc convs, layout_transforms of inputs and result
        "tvmgen_default_fused_layout_transform": "layout_transform", "tvmgen_default_fused_layout_transform_1": "layout_transform",
        "tvmgen_default_fused_layout_transform_2": "layout_transform",
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc": "conv2d",
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add": "conv2d + add"}
    for lenses in (seen["lenses"], seen["fixed"]["lenses"]):
        shown = [s for s in lenses["shown"] if s["text"].startswith("ƒ ")]  # not "▶ Profile" above @main
        assert {model.binding, model.other_conv} <= {s["line"] for s in shown}, shown
        named = {s["text"].split(" | ")[0].removeprefix("ƒ ") for s in shown}
        assert named <= expected and {"conv2d", "conv2d + add"} <= named, shown
        for s in shown:
            _, ir, schedule, passes, *movers = s["text"].split(" | ")  # then the inputs' layout_transforms
            assert ir == "LLVM IR" and schedule.startswith("schedule (") and passes.startswith("passes ("), s
            assert all(m.startswith("layout_transform ") for m in movers), s
        assert {lens["command"] for lens in lenses["stored"]} == {"relaylens.open", "relaylens.profile"}
    assert seen["fixed"]["lenses"]["version"] == seen["fixed"]["version"]


def test_a_lens_leads_to_llvm_ir_and_back(seen: dict, model: Model) -> None:
    virtual = seen["virtual"]
    assert virtual["uri"].startswith("relaylens:/llvm/module.ll?")
    assert virtual["language"] == "llvm"
    assert "define void @tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add(" in virtual["text"]
    # definition on a module.ll line with a Relay location lands on that Relay line
    [location] = virtual["definition"]
    assert location["uri"] == model.uri
    assert location["range"]["start"]["line"] == virtual["relay_line"]
    owners = [f["name"] for f in virtual["functions"]
              if any(a <= virtual["relay_line"] <= b for a, b in f["relay"])]
    assert owners and owners[0] in _fused_names(model.text)


def test_formatting_edits_the_buffer(seen: dict) -> None:
    formatting = seen["formatting"]
    assert formatting["edits"], "textDocument/formatting returned no edits"
    assert formatting["after"] != formatting["before"]
    assert "\n  %0 = nn.conv2d(%x1, %w1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n" in formatting["after"]
    assert formatting["diagnostics"] == []  # the formatted text is still a valid model


def test_builds_report_progress_and_the_server_exits_cleanly(seen: dict) -> None:
    # the opened and the fixed text were built (the formatted one may still be building)
    versions = [seen["open"]["version"], seen["fixed"]["version"]]
    assert [(b["version"], b["state"]) for b in seen["builds"][:2]] == [(v, "done") for v in versions]
    begins = [p for p in seen["progress"] if p["kind"] == "begin"]
    ends = [p for p in seen["progress"] if p["kind"] == "end"]
    assert [p["title"] for p in begins[:2]] == ["RelayLens build"] * 2
    # built, or answered from the report of an earlier build of the same text (report_cache.py)
    assert [p["message"].startswith(("built in ", "built before: its report kept on disk"))
            for p in ends[:2]] == [True, True], ends
    assert [m for m in seen["messages"] if m["type"] == ERROR] == []
    assert seen["exit"] == {"code": 0, "signal": 0}
