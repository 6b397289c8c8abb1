"""`relaylens run`: inputs by name, params, -o, random inputs from a seed, and the
messages for missing or ill-fitting inputs, run in process through `cli.main` (plus two
subprocess runs of the real console script).  Also the interpreter over the corpus, its
results checked against the declared and the inferred result types."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.cli import main
from relaylens.compiler.random_data import RULE

from conftest import CORPUS
RELAYLENS = Path(sys.executable).parent / "relaylens"

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(3), float32])
    -> (Tensor[(2, 3), float32], Tensor[(2, 3), float32]) {
  %0 = multiply(%x, %w);
  (%0, add(%0, 1f))
}
"""

SINGLE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 2), float32], %n: Tensor[(2), int32], %b: bool) {
  %0 = cast(%n, dtype="float32");
  %1 = add(%x, %0);
  if (%b) { %1 } else { negative(%1) }
}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.relay"
    path.write_text(MODEL)
    return path


def relaylens(capsys, *args: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def save(tmp_path: Path, name: str, array: np.ndarray) -> Path:
    path = tmp_path / name
    np.save(path, array)
    return path


X = np.arange(6, dtype="float32").reshape(2, 3)
W = np.array([1, 2, 3], dtype="float32")


# --- inputs ---------------------------------------------------------------------------


def test_inputs_by_name_to_npz(capsys, tmp_path, model):
    out = tmp_path / "out.npz"
    status, stdout, stderr = relaylens(
        capsys, "run", model, "--interp", "--input", f"x={save(tmp_path, 'x.npy', X)}",
        "--input", f"%w={save(tmp_path, 'w.npy', W)}", "-o", out)
    assert (status, stdout, stderr) == (0, "", "")
    with np.load(out) as data:
        assert sorted(data.files) == ["output.0", "output.1"]
        np.testing.assert_array_equal(data["output.0"], X * W)
        np.testing.assert_array_equal(data["output.1"], X * W + 1)


def test_output_name_is_kept_exactly(capsys, tmp_path, model):
    out = tmp_path / "result.bin"  # numpy would add .npz to a path; we write where asked
    status, _, _ = relaylens(capsys, "run", model, "--interp", "-o", out)
    assert status == 0 and out.is_file() and not (tmp_path / "result.bin.npz").exists()


def test_an_npy_path_for_a_tuple_is_a_usage_error_naming_the_fields(capsys, tmp_path, model):
    out = tmp_path / "y.npy"
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "-o", out)
    assert status == 2 and not out.exists()
    assert "output.0, output.1" in stderr and ".npz" in stderr


def test_params_and_input_together(capsys, tmp_path, model):
    params = tmp_path / "params.npz"
    np.savez(params, w=W)
    status, stdout, stderr = relaylens(
        capsys, "run", model, "--interp", "--params", params, "--input", f"x={save(tmp_path, 'x.npy', X)}")
    assert (status, stderr) == (0, "")
    lines = stdout.splitlines()
    assert lines[0] == "output.0: Tensor[(2, 3), float32]"
    assert "output.1: Tensor[(2, 3), float32]" in lines
    first = stdout.split("output.1:")[0]
    assert first == "output.0: Tensor[(2, 3), float32]\n[[ 0.  2.  6.]\n [ 3.  8. 15.]]\n"


def test_input_wins_over_params(capsys, tmp_path, model):
    params = tmp_path / "params.npz"
    np.savez(params, w=np.zeros(3, "float32"), x=np.zeros((2, 3), "float32"))
    out = tmp_path / "out.npz"
    status, _, _ = relaylens(capsys, "run", model, "--interp", "--params", params,
                             "--input", f"w={save(tmp_path, 'w.npy', W)}", "-o", out)
    assert status == 0
    with np.load(out) as data:
        np.testing.assert_array_equal(data["output.1"], np.ones((2, 3)))


@pytest.mark.parametrize("name", ["out.npz", "y.npy"])
def test_single_tensor_output_key(capsys, tmp_path, name):
    """In an archive under the key `output`; to a path ending in .npy, as a plain array."""
    path = tmp_path / "one.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { exp(%x) }\n')
    out = tmp_path / name
    x = np.array([0, 1], "float32")
    status, _, _ = relaylens(capsys, "run", path, "--interp", "--input", f"x={save(tmp_path, 'x.npy', x)}",
                             "-o", out)
    assert status == 0
    if name.endswith(".npy"):
        np.testing.assert_allclose(np.load(out), np.exp(x))
        return
    with np.load(out) as data:
        assert data.files == ["output"]
        np.testing.assert_allclose(data["output"], np.exp(x))


