"""ConvertLayout from the command line: the desired layouts through --config, and the
errors a wrong one gives (one line at the call, exit 1, the module left as it was)."""

from pathlib import Path

from relaylens.compiler.cli import main

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 6, 6), float32], %w: Tensor[(8, 8, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);
  nn.relu(%0)
}
"""
KEY = "relay.ConvertLayout.desired_layouts"


def build(capsys, tmp_path: Path, desired: str) -> tuple[int, str, str]:
    path = tmp_path / "m.relay"
    path.write_text(MODEL)
    code = main(["build", str(path), "--passes", "ConvertLayout", "--config", f"{KEY}={desired}"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_config_key_converts_to_nhwc(capsys, tmp_path):
    code, out, err = build(capsys, tmp_path, '{"nn.conv2d": ["NHWC", "default"]}')
    assert code == 0, err
    assert 'layout_transform(%x, src_layout="NCHW", dst_layout="NHWC")' in out
    assert 'layout_transform(%w, src_layout="OIHW", dst_layout="HWIO")' in out
    assert 'data_layout="NHWC", kernel_layout="HWIO")' in out


def test_an_unknown_layout_is_an_error_at_the_call(capsys, tmp_path):
    code, out, err = build(capsys, tmp_path, '{"nn.conv2d": ["NXYZ", "default"]}')
    assert code == 1 and "Traceback" not in err
    assert err.splitlines()[0].endswith("m.relay:3:8: error: ConvertLayout: nn.conv2d layout NXYZ is not supported")


def test_a_tiled_layout_needs_a_kernel_layout(capsys, tmp_path):
    code, out, err = build(capsys, tmp_path, '{"nn.conv2d": ["NCHW4c", "default"]}')
    assert code == 1 and 'nn.conv2d with data layout NCHW4c needs a kernel layout, not "default"' in err


def test_a_malformed_config_value_says_what_it_wants(capsys, tmp_path):
    code, out, err = build(capsys, tmp_path, '["NHWC"]')
    assert code == 1
    assert f'{KEY} must map op names to lists of layouts, e.g. {{"nn.conv2d": ["NHWC", "default"]}}' in err


def test_a_tiled_layout_makes_the_nchwc_op(capsys, tmp_path):
    code, out, err = build(capsys, tmp_path, '{"nn.conv2d": ["NCHW4c", "OIHW4i4o"]}')
    assert code == 0, err
    assert "nn.contrib_conv2d_NCHWc(" in out and 'kernel_layout="OIHW4i4o"' in out


# ---- TVM's LayoutConfig(skip_layers=...) as a pass config

SKIP = "relay.transform.LayoutConfig.skip_layers"


def build_skipping(capsys, tmp_path: Path, skip: str) -> tuple[int, str, str]:
    path = tmp_path / "m.relay"
    path.write_text(MODEL)
    code = main(["build", str(path), "--passes", "ConvertLayout",
                 "--config", f'{KEY}={{"nn.conv2d": ["NHWC", "default"]}}',
                 "--config", f"{SKIP}={skip}"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_skipped_layer_keeps_its_layouts(capsys, tmp_path):
    code, out, err = build_skipping(capsys, tmp_path, "[0]")
    assert code == 0, err
    assert "layout_transform" not in out and "NHWC" not in out
    code, out, err = build_skipping(capsys, tmp_path, "[1]")  # no layer 1: layer 0 converts
    assert code == 0 and 'data_layout="NHWC", kernel_layout="HWIO")' in out


def test_malformed_skip_layers_say_what_they_want(capsys, tmp_path):
    code, out, err = build_skipping(capsys, tmp_path, '"0"')
    assert code == 1 and "Traceback" not in err
    assert f"{SKIP} must be a list of layer indices, e.g. [0]; got '0'" in err
