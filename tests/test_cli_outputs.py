"""Nothing lost: the one rule of compiler/cli/outputs.py, as every command that writes obeys it.

Never replace an input, never write two outputs to one path, never replace an existing
file the command did not write unless `--force` says so (a build directory's own
artefacts, listed in its manifest and unchanged, are refreshed); every refusal is exit 2,
names the file and the flag, and leaves every file as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.cli import UsageError, main
from relaylens.compiler.lower.artifacts import FILES
from relaylens.compiler.cli.outputs import BUILD_MANIFEST, OutputPlan, commit_build_dir, staging_dir, write_files

REPO = Path(__file__).resolve().parents[1]
ONNX_MODEL = REPO / "examples" / "small_cnn.onnx"

SOURCE = """#[version = "0.0.5"]
// a comment only the source has
def @main(%x: Tensor[(2), float32]) {
  add(%x, %x)
}
"""


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones included) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(capsys, folder: Path, *args, says: str) -> str:
    """Run a command that must be refused: exit 2, a one-line message containing `says`,
    and not one byte changed under `folder`."""
    before = snapshot(folder)
    status, out, err = relaylens(capsys, *args)
    assert (status, out) == (2, ""), err
    assert err.count("\n") == 1 and says in err, err
    assert snapshot(folder) == before
    return err


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "x.relay"
    path.write_text(SOURCE)
    return path


@pytest.fixture
def onnx_model(tmp_path: Path) -> Path:
    pytest.importorskip("onnx")
    path = tmp_path / "m.onnx"
    shutil.copy(ONNX_MODEL, path)
    return path


# --- import ---------------------------------------------------------------------------------


def test_import_never_replaces_the_model(capsys, tmp_path, onnx_model):
    refused(capsys, tmp_path, "import", onnx_model, "-o", onnx_model, "--force",
            says=f"refusing to overwrite the input {onnx_model}: -o {onnx_model} names it")
    refused(capsys, tmp_path, "import", onnx_model, "--params", onnx_model, "-o", tmp_path / "a.relay",
            says=f"--params {onnx_model} names it")


def test_import_never_writes_text_and_params_to_one_path(capsys, tmp_path, onnx_model):
    out = tmp_path / "out.npz"
    refused(capsys, tmp_path, "import", onnx_model, "-o", out, "--force",
            says=f"-o {out} and the default --params {out} both name {out}")
    refused(capsys, tmp_path, "import", onnx_model, "-o", tmp_path / "a.relay", "--params", tmp_path / "a.relay",
            says="both name")


def test_import_replaces_existing_files_only_with_force(capsys, tmp_path, onnx_model):
    relay, params = tmp_path / "existing.relay", tmp_path / "existing.npz"
    params.write_bytes(b"the user's own archive")
    refused(capsys, tmp_path, "import", onnx_model, "-o", relay,
            says=f"refusing to replace {params} (the default --params {params}): it exists; add --force")
    assert not relay.exists()  # the text was not written either
    status, _, err = relaylens(capsys, "import", onnx_model, "-o", relay, "--force")
    assert status == 0, err
    assert relay.read_text().startswith("#[version")
    with np.load(params) as archive:
        assert archive.files
    refused(capsys, tmp_path, "import", onnx_model, "-o", relay, says=f"refusing to replace {relay} (-o {relay})")


def test_import_never_replaces_its_external_data(capsys, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="w.bin")
    np.ones(4, np.float32).tofile(tmp_path / "w.bin")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "e.onnx")
    refused(capsys, tmp_path, "import", tmp_path / "e.onnx", "-o", tmp_path / "e.relay",
            "--params", tmp_path / "w.bin", "--force", says=f"refusing to overwrite the input {tmp_path / 'w.bin'}")


# --- run ------------------------------------------------------------------------------------


def test_run_never_replaces_its_source_or_inputs(capsys, tmp_path, source):
    refused(capsys, tmp_path, "run", source, "-o", source, "--force",
            says=f"refusing to overwrite the input {source}: -o {source} names it (choose another path)")
    np.save(tmp_path / "a.npy", np.ones(2, np.float32))
    refused(capsys, tmp_path, "run", source, "--input", f"x={tmp_path / 'a.npy'}", "-o", tmp_path / "a.npy",
            "--force", says="refusing to overwrite the input")
    np.savez(tmp_path / "p.npz", x=np.ones(2, np.float32))
    refused(capsys, tmp_path, "run", source, "--params", tmp_path / "p.npz", "-o", tmp_path / "p.npz",
            "--force", says="refusing to overwrite the input")


def test_run_replaces_an_existing_output_only_with_force(capsys, tmp_path, source):
    out = tmp_path / "out.npz"
    out.write_bytes(b"precious")
    refused(capsys, tmp_path, "run", source, "--interp", "-o", out,
            says=f"refusing to replace {out} (-o {out}): it exists; add --force to replace it")
    status, _, err = relaylens(capsys, "run", source, "--interp", "-o", out, "--force")
    assert status == 0, err
    with np.load(out) as result:
        assert result["output"].shape == (2,)


def test_run_output_in_a_missing_folder_is_refused_first(capsys, tmp_path, source):
    refused(capsys, tmp_path, "run", source, "-o", tmp_path / "no" / "out.npz",
            says=f"there is no directory {tmp_path / 'no'}")


# --- print ----------------------------------------------------------------------------------


def test_print_replaces_another_existing_file_only_with_force(capsys, tmp_path, source):
    other = tmp_path / "other.relay"
    other.write_text("// mine\n")
    refused(capsys, tmp_path, "print", source, "-o", other, says=f"refusing to replace {other}")
    assert relaylens(capsys, "print", source, "-o", other, "--force")[0] == 0
    assert "add(%x, %x)" in other.read_text()


# --- build ----------------------------------------------------------------------------------


def test_build_never_replaces_its_source_in_the_build_dir(capsys, tmp_path):
    build = tmp_path / "D"
    build.mkdir()
    (build / "module.relay").write_text(SOURCE)
    refused(capsys, tmp_path, "build", build / "module.relay", "-o", build, "--force",
            says=f"refusing to overwrite the input {build / 'module.relay'}: -o {build} names it")
    assert "// a comment only the source has" in (build / "module.relay").read_text()


def test_build_refreshes_its_own_artefacts_and_nothing_else(capsys, tmp_path, source):
    build = tmp_path / "D"
    status, _, err = relaylens(capsys, "build", source, "-o", build)
    assert status == 0, err
    manifest = json.loads((build / BUILD_MANIFEST).read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in build.iterdir() if p.name != BUILD_MANIFEST)
    assert set(manifest["files"]) <= set(FILES)  # the plan checked every name the build wrote
    status, _, err = relaylens(capsys, "build", source, "-o", build)  # its own files: refreshed
    assert status == 0, err
    with (build / "module.ll").open("a") as f:
        f.write("; edited by hand\n")
    refused(capsys, tmp_path, "build", source, "-o", build,
            says=f"refusing to replace {build / 'module.ll'} (-o {build}): relaylens build did not write it, "
                 f"or it changed since; add --force")
    status, _, err = relaylens(capsys, "build", source, "-o", build, "--force")
    assert status == 0, err
    assert "edited by hand" not in (build / "module.ll").read_text()


def test_build_into_a_folder_of_someone_elses_files_needs_force(capsys, tmp_path, source):
    build = tmp_path / "E"
    build.mkdir()
    (build / "map.json").write_text("{}")
    refused(capsys, tmp_path, "build", source, "-o", build, says=f"refusing to replace {build / 'map.json'}")
    (build / BUILD_MANIFEST).write_text('{"written by": "relaylens build", "files": {"map.json": "0000"}}')
    refused(capsys, tmp_path, "build", source, "-o", build, says=f"refusing to replace {build / 'map.json'}")


def test_build_dir_that_is_a_file(capsys, tmp_path, source):
    refused(capsys, tmp_path, "build", source, "-o", source, says=f"{source} is not a directory")


def test_a_build_removes_what_an_older_build_wrote_and_this_one_does_not(tmp_path):
    build = tmp_path / "D"
    for names in (["a.txt", "b.txt"], ["a.txt"]):
        staged = staging_dir(build)
        for name in names:
            (staged / name).write_text(name)
        commit_build_dir(staged, build, names, ["a.txt", "b.txt"])
        assert not staged.exists()
    assert sorted(p.name for p in build.iterdir()) == [BUILD_MANIFEST, "a.txt"]
    (build / "c.txt").write_text("mine")  # not the build's: kept
    commit_build_dir(staging_dir(build), build, [], ["b.txt"])  # a.txt is no artefact of this build: kept
    assert sorted(p.name for p in build.iterdir()) == [BUILD_MANIFEST, "a.txt", "c.txt"]
    commit_build_dir(staging_dir(build), build, [], ["a.txt"])  # the manifest no longer lists a.txt: kept
    assert sorted(p.name for p in build.iterdir()) == [BUILD_MANIFEST, "a.txt", "c.txt"]


# --- the rule and the writer, directly --------------------------------------------------------


def test_plan_refuses_two_outputs_that_are_one_file_through_a_link(tmp_path):
    (tmp_path / "real.npz").write_bytes(b"")
    (tmp_path / "link.npz").symlink_to(tmp_path / "real.npz")
    plan = OutputPlan.of([], force=True)
    plan.add(tmp_path / "real.npz", "-o real.npz")
    plan.add(tmp_path / "link.npz", "--params link.npz")
    with pytest.raises(UsageError, match="-o real.npz and --params link.npz both name"):
        plan.check()


def test_write_files_is_all_or_nothing(tmp_path):
    (tmp_path / "a.txt").write_text("old")

    def fail(f):
        raise OSError(28, "No space left on device")

    with pytest.raises(UsageError, match="No space left on device"):
        write_files({tmp_path / "a.txt": lambda f: f.write(b"new"), tmp_path / "b.txt": fail})
    assert snapshot(tmp_path) == {"a.txt": b"old"}  # no temporary file left either
    write_files({tmp_path / "a.txt": lambda f: f.write(b"new"), tmp_path / "b.txt": lambda f: f.write(b"b")})
    assert snapshot(tmp_path) == {"a.txt": b"new", "b.txt": b"b"}


def test_a_build_keeps_an_older_artefact_that_was_edited(tmp_path):
    build = tmp_path / "D"
    staged = staging_dir(build)
    (staged / "b.txt").write_text("built")
    commit_build_dir(staged, build, ["b.txt"], ["b.txt"])
    (build / "b.txt").write_text("edited")
    commit_build_dir(staging_dir(build), build, [], ["b.txt"])
    assert (build / "b.txt").read_text() == "edited"
