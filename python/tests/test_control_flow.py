"""Control flow with Python callables as blocks: they run while the op is built; the op chooses
or loops at run time."""
import numpy as np
import pytest

import tensorgraph as tg


def test_if_else_chooses_at_run_time():
    g = tg.Graph()
    p = g.placeholder([], tg.bool_, "p")
    x = g.placeholder([2], tg.float32, "x")
    calls = []

    def then_block():
        calls.append("then")
        return x * 2.0

    def else_block():
        calls.append("else")
        return [x - 1.0]

    y = tg.if_else(p, then_block, else_block)
    assert isinstance(y, tg.Tensor) and calls == ["then", "else"]
    xv = np.array([1.0, 5.0], np.float32)
    assert g.run({p: np.array(True), x: xv}, y, device="cpu").tolist() == [2.0, 10.0]
    assert g.run({p: np.array(False), x: xv}, y, device="cpu").tolist() == [0.0, 4.0]
    assert calls == ["then", "else"]  # blocks are not called again at run time
    (dx,) = tg.gradients(tg.reduce_sum(y), [x])
    assert g.run({p: np.array(True), x: xv}, dx, device="cpu").tolist() == [2.0, 2.0]


def test_for_loop_power_and_gradient():
    g = tg.Graph()
    n = g.placeholder([], tg.int32, "n")
    x = g.placeholder([], tg.float64, "x")
    # values = (x^i accumulated, sum of indices)
    acc, idx_sum = tg.for_loop(n, [g.constant(1.0, tg.float64), g.constant(0, tg.int32)],
                               lambda i, v: [v[0] * x, v[1] + i])
    d = tg.gradients(acc, x)
    out = g.run({n: np.array(4, np.int32), x: np.array(1.5)}, [acc, idx_sum, d], device="cpu")
    assert out[0].item() == 1.5 ** 4
    assert out[1].item() == 0 + 1 + 2 + 3
    assert out[2].item() == 4 * 1.5 ** 3
    single = tg.for_loop(3, g.constant(2.0), lambda i, v: v * v)  # one Tensor in, one out
    assert g.run({}, single, device="cpu").item() == 256.0


def test_while_loop_collatz():
    g = tg.Graph()
    start = g.placeholder([], tg.int64, "start")

    def before(v):
        value, steps = v
        return value > 1, [value, steps]

    def after(v):
        value, steps = v
        nxt = tg.select(tg.equal(value % 2, 0), value // 2, value * 3 + 1)
        return [nxt, steps + 1]

    value, steps = tg.while_loop([start, g.constant(0, tg.int64)], before, after)
    out = g.run({start: np.array(27, np.int64)}, [value, steps], device="cpu")
    assert out[0].item() == 1 and out[1].item() == 111  # 27 takes 111 steps


def test_while_loop_before_returning_only_the_condition_is_a_clear_error():
    g = tg.Graph()
    i0 = g.constant(0.0)
    try:
        tg.while_loop([i0], lambda v: v[0] < 10.0, lambda v: [v[0] + 3.0])
    except tg.Error as e:
        assert e.code == "invalid_argument"
        assert "[while_loop] before must return (condition, values)" in e.message
    else:
        raise AssertionError("no error")


def test_control_dependency_orders_reads_after_assign():
    g = tg.Graph()
    v = g.variable(np.array(1.0, np.float32), name="v")
    a = tg.assign_variable(v, v + 41.0)
    r = g.control_dependency([a], lambda: tg.read_variable(v) * 1.0)
    assert g.run({}, r, device="cpu").item() == 42.0


def test_errors_speak_python():
    # The gradient of an unbounded while_loop suggests the Python keyword, not the C++ option struct.
    g = tg.Graph()
    x = g.placeholder([], tg.float32, "x")
    (y,) = tg.while_loop([x], lambda v: (tg.less(v[0], 10.0), [v[0]]), lambda v: [v[0] * 2.0])
    with pytest.raises(tg.Error) as e:
        tg.gradients(y, [x])
    assert "max_iterations=N" in e.value.message and "WhileLoopOptions" not in e.value.message
    assert str(e.value) == e.value.message


def test_getitem_views_of_a_variable_and_of_a_feed_keep_their_values():
    """x[1], v[1:3] and an if_else result v[1] or v (shape known at run time) are views of one
    block (rows of 256 bytes) on the CPU: the numpy results keep the values of their run while
    later runs assign v and feed other x."""
    g = tg.Graph()
    init = np.arange(3 * 64, dtype=np.float32).reshape(3, 64)
    v = g.variable(init, name="v")
    x = g.placeholder([3, 64], tg.float32, "x")
    p = g.placeholder([], tg.bool_, "p")
    picked = tg.if_else(p, lambda: [v[1:2]], lambda: [v])[0]
    step = tg.assign_variable(v, v + 100.0)
    held = []
    for run in range(4):
        xv = np.full((3, 64), float(run), np.float32) + np.arange(64, dtype=np.float32)
        out = g.run({x: xv, p: np.array(run % 2 == 0)}, [x[1], (x * 2.0)[1:3], v[1:3], picked], [step], device="cpu")
        held.append((run, xv, [np.asarray(t) for t in out]))
    for run, xv, (x1, x2, v12, pk) in held:
        start = init + 100.0 * run
        np.testing.assert_array_equal(x1, xv[1])
        np.testing.assert_array_equal(x2, 2.0 * xv[1:3])
        np.testing.assert_array_equal(v12, start[1:3])
        np.testing.assert_array_equal(pk, start[1:2] if run % 2 == 0 else start)
    np.testing.assert_array_equal(np.asarray(g.variable_value(v)), init + 400.0)
