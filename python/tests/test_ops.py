"""Every public op family from Python, against numpy (or torch, float64) references; and a check that
every op builder of the C++ headers is bound."""
import math
import re

import numpy as np
import pytest

import tensorgraph as tg
from conftest import ROOT


def run(fn, *arrays):
    """Builds fn(*placeholders) for the arrays, runs it on the CPU and returns numpy results."""
    g = tg.Graph()
    ps = [g.placeholder(a.shape, tg.dtype(a.dtype), f"p{i}") for i, a in enumerate(arrays)]
    out = fn(*ps)
    single = isinstance(out, tg.Tensor)
    res = g.run(dict(zip(ps, arrays)), [out] if single else list(out), device="cpu")
    res = [np.asarray(r) for r in res]
    return res[0] if single else res


def test_every_op_builder_is_bound():
    names = set()
    for h in ["ops.h", "ops_conv.h", "nn.h", "autodiff.h", "control_flow.h", "graph.h"]:
        text = (ROOT / "include" / "tg" / h).read_text()
        names |= set(re.findall(r"TG_API [\w:<>, ]+?[ &*](\w+)\(", text))
        names |= set(re.findall(r"^inline Tensor (\w+)\(", text, re.M))
    names -= {"runtime_stats", "to_dot"}  # module-level in Python too, checked below
    missing = sorted(n for n in names if not hasattr(tg, n))
    assert len(names) > 110
    assert missing == []
    assert callable(tg.runtime_stats) and callable(tg.Graph.to_dot)


def test_unary(rng):
    x = rng.uniform(0.1, 2.0, (3, 4)).astype(np.float32)
    cases = {
        tg.neg: -x, tg.abs: np.abs(x), tg.sign: np.sign(x), tg.exp: np.exp(x), tg.log: np.log(x),
        tg.log1p: np.log1p(x), tg.expm1: np.expm1(x), tg.sqrt: np.sqrt(x), tg.rsqrt: 1 / np.sqrt(x),
        tg.reciprocal: 1 / x, tg.square: x * x, tg.sin: np.sin(x), tg.cos: np.cos(x), tg.tan: np.tan(x),
        tg.tanh: np.tanh(x), tg.sigmoid: 1 / (1 + np.exp(-x)),
        tg.erf: np.array([math.erf(v) for v in x.ravel()], np.float32).reshape(x.shape),
        tg.floor: np.floor(x * 3), tg.ceil: np.ceil(x * 3), tg.round: np.round(x * 3),
    }
    for op, want in cases.items():
        arg = x * 3 if op in (tg.floor, tg.ceil, tg.round) else x
        np.testing.assert_allclose(run(op, arg), want, rtol=2e-6, err_msg=op.__name__)
    special = np.array([np.nan, np.inf, 1.0], np.float32)
    assert run(tg.is_nan, special).tolist() == [True, False, False]
    assert run(tg.is_inf, special).tolist() == [False, True, False]
    assert run(tg.logical_not, np.array([True, False])).tolist() == [False, True]
    assert run(tg.round, np.array([0.5, 1.5, 2.5, -0.5], np.float32)).tolist() == [0, 2, 2, -0.0]