# --- bad inputs: exit 2, the parameter, its type and what was given --------------------


def test_missing_input_names_the_parameter_and_type(capsys, tmp_path, model):
    status, stdout, stderr = relaylens(capsys, "run", model, "--interp",
                                       "--input", f"x={save(tmp_path, 'x.npy', X)}")
    assert status == 2 and stdout == ""
    assert stderr.splitlines()[:2] == ["relaylens: missing input for @main:", "  %w: Tensor[(3), float32]"]
    assert "--input NAME=FILE.npy" in stderr


def test_wrong_shape(capsys, tmp_path, model):
    status, _, stderr = relaylens(capsys, "run", model, "--interp",
                                  "--input", f"x={save(tmp_path, 'x.npy', X.T.copy())}",
                                  "--input", f"w={save(tmp_path, 'w.npy', W)}")
    assert status == 2
    x_path = tmp_path / "x.npy"
    assert stderr == (f"relaylens: input %x from {x_path} is Tensor[(3, 2), float32], but @main expects "
                      f"%x: Tensor[(2, 3), float32]\n")


def test_wrong_dtype(capsys, tmp_path, model):
    status, _, stderr = relaylens(capsys, "run", model, "--interp",
                                  "--input", f"x={save(tmp_path, 'x.npy', X.astype('float64'))}",
                                  "--input", f"w={save(tmp_path, 'w.npy', W)}")
    assert status == 2
    assert "input %x" in stderr
    assert "is Tensor[(2, 3), float64], but @main expects %x: Tensor[(2, 3), float32]" in stderr


def test_unknown_parameter_name(capsys, tmp_path, model):
    y = save(tmp_path, "y.npy", X)
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "--input", f"y={y}")
    assert status == 2
    assert "@main has no parameter %y (its parameters: %x, %w)" in stderr


@pytest.mark.parametrize("spec", ["x.npy", "=x.npy", "x="])
def test_malformed_input_spec(capsys, model, spec):
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "--input", spec)
    assert status == 2
    assert f"--input expects NAME=FILE.npy, got {spec!r}" in stderr


def test_unreadable_files(capsys, tmp_path, model):
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "--input", f"x={tmp_path / 'nope.npy'}")
    assert status == 2 and "cannot read --input x=" in stderr and "nope.npy" in stderr
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not numpy at all")
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "--params", garbage)
    assert status == 2 and "cannot read --params" in stderr
    status, _, stderr = relaylens(capsys, "run", tmp_path / "absent.relay", "--interp")
    assert status == 2 and "cannot read" in stderr


def test_npz_given_as_input_and_npy_as_params(capsys, tmp_path, model):
    archive = tmp_path / "a.npz"
    np.savez(archive, x=X)
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "--input", f"x={archive}")
    assert status == 2 and "is an .npz archive" in stderr
    status, _, stderr = relaylens(capsys, "run", model, "--interp", "--params", save(tmp_path, "x.npy", X))
    assert status == 2 and "is a single .npy array" in stderr


# --- random inputs --------------------------------------------------------------------


def test_random_inputs_with_note_and_seed_determinism(capsys, tmp_path):
    path = tmp_path / "single.relay"
    path.write_text(SINGLE)
    runs = []
    for seed in ("3", "3", "4"):
        out = tmp_path / f"out{len(runs)}.npz"
        status, stdout, stderr = relaylens(capsys, "run", path, "--interp", "--seed", seed, "-o", out)
        assert status == 0 and stdout == ""
        assert stderr.splitlines() == [
            f"relaylens: note: no inputs given; using random inputs (seed {seed}):",
            f"  {RULE}",
            "  %x: Tensor[(2, 2), float32]",
            "  %n: Tensor[(2), int32]",
            "  %b: bool",
        ]
        with np.load(out) as data:
            runs.append(data["output"])
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    # the same values as drawing them ourselves: normal floats, small ints, then a coin
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2)).astype("float32")
    n = rng.integers(0, 10, size=(2,)).astype("int32")
    b = rng.random(()) < 0.5
    assert np.all((0 <= n) & (n < 10))
    expected = x + n.astype("float32")
    np.testing.assert_array_equal(runs[0], expected if b else -expected)


