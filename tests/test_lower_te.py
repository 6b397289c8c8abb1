"""Tensor expressions (compiler/lower/te.py), their numpy evaluation (te_eval.py) and the
loop-nest IR helpers (loopnest.py)."""

from __future__ import annotations

import numpy as np
import pytest

from relaylens.compiler.lower.schedule import loopnest as ln
from relaylens.compiler.lower.te import evaluate as te_eval
from relaylens.compiler.lower.te import expr as te


def test_arithmetic_takes_the_dtype_of_the_expression_side():
    x = te.placeholder((4,), "float32", "x")
    e = x[0] * 2 + 1
    assert e.dtype == "float32" and isinstance(e.b, te.Const) and e.b.value == 1.0
    assert te.lt(x[0], 0).dtype == "bool"
    with pytest.raises(TypeError, match="dtype mismatch"):
        te.binary("add", x[0], te.placeholder((1,), "int32", "y")[0])
    with pytest.raises(TypeError, match="truth value"):
        bool(x[0])
    with pytest.raises(TypeError):
        x[0] < 1  # noqa: B015 (comparisons are te.lt & co., never Python's)


def test_indexing_checks_rank():
    x = te.placeholder((2, 3), "float32", "x")
    with pytest.raises(IndexError, match="2 dimensions, indexed with 1"):
        x[0]


def test_compute_and_reductions_evaluate_like_numpy():
    rng = np.random.default_rng(0)
    a = te.placeholder((3, 5), "float32", "a")
    b = te.placeholder((4, 5), "float32", "b")
    k = te.reduce_axis(5, "k")
    dense = te.compute((3, 4), lambda i, j: te.sum(a[i, k] * b[j, k], axis=[k]), "T_dense")
    relu = te.compute((3, 4), lambda i, j: te.maximum(dense[i, j], 0), "T_relu")
    k2 = te.reduce_axis(5, "k2")
    arg = te.compute((3,), lambda i: te.argmax(a[i, k2], k2, k2), "T_argmax")
    x, y = rng.standard_normal((3, 5)).astype("float32"), rng.standard_normal((4, 5)).astype("float32")
    got_relu, got_arg = te_eval.evaluate([relu, arg], {a: x, b: y})
    np.testing.assert_allclose(got_relu, np.maximum(x @ y.T, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_arg, x.argmax(axis=1))
    assert got_arg.dtype == np.int64
    assert te.post_order([relu]) == [a, b, dense, relu]


def test_select_reads_out_of_bounds_only_where_excluded():
    x = te.placeholder((4,), "float32", "x")
    pad = te.compute((6,), lambda i: te.select(te.all_of(te.ge(i, 1), te.lt(i, 5)), x[i - 1], 0.0), "T_pad")
    got, = te_eval.evaluate(pad, {x: np.arange(4, dtype="float32") + 1})
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, 0])


def test_integer_division_truncates_and_floor_ops_follow_python():
    a = te.placeholder((4,), "int32", "a")
    b = te.placeholder((4,), "int32", "b")
    ops = {"div": lambda x, y: np.trunc(x / y), "floordiv": np.floor_divide, "floormod": np.mod,
           "truncmod": np.fmod}
    x, y = np.array([7, -7, 7, -7], "int32"), np.array([2, 2, -2, -2], "int32")
    for op, ref in ops.items():
        t = te.compute((4,), lambda i: te.binary(op, a[i], b[i]), "T")
        got, = te_eval.evaluate(t, {a: x, b: y})
        np.testing.assert_array_equal(got, ref(x, y).astype("int32"), err_msg=op)


def test_loc_is_stamped_only_where_missing_and_substitute_replaces_by_identity():
    i = te.Var("i")
    inner = te.Binary("add", i, te.const(1, te.INDEX), te.INDEX, loc="producer")
    e = te.with_loc(inner * 2, "consumer")
    assert e.loc == "consumer" and e.a.loc == "producer" and e.b.loc == "consumer"
    j = te.Var("i")  # same name, another variable
    assert ln.print_expr(te.substitute(e, {j: te.const(5, te.INDEX)})) == "(i + 1) * 2"
    assert ln.print_expr(ln.simplify(te.substitute(e, {i: te.const(5, te.INDEX)}))) == "12"


