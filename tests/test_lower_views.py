"""LLVM IR and assembly views with and without debug information: lower/codegen/views.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relaylens.compiler.driver import compile
from relaylens.compiler.lower.codegen.llvm_map import line_locations
from relaylens.compiler.lower.codegen.views import asm_view, ir_view
from relaylens.compiler.lower.runtime.assembly import assembly

MNIST = Path(__file__).resolve().parents[1] / "examples" / "mnist.relay"


@pytest.fixture(scope="module")
def lowered():
    return compile(MNIST.read_text(), str(MNIST), stop_after="llvm").lowered


def test_ir_without_debug_information_keeps_its_map_to_relay(lowered) -> None:
    for text in (lowered.llvm_ir, lowered.optimized_ir):
        full, clean = ir_view(text), ir_view(text, nodebug=True)
        assert "!dbg" not in clean.text and not re.search(r"^!|llvm\.dbg\.|#dbg_", clean.text, re.M)
        assert len(clean.text.splitlines()) < len(text.splitlines())
        # every instruction line keeps its Relay location: the same multiset of places
        assert sorted(clean.lines.values()) == sorted(line_locations(text).values()) == sorted(full.lines.values())
        for number, where in list(clean.lines.items())[:200]:  # and the line is that instruction, stripped
            assert clean.text.splitlines()[number - 1].strip() in re.sub(r"(,\s*| )!dbg !\d+", "", text)
        assert clean.functions.keys() == full.functions.keys()


def test_assembly_lines_map_to_the_relay_lines_of_their_kernel(lowered) -> None:
    asm = assembly(lowered.optimized_ir)
    full, clean = asm_view(asm), asm_view(asm, nodebug=True)
    assert ".loc" in full.text and not re.search(r"^\s*\.(loc|cfi_|file|section)\b", clean.text, re.M)
    relay = MNIST.read_text().splitlines()
    for view in (full, clean):
        lines = view.text.splitlines()
        assert view.lines and all(0 < line <= len(relay) for line, _ in view.lines.values())
        conv_lines = {i + 1 for i, text in enumerate(relay) if "nn.conv2d" in text}
        kernel = next(name for name in view.functions if "conv2d" in name and ".par" not in name)
        first, last = view.functions[kernel]
        assert lines[first - 1] == kernel + ":"
        inside = {view.lines[n][0] for n in range(first, last + 1) if n in view.lines}
        assert inside & conv_lines, inside
        assert view.function_at(first + 1) == kernel