def test_default_seed_is_zero(capsys, model, tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert relaylens(capsys, "run", model, "--interp", "-o", a)[0] == 0
    assert relaylens(capsys, "run", model, "--interp", "--seed", "0", "-o", b)[0] == 0
    with np.load(a) as da, np.load(b) as db:
        np.testing.assert_array_equal(da["output.0"], db["output.0"])


def test_random_input_needs_a_static_type(capsys, tmp_path):
    path = tmp_path / "dyn.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(?, 3), float32]) { %x }\n')
    status, _, stderr = relaylens(capsys, "run", path, "--interp")
    assert status == 2
    assert ("cannot make a random input for %x: Tensor[(?, 3), float32] has dimensions known only "
            "at run time") in stderr
    path.write_text('#[version = "0.0.5"]\ndef @main(%x) { %x }\n')
    status, _, stderr = relaylens(capsys, "run", path, "--interp")
    assert status == 2 and "%x: it has no type annotation; pass --input x=FILE.npy" in stderr


def test_an_input_for_a_dynamic_dimension_gives_the_build_its_shape(capsys, tmp_path):
    """An ONNX model exported with a dynamic batch: run asks for `--input`, and builds for
    the shape of the array given (it used to fail at every kernel, 'lowering needs static
    shapes', and say to re-import with --shape); the output is the interpreter's."""
    path = tmp_path / "dyn.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(?, 3), float32]) {\n  exp(%x)\n}\n')
    x = save(tmp_path, "x.npy", np.arange(12, dtype="float32").reshape(4, 3) / 10)
    status, out, stderr = relaylens(capsys, "run", path, "--input", f"x={x}", "--check")
    assert status == 0, stderr
    assert out.startswith("output: Tensor[(4, 3), float32]\n"), out
    assert "static shapes" not in stderr and "--shape" not in stderr, stderr
    status, out, _ = relaylens(capsys, "run", path, "--input", f"x={x}", "--interp")
    assert status == 0 and "output: Tensor[(4, 3), float32]" in out


def test_inputs_whose_dynamic_dimensions_do_not_fit_together_are_one_error_at_the_first(capsys, tmp_path):
    path = tmp_path / "two.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%a: Tensor[(?, 4), float32], %b: Tensor[(?, 4), float32]) {\n'
                    '  add(%a, %b)\n}\n')
    a = save(tmp_path, "a.npy", np.ones((2, 4), "float32"))
    b = save(tmp_path, "b.npy", np.ones((3, 4), "float32"))
    for command in ("run", "profile"):
        status, _, stderr = relaylens(capsys, command, path, "--input", f"a={a}", "--input", f"b={b}")
        assert status == 1, stderr
        assert stderr.count("error:") == 1, stderr
        assert (f"{path}:2:11: error: the shapes --input gives (%a: Tensor[(2, 4), float32], "
                "%b: Tensor[(3, 4), float32]) do not fit @main together: add: ") in stderr, stderr
        assert f"{path}:3:3: note: here, with those shapes" in stderr, stderr
        assert "note: %a is" not in stderr, stderr
    status, out, stderr = relaylens(capsys, "profile", path, "--input", f"a={a}", "--input", f"b={a}", "--runs", "2")
    assert status == 0 and "end-to-end" in out, stderr


def test_random_tuple_parameter(capsys, tmp_path):
    path = tmp_path / "tup.relay"
    path.write_text('#[version = "0.0.5"]\n'
                    'def @main(%t: (Tensor[(2), float32], Tensor[(2), float32])) { add(%t.0, %t.1) }\n')
    status, stdout, _ = relaylens(capsys, "run", path, "--interp")
    assert status == 0 and stdout.startswith("output: Tensor[(2), float32]\n")


# --- the program's own errors: exit 1, rendered at the span --------------------------------


def test_parse_errors_reported_like_check(capsys, tmp_path):
    path = tmp_path / "broken.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  %0 = add(%x, %x));\n'
                    '  nn.relu(%0)\n}\n')
    status, stdout, stderr = relaylens(capsys, "run", path, "--interp")
    check_status, _, check_err = relaylens(capsys, "check", path)
    assert (status, stdout) == (1, "")
    assert check_status == 1
    assert stderr.splitlines()[0] == check_err.splitlines()[0]
    assert stderr.splitlines()[0].startswith(f"{path}:3:19: error:")