def test_flat_index_and_printing():
    buf = te.Buffer("T_add", (2, 3, 4), "float32")
    i, j, k = te.Var("i"), te.Var("j"), te.Var("k")
    idx = ln.flat_index(buf.shape, (i, j, k))
    assert ln.print_expr(idx) == "(i * 3 + j) * 4 + k"
    assert ln.print_expr(ln.flat_index((5,), (te.const(0, te.INDEX),))) == "0"
    zero, one = te.const(0, te.INDEX), te.const(1, te.INDEX)  # each index simplified, each step folded
    assert ln.print_expr(ln.flat_index((2, 3, 4), (zero, j * 1 + zero, one))) == "j * 4 + 1"
    assert ln.print_expr(ln.flat_index((2, 3, 4), (one, te.const(2, te.INDEX) * one, k + zero))) == "20 + k"
    assert ln.print_expr(ln.flat_index((3, 4), (j * 1, one))) == "j * 4 + 1"
    body = ln.For(i, 2, ln.For(j, 3, ln.Store(buf, idx, te.const(1.0, "float32")), kind="vectorized"),
                  kind="parallel")
    f = ln.PrimFunc("f", (buf,), body)
    assert ln.print_func(f).splitlines() == [
        "def f(T_add: float32[2, 3, 4]):",
        "  for i in parallel(2):",
        "    for j in vectorized(3):",
        "      T_add[(i * 3 + j) * 4 + k] = float32(1.0)",
    ]
    assert [type(s).__name__ for s in ln.walk(body)] == ["For", "For", "Store"]


def test_transform_rebuilds_every_node_type_with_its_fields_and_shares_rewrites():
    """transform's own tables (by exact type) cover every node with children, rebuild each
    with its fields and place, and keep a node whose children did not change."""
    assert set(te._REBUILD) == set(te._CHILDREN)
    x, y = te.Var("x", "int64"), te.Var("y", "int64")
    t = te.placeholder((8,), "float32", "t")
    buf = te.Buffer("b", (8,), "float32")
    k = te.reduce_axis(8, "k")
    nodes = [te.Binary("add", x, y, "int64", loc="here"), te.Call("exp", (te.cast(x, "float32"),), "float32", loc="here"),
             te.Cast(x, "float32", loc="here"), te.Select(te.lt(x, y), te.cast(x, "float32"), te.cast(y, "float32"),
                                                          "float32", loc="here"),
             te.Load(t, (x,), "float32", loc="here"), te.BufferLoad(buf, x, "float32", loc="here"),
             te.Reduce("argmax", te.cast(x + k, "float32"), (k,), "int64", x, loc="here")]
    z = te.Var("z", "int64")
    for node in nodes:
        out = te.transform(node, lambda n: z if n is x else None)
        assert type(out) is type(node) and out is not node and out.loc == "here"
        assert all(getattr(out, f) is getattr(node, f) for f in ("op", "name", "tensor", "buffer", "combiner", "axes",
                                                                 "dtype") if hasattr(node, f))
        assert not any(n is x for n in te.nodes(out)) and any(n is z for n in te.nodes(out))
        assert te.transform(node, lambda n: None) is node
    shared = x * 3
    calls = []
    out = te.transform(shared + shared, lambda n: calls.append(n) or None)
    assert out.a is out.b and len([n for n in calls if n is shared]) == 1


def test_with_loc_remakes_every_node_type_as_replace_would():
    """with_loc's table (by exact type) covers every expression dataclass but the variables,
    and remakes each with all its fields and the new loc, as dataclasses.replace does."""
    import dataclasses

    kinds = {c for c in vars(te).values() if isinstance(c, type) and issubclass(c, te.PrimExpr)
             and c is not te.PrimExpr}
    assert set(te._WITH_LOC) == kinds - {te.Var, te.IterVar}
    x = te.Var("x", "int64")
    t = te.placeholder((8,), "float32", "t")
    buf = te.Buffer("b", (8,), "float32")
    k = te.reduce_axis(8, "k")
    nodes = [te.const(2.5, "float32"), te.Binary("add", x, x, "int64"), te.Call("exp", (te.cast(x, "float32"),), "float32"),
             te.Cast(x, "float32"), te.Select(te.lt(x, x), te.cast(x, "float32"), te.cast(x, "float32"), "float32"),
             te.Load(t, (x,), "float32"), te.BufferLoad(buf, x, "float32"),
             te.Reduce("argmax", te.cast(x + k, "float32"), (k,), "int64", x)]
    for node in nodes:
        made, expected = te._WITH_LOC[type(node)](node, "here"), dataclasses.replace(node, loc="here")
        assert type(made) is type(node) and made.loc == "here"
        assert all(getattr(made, f.name) is getattr(expected, f.name) for f in dataclasses.fields(node) if f.name != "loc")
    assert te.with_loc(x, "here") is x  # a variable takes none


def test_post_order_leaves_known_tensors_out_and_unwalked():
    a, b = te.placeholder((4,), "float32", "a"), te.placeholder((4,), "float32", "b")
    s = te.compute((4,), lambda i: a[i] + b[i], "s")
    r = te.compute((4,), lambda i: s[i] - b[i], "r")
    out = te.compute((4,), lambda i: r[i] * s[i], "out")
    assert te.post_order([out]) == [a, b, s, r, out]
    assert te.post_order([out], {id(a), id(b), id(s)}) == [r, out]
    known = {id(a), id(b), id(s), id(r)}
    assert te.post_order([out], known) == [out] and known == {id(a), id(b), id(s), id(r)}  # not changed
