"""Graph.compile(disable_type_inference=True) (issue 17, docs/design/0009): a dim given as -1
varies between runs; one compile serves every shape, with the values of fixed-shape compiles."""
import numpy as np
import pytest

import tensorgraph as tg


def test_one_compile_serves_every_batch_size():
    g = tg.Graph()
    x = g.placeholder([-1, 3], tg.float32, "x")
    w = g.variable(np.array([[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]], np.float32), name="w")
    y = tg.relu(tg.matmul(x, w)) + 1.0
    before = tg.runtime_stats()["compiles"]
    exe = g.compile({x: ([-1, 3], tg.float32)}, [y], device="cpu", disable_type_inference=True)
    assert tg.runtime_stats()["compiles"] == before + 1
    wv = np.array([[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]], np.float64)
    for n in (1, 4, 2, 7):
        xv = np.arange(n * 3, dtype=np.float32).reshape(n, 3) / 4.0 - 1.0
        got = np.asarray(exe.run([xv])[0])
        want = np.maximum(xv.astype(np.float64) @ wv, 0.0) + 1.0
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert tg.runtime_stats()["compiles"] == before + 1  # no recompile for new batch sizes
    with pytest.raises(tg.Error, match="placeholder 'x'"):
        exe.run([np.zeros((2, 4), np.float32)])


def test_named_symbols_are_str_dims():
    # A str dim names a symbol: equal wherever it appears, reported by name, bound per run.
    g = tg.Graph()
    x = g.placeholder(["batch", 4], tg.float32, "x")
    assert x.shape == ("batch", 4)
    y = tg.reshape(x * 2.0, ["batch", 2, 2])
    assert y.shape == ("batch", 2, 2)
    exe = g.compile({x: (["batch", 4], tg.float32)}, [y], device="cpu", disable_type_inference=True)
    assert exe.input_types[0].shape == ("batch", 4)
    for n in (1, 3, 2):
        xv = np.arange(n * 4, dtype=np.float32).reshape(n, 4) - 3.0
        np.testing.assert_allclose(np.asarray(exe.run([xv])[0]), (2.0 * xv).reshape(n, 2, 2))


def test_saved_and_loaded_keeps_its_symbols(tmp_path):
    # A compile-once executable saves its symbols by name (format 3) and its derived sizes by
    # expression: the loaded one runs every size with the saved one's bits, compiling nothing.
    g = tg.Graph()
    x = g.placeholder(["batch", "n"], tg.float32, "x")
    y = tg.pad(x * 3.0, [0, 1], [0, 1]) - 0.5  # pads: "n+2"
    exe = g.compile({x: (["batch", "n"], tg.float32)}, [y], device="cpu", disable_type_inference=True)
    assert exe.output_types[0].shape == ("batch", "n+2")
    path = str(tmp_path / "once.tgx")
    exe.save(path)
    compiles = tg.runtime_stats()["compiles"]
    loaded = tg.Executable.load(path, "cpu")
    assert loaded.input_types[0].shape == ("batch", "n")
    assert loaded.output_types[0].shape == ("batch", "n+2")
    for shape in ((1, 1), (3, 5), (2, 8)):
        xv = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 3.0
        want = np.pad(xv * 3.0, [(0, 0), (1, 1)]) - 0.5
        got = np.asarray(loaded.run([xv])[0])
        np.testing.assert_array_equal(got, np.asarray(exe.run([xv])[0]))
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert tg.runtime_stats()["compiles"] == compiles


def test_derived_dims_round_trip_through_their_names():
    # A strided slice of a symbolic size has a derived size, shown by its expression ("(h+1)/2")
    # and given back by it: a shape read off one tensor builds another (tg.fill, tg.reshape),
    # compiled once; Tensor.dim_expr gives the expression (base, a, b, c, lo).
    g = tg.Graph()
    x = g.placeholder([2, "rt_h"], tg.float32, "x")
    half = tg.slice(x, [0], [None], strides=[2], axes=[1])
    assert half.shape == (2, "(rt_h+1)/2")
    assert half.dim_expr(1) == ("rt_h", 1, 1, 2, 0) and half.dim_expr(0) is None and x.dim_expr(1) is None
    with pytest.raises(tg.Error, match="axis 2"):
        half.dim_expr(2)
    ones = tg.fill(g, list(half.shape), 1.0)
    y = tg.reshape(half + ones, list(half.shape))
    exe = g.compile({x: ([2, "rt_h"], tg.float32)}, [y], device="cpu", disable_type_inference=True)
    for h in (5, 8, 1):
        xv = np.arange(2 * h, dtype=np.float32).reshape(2, h)
        np.testing.assert_array_equal(np.asarray(exe.run([xv])[0]), xv[:, ::2] + 1.0)
    with pytest.raises(tg.Error, match="derived symbol"):
        tg.fill(g, [2, "(rt_h+5)/3"], 0.0)