def test_runtime_error_rendered_with_span_and_exit_1(capsys, tmp_path):
    path = tmp_path / "bad.relay"
    path.write_text('#[version = "0.0.5"]\n'
                    'def @f(%a, %b) {\n  add(%a, %b)\n}\n'
                    'def @main(%x: Tensor[(2), float32], %y: Tensor[(3), float32]) {\n  @f(%x, %y)\n}\n')
    status, stdout, stderr = relaylens(capsys, "run", path, "--interp")
    assert (status, stdout) == (1, "")
    lines = stderr.splitlines()
    assert lines[:4] == [
        "relaylens: note: no inputs given; using random inputs (seed 0):",
        f"  {RULE}",
        "  %x: Tensor[(2), float32]",
        "  %y: Tensor[(3), float32]",
    ]
    assert lines[4] == (f"{path}:3:3: error: add: shapes cannot be broadcast together: "
                        "Tensor[(2), float32] and Tensor[(3), float32]")
    assert lines[5:7] == ["    3 |   add(%a, %b)", "      |   ^~~~~~~~~~~"]
    assert lines[7] == f"{path}:6:3: note: in this call of @f"


def test_no_main(capsys, tmp_path):
    path = tmp_path / "lib.relay"
    path.write_text('#[version = "0.0.5"]\ndef @f(%x: float32) { %x }\n')
    status, _, stderr = relaylens(capsys, "run", path, "--interp")
    assert status == 1 and stderr == f"{path}: error: there is no @main to run\n"


def test_non_tensor_result_printed_but_not_saved(capsys, tmp_path):
    path = tmp_path / "adt.relay"
    path.write_text('#[version = "0.0.5"]\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n'
                    'def @main() { Cons(1f, Nil) }\n')
    status, stdout, _ = relaylens(capsys, "run", path, "--interp")
    assert status == 0 and stdout == "output: Cons(float32, Nil)\n"
    status, _, stderr = relaylens(capsys, "run", path, "--interp", "-o", tmp_path / "o.npz")
    assert status == 2 and "output is Cons(float32, Nil); only tensors" in stderr


def test_stdin_program(capsys, monkeypatch, tmp_path):
    import io

    class Stdin:
        buffer = io.BytesIO(b'#[version = "0.0.5"]\ndef @main() { add(1f, 2f) }\n')

    monkeypatch.setattr(sys, "stdin", Stdin())
    status, stdout, stderr = relaylens(capsys, "run", "-", "--interp")
    assert (status, stdout, stderr) == (0, "output: float32\n3.0\n", "")


# --- the real console script --------------------------------------------------------------


def _script(*args, cwd: Path) -> tuple[int, str, str]:
    proc = subprocess.run([str(RELAYLENS), *map(str, args)], capture_output=True, cwd=cwd, timeout=120)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def test_console_script_end_to_end(tmp_path, model):
    save(tmp_path, "x.npy", X)
    save(tmp_path, "w.npy", W)
    status, stdout, stderr = _script("run", model, "--interp", "--input", "x=x.npy", "--input", "w=w.npy",
                                     "-o", "out.npz", cwd=tmp_path)
    assert (status, stdout, stderr) == (0, "", "")
    with np.load(tmp_path / "out.npz") as data:
        np.testing.assert_array_equal(data["output.0"], X * W)
    status, _, stderr = _script("run", model, "--interp", "--input", "x=x.npy", cwd=tmp_path)
    assert status == 2 and "Traceback" not in stderr and "%w: Tensor[(3), float32]" in stderr


# --- the corpus ----------------------------------------------------------------------------


def _corpus_files() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.relay")) if CORPUS.is_dir() else []


