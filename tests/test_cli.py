"""The `relaylens` console script, run as a user runs it: a subprocess on real files.

Exit status: 0 clean, 1 errors in the input, 2 usage errors, 3 internal errors.  Every
bad input below must end in 1 or 2 with a readable message, never in 3 or a traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
from conftest import CORPUS
EXAMPLE = REPO / "examples" / "mnist.relay"
RELAYLENS = Path(sys.executable).parent / "relaylens"

# Corpus files TVM accepts that need nothing from outside (no meta table): they check clean.
CLEAN = ["039.relay", "048.relay", "084.relay", "133.relay"]

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")

BROKEN = """\
#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x));
  nn.relu(%0)
}
"""
BROKEN_AT = (3, 19)  # the second ')'


def run(*args: str, stdin: bytes | str | None = None, cwd: Path | None = None):
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [str(RELAYLENS), *args], input=data, capture_output=True, cwd=cwd, timeout=120
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def assert_no_crash(err: str) -> None:
    assert "Traceback" not in err
    assert "internal error" not in err


def test_console_script_installed():
    assert RELAYLENS.is_file(), f"{RELAYLENS} missing: run `make venv`"


# --- check ----------------------------------------------------------------------------


def test_check_example_is_silent():
    assert run("check", str(EXAMPLE)) == (0, "", "")


@needs_corpus
@pytest.mark.parametrize("name", CLEAN)
def test_check_clean_corpus_file(name):
    code, out, err = run("check", str(CORPUS / name))
    assert (code, out, err) == (0, "", "")


@needs_corpus
def test_check_several_files():
    files = [str(CORPUS / name) for name in CLEAN] + [str(EXAMPLE)]
    assert run("check", *files) == (0, "", "")


def _assert_broken_reported(err: str, name: str) -> None:
    line, col = BROKEN_AT
    lines = err.splitlines()
    header = f"{name}:{line}:{col}: error: "
    first = next(i for i, text in enumerate(lines) if text.startswith(header))
    assert len(lines[first]) > len(header)  # a message follows
    source, caret = lines[first + 1], lines[first + 2]
    assert source.endswith(BROKEN.splitlines()[line - 1])
    # the caret sits under the offending character of the quoted line
    bar = source.index("| ") + 2
    assert caret.index("^") == bar + col - 1
    assert err.rstrip().splitlines()[-1].endswith("in 1 file")


def test_check_syntax_error(tmp_path):
    path = tmp_path / "broken.relay"
    path.write_text(BROKEN)
    code, out, err = run("check", str(path))
    assert code == 1 and out == ""
    assert_no_crash(err)
    _assert_broken_reported(err, str(path))


def test_check_stdin_clean():
    assert run("check", "-", stdin=EXAMPLE.read_text()) == (0, "", "")


def test_check_stdin_broken():
    code, out, err = run("check", "-", stdin=BROKEN)
    assert code == 1 and out == ""
    _assert_broken_reported(err, "<stdin>")


def test_check_errors_in_one_file_of_two(tmp_path):
    path = tmp_path / "broken.relay"
    path.write_text(BROKEN)
    code, _, err = run("check", str(EXAMPLE), str(path))
    assert code == 1
    assert str(EXAMPLE) not in err
    assert f"{path}:3:19: error:" in err


def test_check_warning_only_exits_zero(tmp_path):
    path = tmp_path / "headerless.relay"  # print(mod) output has no version header
    path.write_text("def @main(%x: Tensor[(2), float32]) {\n  nn.relu(%x)\n}\n")
    code, out, err = run("check", str(path))
    assert code == 0 and out == ""
    assert f"{path}:1:1: warning:" in err
    assert err.splitlines()[-1] == "1 warning in 1 file"


def test_check_non_utf8(tmp_path):
    path = tmp_path / "latin1.relay"
    path.write_bytes(b'#[version = "0.0.5"]\n// caf\xe9\ndef @main() { 0 }\n')
    code, out, err = run("check", str(path))
    assert code == 1 and out == ""
    assert_no_crash(err)
    assert err.startswith(f"{path}:2:7: error: invalid UTF-8 byte 0xe9")
    assert err.splitlines()[2].index("^") == err.splitlines()[1].index("| ") + 2 + 6


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "}}}{{{",
        "def",
        "def @main(",
        '#[version = "0.0.5"]\ndef @main() { %undefined }\n',
        '#[version = "0.0.5"]\ndef @main() { meta[relay.Constant][7] }\n',
        "\x00\x01\x02 binary \x7f",
        "/* an unterminated comment",
        '"an unterminated string',
        "fn (%x) { " * 200,
        "(" * 300 + "1f" + ")" * 300,
    ],
    ids=lambda text: repr(text[:16]),
)
def test_bad_input_never_crashes(text):
    code, out, err = run("check", "-", stdin=text)
    assert code in (0, 1), err
    assert out == ""
    assert_no_crash(err)


# --- usage errors ---------------------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.relay"
    code, out, err = run("check", str(missing))
    assert (code, out) == (2, "")
    assert err == f"relaylens: cannot read {missing}: No such file or directory\n"


def test_directory_is_not_a_file(tmp_path):
    code, _, err = run("check", str(tmp_path))
    assert code == 2
    assert err.startswith(f"relaylens: cannot read {tmp_path}: ")


def test_missing_file_does_not_stop_the_others(tmp_path):
    path = tmp_path / "broken.relay"
    path.write_text(BROKEN)
    code, _, err = run("check", str(tmp_path / "nope.relay"), str(path))
    assert code == 2
    assert "cannot read" in err and f"{path}:3:19: error:" in err


@pytest.mark.parametrize(
    "args", [(), ("check",), ("frobnicate",), ("check", "--bogus", "x"), ("print", "a", "b")]
)
def test_usage_errors(args):
    code, out, err = run(*args)
    assert (code, out) == (2, "")
    assert err.startswith("usage: relaylens")


def test_help_and_version():
    code, out, _ = run("--help")
    assert code == 0 and "check" in out and "print" in out
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("relaylens ")


def test_the_version_is_the_installed_packages():
    """compiler/version.py is where pyproject.toml reads the version from: the CLI, which
    reads it there, says what importlib.metadata says of the installed package, and so
    does every key of the disk cache."""
    from importlib.metadata import version

    from relaylens.compiler.lower.cache_keys import compiler_version

    code, out, _ = run("--version")
    assert (code, out.split()) == (0, ["relaylens", version("relaylens")])
    assert compiler_version().startswith(version("relaylens") + "+")


def test_python_dash_m():
    proc = subprocess.run(
        [sys.executable, "-m", "relaylens.compiler", "check", str(EXAMPLE)], capture_output=True
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


# --- print ----------------------------------------------------------------------------

PRINTABLE = [EXAMPLE] + [CORPUS / name for name in CLEAN if (CORPUS / name).is_file()]


@pytest.mark.parametrize("path", PRINTABLE, ids=lambda p: p.name)
@pytest.mark.parametrize("flags", [(), ("--spans", "--types")], ids=["plain", "spans-types"])
def test_print_round_trip(path, flags):
    code, first, err = run("print", *flags, str(path))
    assert code == 0, err
    assert first.strip()
    code, second, err = run("print", *flags, "-", stdin=first)
    assert code == 0, err
    assert second == first
    assert run("check", "-", stdin=first) == (0, "", "")


def test_print_keeps_frontend_spans():
    code, out, _ = run("print", "--spans", str(EXAMPLE))
    assert code == 0
    assert "span=conv1/Conv:0:0" in out and "span=fc3/Gemm:0:0" in out


def test_print_broken_prints_nothing(tmp_path):
    path = tmp_path / "broken.relay"
    path.write_text(BROKEN)
    code, out, err = run("print", str(path))
    assert code == 1 and out == ""
    assert f"{path}:3:19: error:" in err


def test_print_to_file(tmp_path):
    out_path = tmp_path / "out.relay"
    code, out, err = run("print", str(EXAMPLE), "-o", str(out_path))
    assert (code, out, err) == (0, "", "")
    assert out_path.read_text() == run("print", str(EXAMPLE))[1]


def test_print_refuses_to_overwrite_input(tmp_path):
    path = tmp_path / "model.relay"
    path.write_text(EXAMPLE.read_text())
    code, out, err = run("print", "model.relay", "-o", str(path), cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == f"relaylens: refusing to overwrite the input model.relay: -o {path} names it (add --force to replace it)\n"
    assert path.read_text() == EXAMPLE.read_text()
    code, _, _ = run("print", "model.relay", "-o", str(path), "--force", cwd=tmp_path)
    assert code == 0
    assert path.read_text() == run("print", str(EXAMPLE))[1]


def test_print_unwritable_output(tmp_path):
    code, _, err = run("print", str(EXAMPLE), "-o", str(tmp_path / "no" / "such" / "dir.relay"))
    assert code == 2
    assert err.startswith("relaylens: cannot write ")


# --- the internal-error handler, in process --------------------------------------------


def test_internal_error_is_reported_briefly(monkeypatch, capsys):
    from relaylens.compiler import cli
    from relaylens.compiler.cli import check

    def broken_check(text, name="<string>"):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(check, "check_text", broken_check)  # the name `relaylens check` calls
    monkeypatch.delenv("RELAYLENS_TRACEBACK", raising=False)
    assert cli.main(["check", str(EXAMPLE)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("relaylens: internal error: ZeroDivisionError: simulated bug\n")
    assert "Traceback" not in err

    monkeypatch.setenv("RELAYLENS_TRACEBACK", "1")
    assert cli.main(["check", str(EXAMPLE)]) == 3
    assert "Traceback" in capsys.readouterr().err
