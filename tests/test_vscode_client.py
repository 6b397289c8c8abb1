"""The VS Code extension's build and grammars (vscode-client/).

- The TextMate grammars pass their vscode-tmgrammar-test cases (vscode-client/test/grammar),
  and a wrong expectation fails them.
- Every corpus file tokenises without a visible mistake: no invalid token in a file TVM
  accepts, every `%`/`@` name scoped as a name, every `ty=`/`span=` comment scoped as an
  annotation, no comment or string running to the end of the file.
- `scripts/vsix.sh` (what `make vsix` runs) type-checks, bundles and packages the extension
  offline, and the .vsix holds what VS Code needs and nothing of node_modules.

npm packages come from vscode-client/package-lock.json through scripts/npm-ci.sh.  The
tests skip, saying so, only when npm is not installed.
"""

from __future__ import annotations

import json
import re
import resource
import shutil
import subprocess
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import CORPUS

CLIENT = Path(__file__).resolve().parents[1] / "vscode-client"
GRAMMAR_TESTS = sorted((CLIENT / "test" / "grammar").glob("*.test.*"))
ALLOWED_PACKAGES = {
    "dependencies": {"vscode-languageclient"},
    "devDependencies": {"esbuild", "@vscode/vsce", "typescript", "@types/vscode", "@types/node",
                        "vscode-tmgrammar-test", "playwright-core"},
}