def _why_not_runnable(module) -> str | None:
    """Why a corpus program cannot run on random inputs (None: it can)."""
    from relaylens.compiler.interpreter.values import static_shape, type_text
    from relaylens.compiler.ir.expr import Call, GlobalVar, Op
    from relaylens.compiler.ir.functor import post_order
    from relaylens.compiler.ir.types import TensorType
    from relaylens.compiler.ops import get_op

    if "main" not in module:
        return "no @main"
    for p in module["main"].params:
        ty = p.type_annotation
        if not isinstance(ty, TensorType):
            return f"@main parameter %{p.name} is not a tensor ({type_text(ty) if ty else 'no type'})"
        if static_shape(ty) is None:
            return f"@main parameter %{p.name} has dynamic dims"
    missing = set()
    undefined = set()
    for func in module.functions.values():
        for node in post_order(func):
            if isinstance(node, GlobalVar) and node not in module.functions:
                undefined.add("@" + node.name)
            if isinstance(node, Call) and isinstance(node.op, Op):
                opdef = get_op(node.op.name)
                if opdef is None or opdef.numpy_compute is None:
                    missing.add(node.op.name)
    if missing:
        return "ops not in the library yet: " + ", ".join(sorted(missing))
    if undefined:
        return "calls globals the file does not define: " + ", ".join(sorted(undefined))
    return None


def _inferred_result_type(module):
    """The type inference gives @main's body, when it infers the module without errors."""
    from relaylens.compiler.typing import infer_types

    if any(d.is_error for d in infer_types(module)):
        return None
    return module["main"].body.ty


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("name", _corpus_files())
def test_corpus_runs_on_random_inputs(name):
    from relaylens.compiler.interpreter import Interpreter
    from relaylens.compiler.ir.types import TensorType, TupleType
    from relaylens.compiler.parser import parse
    from relaylens.compiler.cli import UsageError
    from relaylens.compiler.interpreter import type_mismatch
    from relaylens.compiler.cli.run import flatten, random_inputs

    result = parse((CORPUS / name).read_text(encoding="utf-8"), name)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        pytest.skip(f"{name}: does not parse cleanly ({errors[0].message[:80]})")
    why = _why_not_runnable(result.module)
    if why is not None:
        pytest.skip(f"{name}: {why}")
    module = result.module
    if result.module.metadata is None and "meta[relay.Constant]" in result.source.text:
        # printed without its metadata: the constants' values are drawn from a seed
        from relaylens.compiler.check import check_text
        from relaylens.compiler.unknown_values import fill_unknown_constants

        module, filled = fill_unknown_constants(check_text(result.source.text, name).module, seed=0)
        if any(d.is_error for d in filled):
            pytest.skip(f"{name}: {next(d for d in filled if d.is_error).message[:80]}")
    main_fn = module["main"]
    try:
        args, _ = random_inputs(main_fn.params, seed=0)
    except UsageError as exc:
        pytest.skip(f"{name}: {exc}")
    value = Interpreter(module).call("main", args)
    ret = main_fn.ret_type
    assert type_mismatch(value, ret) is None, f"{name}: {type_mismatch(value, ret)}"
    inferred = _inferred_result_type(module)  # a cross-check of two independent stages
    why = type_mismatch(value, inferred)
    assert why is None, f"{name}: against the inferred type: {why}"
    outputs = flatten(value)
    tensors = [(k, v) for k, v in outputs if isinstance(v, np.ndarray)]
    if len(tensors) < len(outputs):  # a closure, an ADT value: checked against `-> T` above only
        assert not isinstance(ret, (TensorType, TupleType)), f"{name}: @main returned {value!r}"
    for key, out in tensors:
        if out.dtype.kind == "f":
            assert np.all(np.isfinite(out)), f"{name}: {key} has non-finite values"


def test_an_input_named_as_onnx_names_it_finds_the_parameter_printed_for_it(tmp_path, capsys):
    """PyTorch 1.x named a model's input `0`; imported, it is `%v0` (a name must start with
    a letter).  `run --input 0=x.npy` was refused with '@main has no parameter %0'; it is
    that parameter.  A name that is no parameter stays an error."""
    path = tmp_path / "old.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%v0: Tensor[(2), float32]) {\n  add(%v0, 1f)\n}\n')
    np.save(tmp_path / "x.npy", np.array([1, 2], np.float32))
    status = main(["run", str(path), "--input", f"0={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out.npz")])
    assert status == 0, capsys.readouterr().err
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["output"], [2, 3])
    assert main(["run", str(path), "--input", f"1={tmp_path / 'x.npy'}"]) == 2
    assert "@main has no parameter %1 (its parameters: %v0)" in capsys.readouterr().err
