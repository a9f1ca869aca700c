"""tg::Error surfaces as tensorgraph.Error carrying the code and the message."""
import numpy as np
import pytest

import tensorgraph as tg


def test_build_time_shape_error():
    g = tg.Graph()
    a = g.placeholder([2, 3], tg.float32, "a")
    b = g.placeholder([4], tg.float32, "b")
    with pytest.raises(tg.Error) as e:
        tg.add(a, b)
    assert e.value.code == "shape_mismatch"
    assert e.value.message == "[add] shapes [2,3] and [4] do not broadcast"
    assert str(e.value) == e.value.message
    assert isinstance(e.value, Exception)


def test_dtype_error_and_missing_feed():
    g = tg.Graph()
    a = g.placeholder([2], tg.float32, "a")
    i = g.placeholder([2], tg.int32, "i")
    with pytest.raises(tg.Error) as e:
        a + i
    assert e.value.code == "dtype_mismatch" and "[add]" in e.value.message
    with pytest.raises(tg.Error) as e:
        g.run({}, [a * 2.0], device="cpu")
    assert e.value.code == "not_found" and "a" in e.value.message
    with pytest.raises(tg.Error) as e:
        g.run({a: np.ones(3, np.float32)}, [a * 2.0], device="cpu")
    assert e.value.code == "shape_mismatch"


def test_run_time_error_leaves_variables_unchanged():
    g = tg.Graph()
    v = g.variable(np.array([1.0, 2.0, 3.0], np.float32), name="v")
    idx = g.placeholder([1], tg.int64, "idx")
    picked = tg.gather(v, idx)
    step = tg.assign_variable(v, v * 10.0)
    out = g.run({idx: np.array([1])}, [picked], [step], device="cpu")
    assert out[0].tolist() == [2.0]
    np.testing.assert_array_equal(np.asarray(g.variable_value(v)), [10.0, 20.0, 30.0])
    with pytest.raises(tg.Error) as e:
        g.run({idx: np.array([7])}, [picked], [step], device="cpu")
    assert e.value.code == "out_of_range" and "[gather]" in e.value.message
    np.testing.assert_array_equal(np.asarray(g.variable_value(v)), [10.0, 20.0, 30.0])


def test_python_exception_in_a_block_propagates():
    g = tg.Graph()
    p = g.placeholder([], tg.bool_, "p")

    def bad():
        raise ValueError("from the block")

    with pytest.raises(ValueError, match="from the block"):
        tg.if_else(p, bad, lambda: g.constant(1.0))


def test_symbolic_tensor_has_no_truth_value():
    g = tg.Graph()
    x = g.placeholder([], tg.float32)
    with pytest.raises(TypeError):
        bool(x > 0.0)


def test_executable_run_of_one_array_is_its_one_feed():
    # One array where the list of feeds belongs: it was iterated, its rows taken for the inputs
    # (a [2, 3] array gave "2 inputs" or fed row 0 alone). It is the feed of a one-feed executable.
    g = tg.Graph()
    x = g.placeholder([2, 3], tg.float32, "x")
    exe = g.compile({x: ([2, 3], tg.float32)}, [x * 2.0], device="cpu")
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    for one in (xv, tg.TensorData(xv)):
        np.testing.assert_array_equal(np.asarray(exe.run(one)[0]), xv * 2)
    np.testing.assert_array_equal(np.asarray(exe.run([xv])[0]), xv * 2)
    np.testing.assert_array_equal(np.asarray(exe(xv)[0]), xv * 2)
    # Two feeds: a TypeError saying how to pass them, not a run on the array's rows.
    a = g.placeholder([3], tg.float32, "a")
    b = g.placeholder([3], tg.float32, "b")
    exe2 = g.compile({a: ([3], tg.float32), b: ([3], tg.float32)}, [a + b], device="cpu")
    with pytest.raises(TypeError, match="one array was given, but the executable has 2 feeds"):
        exe2.run(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(exe2.run([np.ones(3, np.float32), np.ones(3, np.float32)])[0]),
                                  [2, 2, 2])