def test_binary_broadcasting_and_operators(rng):
    a = rng.uniform(-3, 3, (2, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2, (3,)).astype(np.float32)
    cases = {
        tg.add: a + b, tg.sub: a - b, tg.mul: a * b, tg.div: a / b, tg.maximum: np.maximum(a, b),
        tg.minimum: np.minimum(a, b), tg.mod: np.fmod(a, b), tg.floor_mod: np.mod(a, b),
        tg.floor_div: np.floor_divide(a, b), tg.atan2: np.arctan2(a, b),
        tg.pow: np.power(np.abs(a), b),
    }
    for op, want in cases.items():
        lhs = np.abs(a) if op is tg.pow else a
        np.testing.assert_allclose(run(op, lhs, b), want, rtol=1e-5, atol=1e-6, err_msg=op.__name__)
    for op, want in {tg.equal: a == b, tg.not_equal: a != b, tg.less: a < b, tg.less_equal: a <= b,
                     tg.greater: a > b, tg.greater_equal: a >= b}.items():
        np.testing.assert_array_equal(run(op, a, b), want)
    p, q = np.array([True, True, False]), np.array([True, False, False])
    np.testing.assert_array_equal(run(tg.logical_and, p, q), p & q)
    np.testing.assert_array_equal(run(tg.logical_or, p, q), p | q)
    np.testing.assert_array_equal(run(tg.logical_xor, p, q), p ^ q)
    # Python operators, with scalars and arrays on either side.
    got = run(lambda x, y: [x + y, x - 1.0, 2.0 - x, x * 2, 1.0 / y, -x, x ** 2.0, x // y, x % y,
                            x @ x.T, abs(x), x < y, 2.0 * x + np.ones(3, np.float32)], a, b)
    want = [a + b, a - 1, 2 - a, a * 2, 1 / b, -a, a ** 2, np.floor_divide(a, b), np.mod(a, b), a @ a.T,
            np.abs(a), a < b, 2 * a + 1]
    for g_, w in zip(got, want):
        np.testing.assert_allclose(g_, w, rtol=1e-5, atol=1e-6)
    got = run(lambda p_, q_: [p_ & q_, p_ | q_, p_ ^ q_, ~p_], p, q)
    for g_, w in zip(got, [p & q, p | q, p ^ q, ~p]):
        np.testing.assert_array_equal(g_, w)
    i = np.array([7, -7], np.int32)
    assert run(lambda x: [x // 2, x % 2], i)[0].tolist() == [3, -4]
    assert run(lambda x: x / 2, i).tolist() == [3, -3]  # / truncates (tg.div), as documented
    # A numpy array on the left: the Tensor's reflected operator, not an object array of Tensors.
    got = run(lambda x: [np.ones((2, 3), np.float32) + x, np.full(3, 2, np.float32) * x], a)
    np.testing.assert_allclose(got[0], a + 1, rtol=1e-6)
    np.testing.assert_allclose(got[1], a * 2, rtol=1e-6)
    with pytest.raises(tg.Error) as e:
        run(lambda x: x + 0.5, i)
    assert e.value.code == "invalid_argument"


def test_len_iteration_and_index_bounds():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = tg.Graph()
    p = g.placeholder([2, 3], tg.float32, "x")
    rows = list(p)
    assert len(p) == 2 and len(rows) == 2
    got = g.run({p: x}, rows, device="cpu")
    np.testing.assert_array_equal(np.asarray(got[0]), x[0])
    np.testing.assert_array_equal(np.asarray(got[1]), x[1])
    np.testing.assert_array_equal(np.asarray(g.run({p: x}, p[-2], device="cpu")), x[0])
    for bad in (2, -3):
        with pytest.raises(IndexError, match="out of range for axis 0 of size 2"):
            p[bad]
    with pytest.raises(IndexError, match="axis 1 of size 3"):
        p[0, 3]
    d = g.placeholder([-1, 3], tg.float32, "d")
    with pytest.raises(TypeError, match="dynamic"):
        iter(d)
    with pytest.raises(TypeError, match="dynamic"):
        len(d)
    with pytest.raises(TypeError, match="0-d"):
        len(g.constant(1.0))
    # numpy integers index like ints; bools are not indices; np.asarray of a symbolic tensor refuses.
    np.testing.assert_array_equal(np.asarray(g.run({p: x}, p[np.int64(1)], device="cpu")), x[1])
    with pytest.raises(IndexError):
        p[2**70]
    with pytest.raises(tg.Error, match="not an int"):
        p[True]
    with pytest.raises(TypeError, match="has no values until it runs"):
        np.asarray(p)


def test_select_clamp_cast():
    c = np.array([True, False, True])
    a = np.array([1.0, 2.0, 3.0], np.float32)
    assert run(lambda c_, a_: tg.select(c_, a_, 0.0), c, a).tolist() == [1.0, 0.0, 3.0]
    assert run(lambda a_: tg.where(a_ > 1.5, a_, -a_), a).tolist() == [-1.0, 2.0, 3.0]
    assert run(lambda a_: tg.clamp(a_, 1.5, 2.5), a).tolist() == [1.5, 2.0, 2.5]
    f = np.array([2.7, -2.7, np.nan, 1e10], np.float32)
    assert run(lambda x: tg.cast(x, tg.int32), f).tolist() == [2, -2, 0, 2147483647]
    assert run(lambda x: x.astype("bool"), f).tolist() == [True, True, True, True]


def test_sources_and_random():
    g = tg.Graph()
    outs = g.run({}, [tg.fill(g, [2], 1.5), tg.iota(g, [2, 3], axis=1), tg.arange(g, 2, 11, 3),
                      tg.arange(g, 4, dtype=tg.int64), tg.random_uniform(g, [5], -1, 1, seed=9),
                      tg.random_normal(g, [4], 0, 1, seed=4)], device="cpu")
    assert outs[0].tolist() == [1.5, 1.5]
    assert outs[1].tolist() == [[0, 1, 2], [0, 1, 2]]
    assert outs[2].tolist() == [2, 5, 8]
    assert outs[3].tolist() == [0, 1, 2, 3] and outs[3].dtype == tg.int64
    # Philox: the same numbers as TensorData's generator with the same seed.
    np.testing.assert_array_equal(np.asarray(outs[4]), np.asarray(tg.TensorData.random_uniform((5,), -1, 1, 9)))
    np.testing.assert_array_equal(np.asarray(outs[5]), np.asarray(tg.TensorData.random_normal((4,), 0, 1, 4)))
    x = g.placeholder([3], tg.float32)
    key = g.constant(np.array(0, np.int64))
    (u,) = g.run({x: np.zeros(3, np.float32)}, [tg.random_uniform_like(x, key, seed=2)], device="cpu")
    np.testing.assert_array_equal(np.asarray(u), np.asarray(tg.TensorData.random_uniform((3,), 0, 1, 2)))


def test_shape_ops(rng):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = run(lambda t: [tg.reshape(t, [4, -1]), tg.transpose(t, [2, 0, 1]), tg.transpose(t),
                         tg.broadcast_to(tg.reshape(t, [2, 3, 4, 1]), [2, 3, 4, 2]),
                         tg.slice(t, [0, 1], [None, 3], axes=[1, 2]), t[1, :, ::2], t[..., -1],
                         tg.pad(t, [0, 0, 1], [0, 0, 2], mode="reflect"), tg.concat([t, t], 1),
                         tg.reverse(t, [0, 2]), tg.expand_dims(t, 0), tg.squeeze(tg.expand_dims(t, 2)),
                         tg.tile(t, [1, 2, 1])], x)
    want = [x.reshape(4, -1), x.transpose(2, 0, 1), x.transpose(), np.broadcast_to(x[..., None], (2, 3, 4, 2)),
            x[:, :, 1:3], x[1, :, ::2], x[..., -1], np.pad(x, [(0, 0), (0, 0), (1, 2)], mode="reflect"),
            np.concatenate([x, x], 1), x[::-1, :, ::-1], x[None], x, np.tile(x, (1, 2, 1))]
    for g_, w in zip(got, want):
        np.testing.assert_array_equal(g_, w)
    parts = run(lambda t: tg.split(t, [1, 3], 2), x)
    np.testing.assert_array_equal(parts[0], x[:, :, :1])
    np.testing.assert_array_equal(parts[1], x[:, :, 1:])
    halves = run(lambda t: tg.split(t, 2, 0), x)
    np.testing.assert_array_equal(halves[1], x[1:])


def test_reductions(rng):
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    got = run(lambda t: [tg.reduce_sum(t, 1), tg.reduce_prod(t, [0, 2]), tg.reduce_max(t), tg.reduce_min(t, -1, True),
                         tg.reduce_mean(t, (0, 1)), tg.mean(t), tg.reduce_variance(t, 2), tg.argmax(t, 1),
                         tg.argmin(t, 2, keep_dims=True)], x)
    want = [x.sum(1), x.prod((0, 2)), x.max(), x.min(-1, keepdims=True), x.mean((0, 1)), x.mean(), x.var(2),
            x.argmax(1), x.argmin(2)[..., None]]
    for g_, w in zip(got, want):
        np.testing.assert_allclose(g_, w, rtol=1e-5, atol=1e-6)
    b = np.array([[True, False], [True, True]])
    assert run(lambda t: [tg.reduce_and(t, 1), tg.reduce_or(t, 1)], b)[0].tolist() == [False, True]


def test_matmul(rng):
    a = rng.normal(size=(2, 3, 4)).astype(np.float32)
    b = rng.normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(run(lambda x, y: tg.matmul(x, y, transpose_b=True), a, b), a @ b.T, rtol=1e-5, atol=1e-5)
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    np.testing.assert_array_equal(run(lambda x: x @ x.T, i), i @ i.T)


def test_gather_scatter():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = run(lambda t: [tg.gather(t, np.array([2, 0]), axis=0), tg.gather(t, np.array([-1]), axis=1),
                         tg.gather_nd(t, np.array([[1, 2], [2, 3]])),
                         tg.gather_elements(t, np.array([[0, 2], [1, 0]]), axis=1),
                         tg.scatter_nd(t, np.array([[0], [0]]), np.ones((2, 4), np.float32), reduction="add"),
                         tg.scatter_elements(t, np.array([[3]]), np.array([[-1.0]], np.float32), axis=1)], x)
    np.testing.assert_array_equal(got[0], x[[2, 0]])
    np.testing.assert_array_equal(got[1], x[:, [-1]])
    np.testing.assert_array_equal(got[2], [6.0, 11.0])
    np.testing.assert_array_equal(got[3], [[0.0, 2.0], [5.0, 4.0]])
    want = x.copy()
    want[0] += 2
    np.testing.assert_array_equal(got[4], want)
    want = x.copy()
    want[0, 3] = -1
    np.testing.assert_array_equal(got[5], want)


def test_stencil():
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    w = np.array([1.0, 2.0, 1.0], np.float32)
    got = run(lambda s, k: [tg.stencil(s, k), tg.stencil(s, k, padding_style="same", boundary_mode="clamp_to_edge"),
                            tg.stencil(s, k, reduction="max")], x, w)
    np.testing.assert_array_equal(got[0], [[4, 8, 12, 16]])
    np.testing.assert_array_equal(got[1], [[1, 4, 8, 12, 16, 19]])
    np.testing.assert_array_equal(got[2], [[2, 4, 6, 8]])  # max of x[i + j] * w[j]


def test_conv_and_pool_against_torch(rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rng.normal(size=(2, 3, 7, 6))
    w = rng.normal(size=(4, 3, 3, 3))
    y = run(lambda a, b: tg.conv2d(a, b, strides=2, explicit_padding=(1, 1, 0, 2), data_layout="nchw",
                                   weights_layout="oihw"), x, w)
    ref = F.conv2d(F.pad(torch.tensor(x), (0, 2, 1, 1)), torch.tensor(w), stride=2).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10)
    xs = x.astype(np.float32).transpose(0, 2, 3, 1).copy()  # nhwc
    got = run(lambda a: [tg.max_pool2d(a, 3, strides=2, padding="same"), tg.avg_pool2d(a, 2),
                         tg.global_avg_pool2d(a)], xs)
    tx = torch.tensor(x, dtype=torch.float32)
    np.testing.assert_allclose(got[1], F.avg_pool2d(tx, 2).numpy().transpose(0, 2, 3, 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[2], x.mean((2, 3)), rtol=1e-5)
    # same padding: 7 -> 4 (total pad 2: 1 + 1), 6 -> 3 (total 1: 0 + 1); padding never wins.
    ref = F.max_pool2d(F.pad(tx, (0, 1, 1, 1), value=-math.inf), 3, stride=2).numpy().transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(got[0], ref)
    # The backward ops and the transposed convolution, against torch's autograd: conv2d of a
    # 7x7 input with a 3x3 window at stride 2 gives 3x3.
    x7 = np.pad(x, [(0, 0), (0, 0), (0, 0), (0, 1)])
    dy = rng.normal(size=(2, 4, 3, 3))
    got = run(lambda d, b, a: [tg.conv2d_backward_data(d, b, [2, 3, 7, 7], strides=2, data_layout="nchw",
                                                       weights_layout="oihw"),
                               tg.conv2d_backward_weights(d, a, [4, 3, 3, 3], strides=2, data_layout="nchw",
                                                          weights_layout="oihw"),
                               tg.conv_transpose2d(d, b, strides=2, data_layout="nchw", weights_layout="oihw")],
              dy, w, x7)
    tx = torch.tensor(x7, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    F.conv2d(tx, tw, stride=2).backward(torch.tensor(dy))
    np.testing.assert_allclose(got[0], tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got[1], tw.grad.numpy(), rtol=1e-9, atol=1e-9)
    ref = F.conv_transpose2d(torch.tensor(dy), torch.tensor(w), stride=2).numpy()
    np.testing.assert_allclose(got[2], ref, rtol=1e-9, atol=1e-9)
    xp = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    dp = np.ones((1, 2, 2, 1), np.float32)
    got = run(lambda d, a: [tg.max_pool2d_backward(d, a), tg.avg_pool2d_backward(d, a)], dp, xp)
    want_max = np.zeros((4, 4), np.float32)
    want_max[1::2, 1::2] = 1
    np.testing.assert_array_equal(got[0][0, :, :, 0], want_max)
    np.testing.assert_array_equal(got[1][0, :, :, 0], np.full((4, 4), 0.25, np.float32))


def test_nn_ops():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    labels = np.array([2, 0], np.int64)
    got = run(lambda t: [tg.softmax(t), tg.log_softmax(t), tg.relu(t - 1.5), tg.leaky_relu(t - 1.5, 0.1),
                         tg.elu(t - 1.5), tg.gelu(t), tg.silu(t), tg.softmax_cross_entropy(t, labels),
                         tg.sigmoid_cross_entropy(t, np.ones((2, 3), np.float32), reduction="sum"),
                         tg.mean_squared_error(t, np.zeros((2, 3), np.float32)),
                         tg.layer_norm(t, begin_axis=-1)], x)
    xm = x - 1.5
    want = [sm, np.log(sm), np.maximum(xm, 0), np.where(xm > 0, xm, 0.1 * xm), np.where(xm > 0, xm, np.expm1(xm)),
            x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))), x / (1 + np.exp(-x)),
            -np.log(sm[[0, 1], labels]).mean(), np.log1p(np.exp(-x)).sum(), (x ** 2).mean(),
            (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)]
    for g_, w in zip(got, want):
        np.testing.assert_allclose(g_, w, rtol=1e-5, atol=1e-6)
    assert tg.step_decay_lr(0.1, 25, 10) == pytest.approx(0.001)
    assert tg.cosine_warmup_lr(1.0, 5, 10, 110) == pytest.approx(0.5)
    assert tg.cosine_warmup_lr(1.0, 60, 10, 110) == pytest.approx(0.5)


def test_normalization_and_dropout_modes():
    g = tg.Graph()
    x = g.placeholder([4, 2], tg.float32)
    training = g.placeholder([], tg.bool_)
    gamma, beta = g.constant(np.ones(2, np.float32)), g.constant(np.zeros(2, np.float32))
    rm = g.variable(np.zeros(2, np.float32), name="rm")
    rv = g.variable(np.ones(2, np.float32), name="rv")
    y = tg.batch_norm(x, gamma, beta, rm, rv, training, momentum=0.5)
    d = tg.dropout(x, training, rate=0.5, seed=1)
    xv = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)
    out = g.run({x: xv, training: np.array(True)}, [y, d], device="cpu")
    np.testing.assert_allclose(np.asarray(out[0]), (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-5), rtol=1e-5)
    kept = np.asarray(out[1])
    assert set(np.unique(kept[kept != 0] / xv[kept != 0])) == {2.0}
    # running statistics: 0.5 * old + 0.5 * batch (unbiased variance 20/3).
    np.testing.assert_allclose(np.asarray(g.variable_value(rm)), [2.0, 2.5])
    np.testing.assert_allclose(np.asarray(g.variable_value(rv)), [0.5 + 10 / 3] * 2, rtol=1e-6)
    out = g.run({x: xv, training: np.array(False)}, [d], device="cpu")
    np.testing.assert_array_equal(np.asarray(out[0]), xv)
