"""The golden pass-test runner: one case file in, pass/fail with a message that names
the case file and line, shows the pass output and the diff against what was expected.

A case file (format in tests/passes/README.md) holds a RUN line naming the passes, the
input module, and either an `// EXPECTED:` module or FileCheck `// CHECK` lines.
`check_case(path)` runs it and checks, every time:

1. the input parses, and the passes leave the input module unchanged;
2. the span invariant (transform/span_check.py) before and after;
3. the output typechecks whenever the input did;
4. the same values before and after on random inputs (reference interpreter) when the
   input runs (tensors in, tensors out);
5. the `// EXPECTED:` module, compared structurally (with the frontend-layer origins of
   every node when the expected text writes `span=` comments), or `// EXPECTED: unchanged`
   (the pass returns its very input), or the CHECK lines, matched by the `filecheck`
   package (a Python port of LLVM FileCheck) against the output printed with types and
   spans, as `relaylens build --passes` prints it.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from relaylens.compiler.interpreter import interpret
from relaylens.compiler.interpreter.interpreter import InterpreterError
from relaylens.compiler.ir import LayerSpan, sequential
from relaylens.compiler.ir.functor import ExprMutator
from relaylens.compiler.ir.module import IRModule
from relaylens.compiler.ir.structural_equal import first_mismatch
from relaylens.compiler.ir.types import TensorType, TupleType
from relaylens.compiler.parser import parse
from relaylens.compiler.printer import print_module
from relaylens.compiler.transform import PassContext, get_pass
from relaylens.compiler.transform.bind_params import bind_params_by_name
from relaylens.compiler.transform.span_check import spanless
from relaylens.compiler.typing import infer_types

CASES = Path(__file__).parent / "passes"
FILECHECK = Path(sys.executable).with_name("filecheck")
RTOL = ATOL = 1e-4
# the source names spans print (`span=input.relay:LINE:COL`, LINE the case file's line): the
# same for every case, so CHECK lines never match the case file's own name
SOURCE_NAMES = {"input": "input.relay", "expected module": "expected.relay"}


class CaseError(AssertionError):
    """A failed case: the message starts with `file:line:` and says what to fix."""


@dataclass
class Case:
    path: Path
    passes: list[tuple[str, dict]]  # (pass name, constructor keywords)
    opt_level: int = 3
    config: dict = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    xfail: str | None = None
    input: str = ""  # the file up to `// EXPECTED:`, every line in place
    expected: str | None = None  # the file from `// EXPECTED:` on, earlier lines blanked
    expected_line: int = 0
    unchanged: bool = False
    checks: bool = False
    run_line: int = 1

    @property
    def name(self) -> str:
        return self.path.stem

    def where(self, line: int) -> str:
        root = CASES.parents[1]
        shown = self.path.relative_to(root) if self.path.is_relative_to(root) else self.path
        return f"{shown}:{line}"


def _json(text: str, case: Case, line: int):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseError(f"{case.where(line)}: RUN option value {text!r} is not JSON ({e.msg})") from None


def _run_line(text: str, case: Case, line: int) -> None:
    """`A key=JSON | B --opt-level N --config KEY=JSON`: passes in order with their
    constructor keywords; the flags hold for the whole run."""
    try:
        _run_tokens(shlex.split(text), case, line)
    except (IndexError, ValueError) as e:
        raise CaseError(f"{case.where(line)}: cannot read the RUN line ({e or 'a flag without its value'})") from None
    if not case.passes:
        raise CaseError(f"{case.where(line)}: the RUN line names no pass")


def _run_tokens(tokens: list[str], case: Case, line: int) -> None:
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "|":
            pass
        elif tok == "--opt-level":
            i += 1
            case.opt_level = int(tokens[i])
        elif tok == "--config":
            i += 1
            key, _, value = tokens[i].partition("=")
            case.config[key] = _json(value, case, line)
        elif "=" in tok:
            if not case.passes:
                raise CaseError(f"{case.where(line)}: option '{tok}' before any pass")
            key, _, value = tok.partition("=")
            case.passes[-1][1][key] = _json(value, case, line)
        else:
            case.passes.append((tok, {}))
        i += 1


def load_case(path: Path) -> Case:
    lines = path.read_text().split("\n")
    case = Case(path, [])
    cut = len(lines)
    for n, line in enumerate(lines, 1):
        if m := re.match(r"//\s*RUN:(.*)$", line):
            case.run_line = n
            _run_line(m.group(1), case, n)
        elif m := re.match(r"//\s*bind:(.*)$", line):
            for item in m.group(1).split(","):
                if item.strip():
                    pname, _, kind = item.partition("=")
                    case.bind[pname.strip()] = kind.strip()
        elif m := re.match(r"//\s*XFAIL:(.*)$", line):
            case.xfail = m.group(1).strip()
        elif re.match(r"//\s*CHECK(-NEXT|-NOT|-LABEL|-SAME|-DAG|-EMPTY)?:", line.strip()):
            case.checks = True
        elif m := re.match(r"//\s*EXPECTED:(.*)$", line):
            cut = n - 1
            case.expected_line = n
            case.unchanged = m.group(1).strip() == "unchanged"
            break
    if not case.passes:
        raise CaseError(f"{case.where(1)}: no '// RUN:' line")
    if case.expected_line and case.checks:
        raise CaseError(f"{case.where(case.expected_line)}: a case has EXPECTED or CHECK lines, not both")
    if not case.expected_line and not case.checks:
        raise CaseError(f"{case.where(len(lines))}: no '// EXPECTED:' block and no CHECK line")
    case.input = "\n".join(lines[:cut])
    if case.expected_line and not case.unchanged:
        case.expected = "\n" * cut + "\n".join(lines[cut:])
    return case


# --- modules --------------------------------------------------------------------------


def draw(kind: str, shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """A bound parameter's value: positive uniform [0.5, 1), negative its negation,
    zeros, or normal (standard normal)."""
    values = {"positive": lambda: rng.uniform(0.5, 1, shape), "negative": lambda: -rng.uniform(0.5, 1, shape),
              "zeros": lambda: np.zeros(shape), "normal": lambda: rng.standard_normal(shape)}
    if kind not in values:
        raise KeyError(f"unknown bind kind '{kind}' (known: {', '.join(values)})")
    return np.asarray(values[kind]()).astype(dtype)


def read_module(case: Case, text: str, what: str, line: int) -> IRModule:
    """`text` parsed (its lines are the file's lines) with the `// bind:` parameters bound
    to values drawn alike for the input and the expected module."""
    result = parse(text, SOURCE_NAMES[what])
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        raise CaseError(f"{case.where(line)}: the {what} does not parse:\n"
                        + "\n".join(d.render() for d in errors))
    mod = result.module
    if not case.bind:
        return mod
    rng = np.random.default_rng(sum(map(ord, case.name)))
    params = {p.name: p for p in mod["main"].params}
    arrays = {}
    for pname, kind in case.bind.items():
        if pname not in params:
            raise CaseError(f"{case.where(line)}: // bind: @main has no parameter %{pname}")
        ty = params[pname].type_annotation
        try:
            arrays[pname] = draw(kind, tuple(int(d) for d in ty.shape), ty.dtype, rng)
        except KeyError as e:
            raise CaseError(f"{case.where(line)}: // bind: {e.args[0]}") from None
    mod, errors = bind_params_by_name(mod, arrays)
    if errors:
        raise CaseError(f"{case.where(line)}: // bind: " + "; ".join(d.message for d in errors))
    return mod


def run_passes(case: Case, mod: IRModule) -> IRModule:
    with PassContext(opt_level=case.opt_level, config=dict(case.config)):
        for name, kwargs in case.passes:
            try:
                p = get_pass(name)
            except KeyError as e:
                raise CaseError(f"{case.where(case.run_line)}: {e.args[0]}") from None
            mod = (type(p)(**kwargs) if kwargs else p)(mod)
    return mod


class _Layers(ExprMutator):
    """Every node with only the frontend-layer origins of its span (None if it has none):
    document positions differ between the input and the expected text."""

    def visit_default(self, expr):
        new = self.rebuild(expr)
        span = sequential(*(o for o in (expr.span.origins() if expr.span else ()) if isinstance(o, LayerSpan)))
        return replace(new, span=span)

    visit_var = visit_constant = visit_call = visit_tuple = visit_tuple_get_item = visit_default
    visit_let = visit_if = visit_function = visit_default


def layers(mod: IRModule) -> IRModule:
    return mod.with_functions({gv: _Layers().visit(f) for gv, f in mod.functions.items()})


# --- values -----------------------------------------------------------------------------


def _static_tensor(ty) -> bool:
    return isinstance(ty, TensorType) and all(isinstance(d, int) or str(d).isdigit() for d in ty.shape)


def _runnable(mod: IRModule) -> bool:
    if "main" not in mod:
        return False
    main = mod["main"]
    ret = main.body.ty
    outs = ret.fields if isinstance(ret, TupleType) else (ret,)
    return all(_static_tensor(p.ty) for p in main.params) and all(_static_tensor(t) for t in outs)


def random_args(mod: IRModule, rng: np.random.Generator) -> list[np.ndarray]:
    args = []
    for p in mod["main"].params:
        shape, dtype = tuple(int(d) for d in p.ty.shape), p.ty.dtype
        if dtype.startswith("float"):
            args.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == "bool":
            args.append(rng.integers(0, 2, shape).astype(bool))
        else:
            info = np.iinfo(dtype)
            args.append(rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype))
    return args


def _flat(value) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [np.asarray(value)]


def check_values(case: Case, before: IRModule, after: IRModule) -> None:
    """Same dtypes, shapes and values on random inputs, when the input runs."""
    if not _runnable(before):
        return
    args = random_args(before, np.random.default_rng(0))
    try:
        want = _flat(interpret(before, *args))
    except InterpreterError:
        return  # the input itself cannot run here (an op without a reference)
    where = case.where(case.run_line)
    try:
        got = _flat(interpret(after, *args))
    except InterpreterError as e:
        raise CaseError(f"{where}: the input runs but the pass output does not: {e}") from None
    assert len(got) == len(want), f"{where}: {len(want)} outputs before the passes, {len(got)} after"
    for i, (w, g) in enumerate(zip(want, got)):
        assert (g.dtype, g.shape) == (w.dtype, w.shape), f"{where}: output {i} was {w.dtype}{w.shape}, is {g.dtype}{g.shape}"
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"{where}: output {i} changed value")


# --- the check --------------------------------------------------------------------------


def _type_errors(mod: IRModule) -> list[str]:
    return [d.message for d in infer_types(mod) if d.is_error]


def _diff(expected: str, got: str) -> str:
    """The whole pass output, each line marked as in a unified diff against the expected text."""
    lines = max(len(expected.splitlines()), len(got.splitlines()))
    return "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(), "expected", "pass output",
                                          n=lines, lineterm=""))


def filecheck(case: Case, output: str) -> str | None:
    """filecheck's complaint about `output` against the case file's CHECK lines, or None."""
    tool = FILECHECK if FILECHECK.exists() else shutil.which("filecheck")
    if tool is None:
        raise CaseError(f"{case.where(case.run_line)}: CHECK lines need the filecheck package "
                        "(pip install -e '.[test]')")
    done = subprocess.run([str(tool), str(case.path)], input=output, capture_output=True, text=True)
    return None if done.returncode == 0 else (done.stderr or done.stdout)


def check_case(path: Path) -> None:
    """Run the case file at `path` (see the module docstring); raise AssertionError (a
    CaseError for a malformed file or a wrong output) naming the file and line."""
    case = load_case(path)
    mod = read_module(case, case.input, "input", 1)
    typed = not _type_errors(mod)
    assert spanless(mod) == [], f"{case.where(1)}: the input breaks the span invariant: {spanless(mod)}"
    printed = print_module(mod, spans=True)
    out = run_passes(case, mod)
    shown = print_module(out, spans=True, types=True)
    where = case.where(case.run_line)
    assert print_module(mod, spans=True) == printed, f"{where}: the passes changed their input module"
    lost = spanless(out)
    assert lost == [], f"{where}: expressions without a span after the passes: {lost}\n{shown}"
    if typed:
        errors = _type_errors(out)
        assert errors == [], f"{where}: the output does not typecheck: {errors}\n{shown}"
        check_values(case, mod, out)
    if case.unchanged:
        if out is not mod:
            raise CaseError(f"{case.where(case.expected_line)}: expected the input back unchanged, got\n"
                            + _diff(print_module(mod), print_module(out)))
    elif case.expected is not None:
        expected = read_module(case, case.expected, "expected module", case.expected_line)
        infer_types(expected)
        spans = "span=" in case.expected
        a, b = (layers(out), layers(expected)) if spans else (out, expected)
        mismatch = first_mismatch(a, b, spans=spans)
        if mismatch is not None:
            raise CaseError(f"{case.where(case.expected_line)}: the output differs from the expected module: "
                            f"{mismatch}\n--- diff (expected -> pass output):\n"
                            + _diff(print_module(b, spans=spans), print_module(a, spans=spans)))
    else:
        complaint = filecheck(case, shown)
        if complaint is not None:
            raise CaseError(f"{where}: CHECK lines do not match:\n{complaint}\n--- pass output:\n{shown}")


def case_files() -> list[Path]:
    return sorted(CASES.rglob("*.relay"))
