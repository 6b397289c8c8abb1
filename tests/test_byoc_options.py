"""The BYOC passes' options from the PassContext config (transform/patterns/options.py):
what `--config` may say, and a clear diagnostic for what it may not."""

from __future__ import annotations

import pytest

from relaylens.compiler.transform import PassContext
from relaylens.compiler.transform.patterns import byoc_options


def options(**config):
    return byoc_options(PassContext(config={f"relay.byoc.{k}": v for k, v in config.items()}))


def test_targets_and_ops_in_both_spellings():
    opts = options(targets="a, b", ops="add,exp")
    assert opts.targets == ["a", "b"] and opts.ops == {"a": frozenset({"add", "exp"})} and not opts.diagnostics
    opts = options(targets=["a", "b"], ops={"b": ["nn.relu"]})
    assert opts.target == "a" and opts.ops == {"b": frozenset({"nn.relu"})}


def test_a_table_is_read_from_text_or_a_path(tmp_path):
    path = tmp_path / "t.relay"
    path.write_text("def @r(%x) { nn.relu(%x) }")
    assert [e.name for e in options(patterns=str(path)).table.entries] == ["r"]
    assert [e.name for e in options(patterns={"name": "x", "text": "def @e(%x) { exp(%x) }"}).table.entries] == ["e"]


@pytest.mark.parametrize("config, message", [
    ({"targets": 3}, "relay.byoc.targets must be"),
    ({"ops": ["add"]}, "no target takes them"),
    ({"targets": ["a"], "ops": 5}, "relay.byoc.ops must be"),
    ({"patterns": "/nonexistent/t.relay"}, "cannot read /nonexistent/t.relay"),
    ({"patterns": 7}, "relay.byoc.patterns must be"),
])
def test_bad_options_are_diagnostics(config, message):
    opts = options(**config)
    assert any(message in d.message for d in opts.diagnostics), opts.diagnostics
