"""Gradients from Python against central finite differences (float64)."""
import numpy as np

import tensorgraph as tg


def loss_fn(x, w):
    return tg.reduce_sum(tg.tanh(tg.matmul(x, w)) ** 2.0) + tg.reduce_mean(tg.exp(w) * 0.5)


def test_gradient_matches_finite_differences(rng):
    xv = rng.normal(size=(4, 3))
    wv = rng.normal(size=(3, 2)) * 0.5
    g = tg.Graph()
    x = g.placeholder([4, 3], tg.float64, "x")
    w = g.placeholder([3, 2], tg.float64, "w")
    y = loss_fn(x, w)
    gx, gw = tg.gradients(y, [x, w])
    assert gw.shape == (3, 2) and gw.dtype == tg.float64
    got_x, got_w = (np.asarray(t) for t in g.run({x: xv, w: wv}, [gx, gw], device="cpu"))

    def value(xa, wa):
        return g.run({x: xa, w: wa}, y, device="cpu").item()

    eps = 1e-6
    for arr, got, is_w in ((wv, got_w, True), (xv, got_x, False)):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            d = np.zeros_like(arr)
            d[i] = eps
            hi = value(xv, wv + d) if is_w else value(xv + d, wv)
            lo = value(xv, wv - d) if is_w else value(xv - d, wv)
            num[i] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def test_single_tensor_gradient_vjp_and_stop_gradient():
    g = tg.Graph()
    x = g.placeholder([3], tg.float32)
    y = x * x * 3.0
    dx = tg.gradients(y, x)  # one Tensor in, one out
    (vx,) = tg.vjp([y], [x], [g.constant(np.array([1.0, 0.0, 2.0], np.float32))])
    ds = tg.gradients(tg.stop_gradient(x) * x, x)
    out = g.run({x: np.array([1.0, 2.0, 3.0], np.float32)}, [dx, vx, ds], device="cpu")
    assert out[0].tolist() == [6.0, 12.0, 18.0]
    assert out[1].tolist() == [6.0, 0.0, 36.0]
    assert out[2].tolist() == [1.0, 2.0, 3.0]


def test_training_loop_with_variables_and_adam():
    g = tg.Graph()
    x = g.placeholder([-1, 2], tg.float32, "x")
    t = g.placeholder([-1, 1], tg.float32, "t")
    w = g.variable(np.zeros((2, 1), np.float32), name="w")
    b = g.variable(np.zeros((1,), np.float32), name="b")
    loss = tg.mean_squared_error(x @ w + b, t)
    lr = g.constant(np.array(0.1, np.float32))
    steps = tg.adam_step(g, [w, b], tg.gradients(loss, [w, b]), lr)
    exe = g.compile({x: ([64, 2], tg.float32), t: [64, 1]}, [loss], steps, device="cpu")
    assert exe.input_types[0] == tg.TensorType([64, 2], tg.float32)
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(64, 2)).astype(np.float32)
    ts = xs @ np.array([[2.0], [-1.0]], np.float32) + 0.5
    first = exe.run([xs, ts])[0].item()
    for _ in range(300):
        last = exe(xs, ts)[0].item()
    assert first > 1.0 and last < 1e-3
    np.testing.assert_allclose(np.asarray(g.variable_value(w)).ravel(), [2.0, -1.0], atol=0.02)