def unlimited_address_space() -> None:
    """Lift, in a child, the address-space cap that conftest puts on the test process:
    V8 reserves far more address space than it uses (WebAssembly needs 10 GB per instance)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=CLIENT, capture_output=True, text=True, timeout=900,
                            preexec_fn=unlimited_address_space)
    if check and result.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


@pytest.fixture(scope="module")
def node_modules() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm is not installed: the extension's npm packages cannot be installed here")
    run("scripts/npm-ci.sh")
    return CLIENT / "node_modules"


def grammar_test(*files: Path) -> subprocess.CompletedProcess:
    grammars = ["syntaxes/relay.tmLanguage.json", "syntaxes/llvm.tmLanguage.json",
                "syntaxes/relay.markdown.tmLanguage.json", "test/grammar/markdown-stub.tmLanguage.json"]
    args = [a for g in grammars for a in ("-g", g)]
    return run("node_modules/.bin/vscode-tmgrammar-test", *args, *map(str, files), check=False)


def test_grammar_cases_pass(node_modules):
    assert len(GRAMMAR_TESTS) >= 5
    result = grammar_test(*GRAMMAR_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    for case in GRAMMAR_TESTS:
        assert f"{case.relative_to(CLIENT)} run successfuly" in result.stdout


def test_a_wrong_grammar_expectation_fails(node_modules, tmp_path):
    case = tmp_path / "wrong.test.relay"
    case.write_text('// SYNTAX TEST "source.relay"\n'
                    "%0 = add(%x, 1f);\n"
                    "//   ^^^ comment.block.relay\n")
    result = grammar_test(case)
    assert result.returncode != 0
    assert "missing required scopes: comment.block.relay" in result.stdout


def scan(*files: Path) -> dict[str, list[dict]]:
    result = run("node", "test/grammar/scan-corpus.js", *map(str, files))
    return {Path(d["file"]).name: d["problems"] for d in map(json.loads, result.stdout.splitlines())}


def tvm_accepts() -> dict[str, bool]:
    rows = (line.split("\t") for line in (CORPUS / "SOURCES.tsv").read_text().splitlines()[1:])
    return {row[0]: row[4] == "yes" for row in rows}


def test_the_corpus_tokenises_without_visible_mistakes(node_modules):
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    files = sorted(CORPUS.glob("*.relay"))
    accepted = tvm_accepts()
    problems = scan(*files)
    assert len(problems) == len(files)
    bad = {name: [p for p in found if p["problem"] != "invalid" or accepted.get(name, False)]
           for name, found in problems.items()}
    assert {name: found for name, found in bad.items() if found} == {}


def test_the_scanner_sees_mistakes(node_modules, tmp_path):
    leaking = tmp_path / "leak.relay"
    leaking.write_text("%0 = add(%x, %y) /* opened /* twice */ closed once */;\n"
                       "/* open /* nested */ never closed\n%1 = nn.relu(%0);\n")
    invalid = tmp_path / "old.relay"
    invalid.write_text("add(1.5, 2f)\n")
    found = scan(leaking, invalid)
    assert [p["problem"] for p in found["leak.relay"]] == ["leak"]
    assert [(p["problem"], p["text"]) for p in found["old.relay"]] == [("invalid", "1.5")]


def test_dependencies_are_the_agreed_ones():
    package = json.loads((CLIENT / "package.json").read_text())
    assert {k: set(package.get(k, {})) for k in ALLOWED_PACKAGES} == ALLOWED_PACKAGES
    assert package["engines"]["vscode"] == "^1.82.0"
    assert package["devDependencies"]["@types/vscode"] == "1.82.0"
    assert "onLanguage:relay" in package["activationEvents"]


def test_the_vsix_packages_offline(node_modules):
    vsix = Path(run("scripts/vsix.sh").stdout.strip().splitlines()[-1])
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert {"extension/dist/extension.js", "extension/syntaxes/relay.tmLanguage.json",
            "extension/syntaxes/llvm.tmLanguage.json", "extension/syntaxes/relay.markdown.tmLanguage.json",
            "extension/language-configuration.json"} <= names
    assert not [n for n in names if "node_modules" in n or n.endswith(".ts")]
    languages = {lang["id"]: lang for lang in manifest["contributes"]["languages"]}
    assert languages["relay"]["extensions"] == [".relay", ".rly"]
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {"relaylens.showLlvmIr", "relaylens.showPassPipeline", "relaylens.showSchedule",
            "relaylens.explain", "relaylens.restartServer"} <= commands
    assert set(manifest["contributes"]["configuration"]["properties"]) == {
        "relaylens.server.pythonPath", "relaylens.trace.server", "relaylens.inlayHints.types",
        "relaylens.files.maxBytes", "relaylens.params.bind", "relaylens.cache.enabled",
        "relaylens.byoc.patterns", "relaylens.byoc.target", "relaylens.byoc.targetOps",
        "relaylens.worker.idleExitSeconds"}
    assert {"relaylens.goToSource"} <= commands
    assert {"extension/dist/graph-view.js", "extension/dist/graph-view.css"} <= names and "relaylens.showGraph" in commands
    assert manifest["contributes"]["keybindings"] == [
        {"command": "relaylens.goToSource", "key": "f12", "when": "editorTextFocus && resourceScheme == relaylens"}]


def test_hover_links_to_virtual_documents_become_command_links(node_modules, tmp_path):
    """VS Code's Markdown does not follow `relaylens:` links: the hover middleware makes each
    a `command:relaylens.open` link (src/common/commandLinks.ts), `#L<line>` its range;
    other links stay as they are."""
    bundle = tmp_path / "commandLinks.js"
    run("node_modules/.bin/esbuild", "src/common/commandLinks.ts", "--bundle", "--platform=node",
        "--format=cjs", f"--outfile={bundle}")
    module = "relaylens:/llvm/module.ll?uri=file%3A%2F%2F%2Fw%2Fm%20%281%29.relay&version=3"
    markdown = (f"[LLVM IR]({module}#L12) · [alone](relaylens:/llvm/f.ll?uri=x) · "
                "[`@p`](file:///w/t.relay#L4) · `relaylens:/pass/1-X.relay?uri=x`")
    script = (f"const m = require({json.dumps(str(bundle))});"
              f"console.log(JSON.stringify(m.commandLinks({json.dumps(markdown)}, 'relaylens.open')));")
    out = json.loads(run("node", "-e", script).stdout)
    links = re.findall(r"\]\(command:relaylens\.open\?(\S+) \"([^\"]+)\"\)", out)
    assert [(json.loads(unquote(query)), title) for query, title in links] == [
        ([module, {"start": {"line": 11, "character": 0}, "end": {"line": 11, "character": 0}}], "module.ll"),
        (["relaylens:/llvm/f.ll?uri=x"], "f.ll")]
    assert "(file:///w/t.relay#L4)" in out  # VS Code follows file links itself
    assert out.endswith("`relaylens:/pass/1-X.relay?uri=x`")  # code, not a link: untouched
    assert "(" not in out.split("command:relaylens.open?", 1)[1].split(" ", 1)[0]  # the link stays one token
