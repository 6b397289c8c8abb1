"""Ordinary bad input is exit 1 or 2 with a one-line message, never 3 ("internal error"):
arrays given to `run` (compiler/cli/array_files.py), ONNX models and their external data
(frontend/onnx/load.py), and out-of-range numbers on the command line."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.cli import main

SOURCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32]) {
  add(%x, 1f)
}
"""
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def fails(capsys, status: int, *args, says: str) -> None:
    got, out, err = relaylens(capsys, *args)
    assert (got, out) == (status, ""), err
    assert says in err and err.count("\n") == 1, err


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "x.relay"
    path.write_text(SOURCE)
    return path


def npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """An .npy header (version 1.0) declaring `shape`, with no data after it."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    text += " " * (63 - (10 + len(text)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode()


# --- arrays given to run ----------------------------------------------------------------------


@pytest.mark.parametrize("array", [X.astype(">f4"), np.asfortranarray(X)], ids=["big-endian", "fortran"])
def test_compiled_run_takes_big_endian_and_fortran_arrays(capsys, tmp_path, source, array):
    np.save(tmp_path / "x.npy", array)
    status, _, err = relaylens(capsys, "run", source, "--input", f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "y.npz")
    assert status == 0, err
    with np.load(tmp_path / "y.npz") as result:
        np.testing.assert_array_equal(result["output"], X + 1)


def test_big_endian_params_archive(capsys, tmp_path, source):
    np.savez(tmp_path / "p.npz", x=X.astype(">f4"))
    status, _, err = relaylens(capsys, "run", source, "--params", tmp_path / "p.npz", "-o", tmp_path / "y.npz")
    assert status == 0, err
    with np.load(tmp_path / "y.npz") as result:
        np.testing.assert_array_equal(result["output"], X + 1)


def test_npy_declaring_a_huge_shape_is_refused_before_allocating(capsys, tmp_path, source):
    (tmp_path / "huge.npy").write_bytes(npy_header((100_000_000_000, 100_000)) + b"\0" * 64)
    fails(capsys, 2, "run", source, "--input", f"x={tmp_path / 'huge.npy'}",
          says="its header declares float32 of shape (100000000000, 100000) (40000000000000000 bytes), "
               "but only 64 bytes follow")
    with zipfile.ZipFile(tmp_path / "huge.npz", "w") as archive:
        archive.writestr("x.npy", npy_header((10**9, 10**9)))
    fails(capsys, 2, "run", source, "--params", tmp_path / "huge.npz", says="x.npy: its header declares")


def test_truncated_npy(capsys, tmp_path, source):
    np.save(tmp_path / "x.npy", X)
    data = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "x.npy").write_bytes(data[:-5])
    fails(capsys, 2, "run", source, "--input", f"x={tmp_path / 'x.npy'}", says="but only 19 bytes follow")


def test_truncated_and_corrupt_npz(capsys, tmp_path, source):
    np.savez(tmp_path / "good.npz", x=X)
    data = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    fails(capsys, 2, "run", source, "--params", tmp_path / "cut.npz",
          says=f"cannot read --params {tmp_path / 'cut.npz'}: not a valid .npz archive")
    corrupt = bytearray(data)
    start = data.index(b"\x93NUMPY") + 128  # the array's bytes, after its header: the CRC no longer matches
    corrupt[start:start + 8] = b"\xff" * 8
    (tmp_path / "crc.npz").write_bytes(bytes(corrupt))
    fails(capsys, 2, "run", source, "--params", tmp_path / "crc.npz", says="Bad CRC-32")


def test_npz_with_a_member_that_is_not_an_array(capsys, tmp_path, source):
    with zipfile.ZipFile(tmp_path / "odd.npz", "w") as archive:
        archive.writestr("notes.txt", "hello")
    fails(capsys, 2, "run", source, "--params", tmp_path / "odd.npz", says="its member notes.txt is not an .npy array")


def test_npy_of_python_objects_is_not_unpickled(capsys, tmp_path, source):
    np.save(tmp_path / "o.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    fails(capsys, 2, "run", source, "--input", f"x={tmp_path / 'o.npy'}", says="holds Python objects")


# --- numbers on the command line ------------------------------------------------------------


@pytest.mark.parametrize("args, says", [
    (["run", "--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (["build", "--opt-level", "-5"], "argument --opt-level: expected 0, 1, 2, 3 or 4 (as TVM), got '-5'"),
    (["build", "--opt-level", "5"], "got '5'"),
])
def test_out_of_range_numbers_are_usage_errors(capsys, source, args, says):
    with pytest.raises(SystemExit) as exit_:
        main([args[0], str(source), *args[1:]])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_opt_level_in_range_is_taken(capsys, source):
    status, out, err = relaylens(capsys, "build", source, "--opt-level", "0")
    assert status == 0 and "add(" in out, err


# --- ONNX models ----------------------------------------------------------------------------


def test_import_of_a_missing_file_or_a_folder_is_a_usage_error(capsys, tmp_path):
    fails(capsys, 2, "import", tmp_path / "nope.onnx", says=f"relaylens: cannot read {tmp_path / 'nope.onnx'}: No such file")
    fails(capsys, 2, "import", tmp_path, says=f"relaylens: cannot read {tmp_path}: Is a directory")


def external_model(folder: Path, location: str, **entries) -> Path:
    """A one-Add model whose weight `w` (four float32 ones) lives in external data at `location`."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value=location)
    for key, value in entries.items():
        weight.external_data.add(key=key, value=str(value))
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [weight])
    path = folder / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_external_data_is_read_from_the_models_folder(capsys, tmp_path):
    (tmp_path / "w.bin").write_bytes(b"junk" + np.arange(4, dtype=np.float32).tobytes())
    model = external_model(tmp_path, "w.bin", offset=4, length=16)
    status, _, err = relaylens(capsys, "import", model, "-o", tmp_path / "m.relay")
    assert status == 0, err
    with np.load(tmp_path / "m.npz") as params:
        np.testing.assert_array_equal(params["w"], np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("location, says", [
    ("missing.bin", "tensor 'w' keeps its data in 'missing.bin', which does not exist"),
    ("../../etc/passwd", "keeps its data in '../../etc/passwd', outside the model's folder"),
    ("/etc/passwd", "keeps its data in '/etc/passwd', an absolute path"),
    ("link.bin", "keeps its data in 'link.bin', outside the model's folder"),
    ("short.bin", "at offset 0, length 16, but the file holds 8 bytes"),
])
def test_bad_external_data_is_an_error_in_the_model(capsys, tmp_path, location, says):
    (tmp_path / "link.bin").symlink_to("/etc/passwd")
    (tmp_path / "short.bin").write_bytes(b"\0" * 8)
    model = external_model(tmp_path, location, length=16)
    fails(capsys, 1, "import", model, "-o", tmp_path / "m.relay", says=says)
    # the message names the model, then the tensor and its location
    status, _, err = relaylens(capsys, "import", model, "-o", tmp_path / "m.relay")
    assert err.startswith(f"{model}: error: tensor 'w' keeps its data in '{location}'")
    assert not (tmp_path / "m.relay").exists()


@pytest.mark.parametrize("fields, says", [
    ({"dims": [1000], "raw_data": b"\0" * 4}, "tensor 'w' of shape [1000] needs 4000 bytes of data but holds 4"),
    ({"dims": [10**6, 10**6]}, "needs 1000000000000 values of data but holds 0"),
    ({"dims": [4], "float_data": [1.0]}, "needs 4 values of data but holds 1"),
    ({"dims": [-3]}, "tensor 'w' has a negative dimension: [-3]"),
])
def test_initializer_whose_data_does_not_fill_its_shape(capsys, tmp_path, fields, says):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, **fields)
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    fails(capsys, 1, "import", tmp_path / "m.onnx", "-o", tmp_path / "m.relay", says=says)


def test_a_program_too_big_for_memory_is_an_error_in_it(capsys, tmp_path):
    path = tmp_path / "big.relay"
    # 640 GB: within the element budget, beyond this machine and the tests' address-space cap
    path.write_text('#[version = "0.0.5"]\ndef @main() {\n  zeros(shape=[400000, 400000], dtype="float32")\n}\n')
    fails(capsys, 1, "run", path, says=f"{path}: error: not enough memory to run @main")


def test_a_tensor_over_the_element_budget_is_an_error_at_its_call(capsys, tmp_path):
    path = tmp_path / "huge.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main() {\n  zeros(shape=[1000000000, 1000000000], dtype="float32")\n}\n')
    code = main(["run", str(path)])
    err = capsys.readouterr().err
    assert code == 1 and f"{path}:3:3: error: zeros: the result would have 1e+18 elements" in err, err


def test_a_random_input_too_big_for_memory_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "big.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(1000000000, 1000000000), float32]) {\n'
                    '  add(%x, 1f)\n}\n')
    fails(capsys, 2, "run", path, "--interp",
          says="relaylens: cannot make a random input for %x: Tensor[(1000000000, 1000000000), float32] does not "
               "fit in memory")
