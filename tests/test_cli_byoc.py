"""`relaylens build --patterns FILE --target T [--target-ops A,B]`: the BYOC passes from
the command line, their errors at their place, and the usage errors (docs/byoc.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from byoc_cases import HEADER, NPU_MODEL_BODY, NPU_TABLE
from relaylens.compiler.cli import main

MODEL = HEADER + NPU_MODEL_BODY
TABLE = NPU_TABLE
BYOC = "MergeComposite,AnnotateTarget,MergeCompilerRegions,PartitionGraph"


def relaylens(capsys, *args) -> tuple[int, str, str]:
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "model.relay").write_text(MODEL)
    (tmp_path / "table.relay").write_text(TABLE)
    return tmp_path / "model.relay", tmp_path / "table.relay"


def test_build_partitions_for_the_target(capsys, files):
    model, table = files
    status, out, err = relaylens(capsys, "build", model, "--passes", BYOC, "--patterns", table, "--target", "mynpu")
    assert status == 0, err
    assert 'Compiler="mynpu", global_symbol="tvmgen_default_mynpu_main_0"' in out
    assert 'Composite="mynpu.conv2d_bias_relu"' in out and 'Composite="mynpu.add_relu"' in out
    assert "@tvmgen_default_mynpu_main_3(%1, %0)" in out


def test_target_ops_offload_single_ops(capsys, files):
    model, _ = files
    status, out, err = relaylens(capsys, "build", model, "--passes", "AnnotateTarget,MergeCompilerRegions,PartitionGraph",
                                 "--target", "mynpu", "--target-ops", "exp")
    assert status == 0, err
    assert "def @tvmgen_default_mynpu_main_" in out
    main_text = out.split("def @main", 1)[1].split("\n}", 1)[0]
    assert "exp(" not in main_text and "nn.conv2d(" in main_text


def test_errors_in_the_table_are_placed_in_the_table(capsys, files):
    model, table = files
    table.write_text('def @p(%x, Constants=["w"]) { nn.relu(%x) }\n')
    status, _, err = relaylens(capsys, "build", model, "--passes", BYOC, "--patterns", table, "--target", "mynpu")
    assert status == 1
    assert f"{table}:1:1: error: @p: Constants names 'w'" in err
    assert "Traceback" not in err


def test_a_mistyped_operator_in_the_table_is_an_error_not_a_silent_miss(capsys, files):
    """`relaylens check table.relay` says `nn.relux` is unknown; the build that uses the
    table said nothing, partitioned nothing and exited 0."""
    model, table = files
    table.write_text("def @add_relu(%x, %y) {\n  nn.relux(add(%x, %y))\n}\n")
    status, _, err = relaylens(capsys, "build", model, "--passes", BYOC, "--patterns", table, "--target", "mynpu")
    assert status == 1, err
    assert f"{table}:2:3: error: unknown operator nn.relux (did you mean nn.relu?)" in err


@pytest.mark.parametrize("args, message", [
    (["--patterns", "missing.relay"], "--patterns missing.relay: cannot read it"),
    (["--target-ops", "exp"], "--target-ops needs --target"),
    (["--target", ","], "--target needs at least one name"),
])
def test_usage_errors(capsys, files, args, message):
    model, _ = files
    status, _, err = relaylens(capsys, "build", model, "--passes", BYOC, *args)
    assert status == 2
    assert message in err


def test_a_model_that_names_its_table_is_built_partitioned(tmp_path: Path, capsys) -> None:
    """The `// relaylens: --patterns FILE --target T` line the editor reads (docs/byoc.md) is
    the command line's too, the table's path relative to the model; its mistakes are errors
    at the line; options on the command line win."""
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "t.relay").write_text(TABLE)
    model = tmp_path / "model.relay"
    model.write_text(MODEL.replace("def @main", "// relaylens: --patterns tables/t.relay --target mynpu\ndef @main"))
    status, out, err = relaylens(capsys, "build", model, "--no-params")
    assert (status, err) == (0, "")
    main_text = out.split("def @main", 1)[1].split("\n}", 1)[0]
    assert 'Compiler="mynpu"' in out and "Primitive=1" in main_text  # partitioned, then FuseOps (relay.build's)
    status, out, _ = relaylens(capsys, "build", model, "--no-params", "--passes", BYOC, "--target", "other",
                               "--patterns", tmp_path / "tables" / "t.relay")
    assert status == 0 and 'Compiler="other"' in out and 'Compiler="mynpu"' not in out
    model.write_text(MODEL.replace("def @main", "// relaylens: --patterns missing.relay --target mynpu\ndef @main"))
    status, out, err = relaylens(capsys, "build", model, "--no-params")
    assert status == 1 and out == ""
    assert err.startswith(f"{model}:2:1: error: relaylens directive: --patterns missing.relay: cannot read ")
