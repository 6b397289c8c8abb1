"""The build driver, provenance and the build/explain commands, on the bundled example
and on the corpus (the span invariant after every pass)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from relaylens.compiler.build import build_text, relay_build_passes
from relaylens.compiler.cli import main
from relaylens.compiler.ir import Call, Function, Op
from relaylens.compiler.ir.functor import children, post_order
from relaylens.compiler.provenance import Provenance
from relaylens.compiler.transform import Sequential, get_pass
from relaylens.compiler.transform.span_check import spanless

ROOT = Path(__file__).resolve().parents[1]
MNIST = ROOT / "examples" / "mnist.relay"


@pytest.fixture(scope="module")
def mnist():
    return build_text(MNIST.read_text(), "mnist.relay", strict=True)


def _outside_primitive(mod) -> list[str]:
    def expand(e):
        return () if isinstance(e, Function) and e.is_primitive else children(e)

    return [n.op.name for f in mod.functions.values() for n in post_order(f, expand)
            if isinstance(n, Call) and isinstance(n.op, Op)]


def _members(name: str) -> list[str]:
    p = get_pass(name)
    return [q.name for q in p.passes] if isinstance(p, Sequential) else [name]


def test_relay_build_pipeline_on_the_example(mnist):
    assert mnist.ok, [d.message for d in mnist.diagnostics]
    ran = [s.pass_name for s in mnist.snapshots]
    assert ran[0] == "input"  # then the pipeline, with the InferType runs passes require
    members = [m for n in relay_build_passes(3) for m in _members(n)]  # a sequence's snapshots are its members
    assert [n for n in ran[1:] if n != "InferType"] == [n for n in members if n != "InferType"]
    assert _outside_primitive(mnist.module) == []
    names = set(mnist.fused_names.values())
    assert "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu" in names
    assert "tvmgen_default_fused_nn_max_pool2d" in names
    for snap in mnist.snapshots:
        assert spanless(snap.module) == [], f"a span was lost in {snap.pass_name}"


def test_provenance_of_an_add_that_was_fused(mnist):
    prov = Provenance(mnist)
    source = prov.source
    offset = source.offset(7, 8)  # `add(%0, %conv1_bias)`, layer conv1/Add
    key = prov.key_at(offset)
    assert source.text[key[0]:key[1]].startswith("add(%0, %conv1_bias)")
    assert prov.layers(key) == ["conv1/Add"]
    name, func = prov.fused_function(key)
    assert name == "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu" and func.is_primitive
    stages = [stage.pass_name for stage, nodes in prov.changes(key)]
    assert "FuseOps" in stages
    fuse_stage = next(stage for stage, _ in prov.changes(key) if stage.pass_name == "FuseOps")
    line, text = fuse_stage.snippet(fuse_stage.by_key[key][0])
    assert text.startswith("add(%") and line > 0
    assert fuse_stage.printed()[0].splitlines()[line - 1].strip().startswith(("%", "add("))


def test_numerics_unchanged_through_the_pipeline(mnist):
    interp = pytest.importorskip("relaylens.compiler.interpreter")
    rng = np.random.default_rng(0)
    before, after = mnist.snapshots[0].module, mnist.module
    args = [rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
            for p in before["main"].params]
    want = interp.interpret(before, *args)
    got = interp.interpret(after, *args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_build_command_prints_every_snapshot(capsys):
    assert main(["build", str(MNIST), "--passes", "InferType,FuseOps", "--print-after-all"]) == 0
    out = capsys.readouterr().out
    banners = [line for line in out.splitlines() if line.startswith("// after ")]
    assert banners == ["// after input", "// after InferType (unchanged)",
                       "// after InferType (unchanged)", "// after FuseOps"]  # FuseOps requires InferType
    assert "Primitive=1" in out and "span=conv1/Conv:0:0" in out


def test_build_command_unknown_pass(capsys):
    assert main(["build", str(MNIST), "--passes", "FuseOpz"]) == 1
    err = capsys.readouterr().err
    assert "unknown pass 'FuseOpz'" in err and "FuseOps" in err


def test_explain_command(capsys):
    assert main(["explain", f"{MNIST}:7:8"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("add(%0, %conv1_bias)")
    assert "frontend layer: conv1/Add" in out
    assert "after FuseOps" in out
    assert "fused into: tvmgen_default_fused_nn_contrib_conv2d_NCHWc_add_nn_relu" in out


def test_explain_bad_location(capsys):
    assert main(["explain", f"{MNIST}:x:1"]) == 2
    assert main(["explain", f"{MNIST}:1:1"]) == 2
    assert "no expression at" in capsys.readouterr().err


def test_explain_positions_start_at_one_and_stay_on_their_line(capsys):
    """`:0:0` explained @main (offset arithmetic from line 0), and a column past the end of
    its line explained whatever the offset reached below."""
    assert main(["explain", f"{MNIST}:0:0"]) == 2
    assert "LINE and COL start at 1" in capsys.readouterr().err
    line = MNIST.read_text().splitlines()[6]
    assert main(["explain", f"{MNIST}:7:{len(line) + 40}"]) == 2
    assert f"line 7 has {len(line)} characters" in capsys.readouterr().err
    assert main(["explain", f"{MNIST}:7:{len(line) + 1}"]) == 0  # the end of the line: a cursor's place
