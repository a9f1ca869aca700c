"""tensorgraph.torch: ATen graphs of PyTorch models on TensorGraph (docs/torch.md).

Checks of issue 22 on Debian's PyTorch 1.13 (no torch.compile): compile_module on torchvision
ResNet-18 and MobileNetV2 (random weights, random batch-norm statistics, eval) and a small
nn.TransformerEncoder agrees with PyTorch to 1e-4 with zero nodes left to PyTorch; op-level
checks against PyTorch; graph breaks keep results right; the training converters through
functorch's AOTAutograd (the same compilers torch.compile's backend uses); the docs' table.
"""
import logging
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import tensorgraph.torch as tgt  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def _randomize_bn(model, seed=1):
    """Random batch-norm affine parameters and running statistics (fresh ones are 1/0: too easy)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return model


def _check_model(model, *inputs, atol=1e-4, rtol=1e-4):
    model.eval()
    compiled = tgt.compile_module(model, inputs)
    assert compiled.nodes_left_to_pytorch == 0, compiled.unsupported
    with torch.no_grad():
        expected = model(*inputs)
    got = compiled(*inputs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, atol=atol, rtol=rtol)
    # A second call with other values reuses the executable and is right too.
    other = tuple(torch.randn_like(x) if x.is_floating_point() else x for x in inputs)
    with torch.no_grad():
        expected = model(*other)
    torch.testing.assert_close(compiled(*other), expected, atol=atol, rtol=rtol)
    return compiled


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision_models(name):
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = _randomize_bn(getattr(tv.models, name)())
    _check_model(model, torch.randn(1, 3, 64, 64))


def test_transformer_encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True, activation="gelu")
    model = torch.nn.TransformerEncoder(layer, 2)
    _check_model(model, torch.randn(2, 7, 32))


class _Ops(torch.nn.Module):
    """Many converters at once: views, slicing, broadcasting, promotion, reductions, activations."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 6)
        self.ln = torch.nn.LayerNorm(6)

    def forward(self, x, idx):
        e = self.ln(self.emb(idx))                                  # [2, 5, 6]
        y = x[:, 1:4, ::2] * 2 - 1 / (x[:, :3, 1::2].abs() + 1)     # [2, 3, 3]
        z = torch.cat([y, y.transpose(1, 2)], dim=1).permute(0, 2, 1)
        m = z.amax(dim=-1, keepdim=True) + z.sum(1).unsqueeze(-1).mean()
        s = F.softmax(z, -1) + F.log_softmax(z, 1) + F.gelu(z) + F.silu(z) + F.hardswish(z) + F.hardsigmoid(z)
        i = (idx.float() / 3 + idx).unsqueeze(-1)                   # int / float promotion
        w = torch.where(z > 0, z, torch.zeros_like(z)).flatten(1)
        sel = e.select(1, 2) + e[:, -1]
        return (s - m).sum() + i.sum() + w.expand(3, 2, 18).sum(0).mean() + torch.matmul(e, e.transpose(1, 2)).sum() \
            + sel.sum() + torch.tanh(x).sigmoid().squeeze(0).var()


def test_ops_against_torch():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 6)
    idx = torch.tensor([[1, 2, 3, 4, 9], [0, 0, 5, 6, 7]])
    _check_model(_Ops(), x, idx, atol=1e-5, rtol=1e-5)


def test_max_pool_indices_match_torch():
    torch.manual_seed(0)
    f = lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)  # noqa: E731
    x = torch.randn(2, 3, 9, 8)
    c = tgt.compile_module(f, (x,))
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    y, i = c(x)
    ey, ei = f(x)
    torch.testing.assert_close(y, ey, atol=0, rtol=0)
    assert i.dtype == torch.int64 and torch.equal(i, ei)


def test_max_pool_indices_without_integer_division():
    # Indices of rectangular, strided, dilated windows equal PyTorch's, computed without an
    # integer division (its zero-divisor check would make every CUDA run wait for the device).
    torch.manual_seed(1)
    f = lambda x: F.max_pool2d(x, (2, 3), (2, 1), (1, 1), (1, 2), return_indices=True)  # noqa: E731
    x = torch.randn(2, 3, 7, 9)
    c = tgt.compile_module(f, (x,))
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    y, i = c(x)
    ey, ei = f(x)
    torch.testing.assert_close(y, ey, atol=0, rtol=0)
    assert torch.equal(i, ei)
    (runner,) = c._cache.values()
    program = str(runner.fn.exe)
    assert "argmax" in program and "floor_div" not in program and "floor_mod" not in program


def test_graph_break_keeps_results_and_logs(caplog):
    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.relu(torch.cumsum(torch.tanh(x) * 3, dim=1)) + 1  # no converter for cumsum

    x = torch.randn(3, 5)
    with caplog.at_level(logging.WARNING, logger="tensorgraph.torch"):
        c = tgt.compile_module(Net(), (x,))
    assert c.nodes_left_to_pytorch == 1 and c.unsupported == {"aten::cumsum": 1}
    lines = [r.getMessage() for r in caplog.records if "left to PyTorch" in r.getMessage()]
    assert len(lines) == 1 and "aten::cumsum" in lines[0]
    torch.testing.assert_close(c(x), Net()(x), atol=1e-6, rtol=1e-6)


def test_index_out_of_range_raises_and_check_device_errors_is_callable():
    """An embedding index out of range raises tensorgraph.Error naming it (on the CPU on the call
    itself; on CUDA a later call or check_device_errors raises it: docs/torch.md), never a silent
    wrong answer; check_device_errors() has nothing to raise then."""
    import tensorgraph
    emb = torch.nn.Embedding(10, 4).eval()
    c = tgt.compile_module(emb, (torch.tensor([[1, 2, 3]]),))
    torch.testing.assert_close(c(torch.tensor([[4, 5, 9]])), emb(torch.tensor([[4, 5, 9]])))
    with pytest.raises(tensorgraph.Error, match="index 12 .* out of range"):
        c(torch.tensor([[4, 12, 9]]))
    tgt.check_device_errors()
    torch.testing.assert_close(c(torch.tensor([[0, 1, 2]])), emb(torch.tensor([[0, 1, 2]])))


def test_negative_indices_raise_where_pytorch_refuses_them():
    """PyTorch's embedding, index_select and gather refuse a negative index (IndexError /
    RuntimeError), where TensorGraph's gathers count it from the end: the compiled module raises
    tensorgraph.Error(out_of_range) too, never returns the row counted from the end; x[i] (aten::index)
    keeps PyTorch's wrap-around. Good indices give PyTorch's values before and after."""
    import tensorgraph

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(6, 4)

        def forward(self, x, e, i, j):
            return self.emb(e).sum((1, 2)) + torch.index_select(x, 1, i).sum(1) + torch.gather(x, 1, j).sum(1)

    torch.manual_seed(0)
    net = Net().eval()
    x = torch.arange(12.0).reshape(3, 4)
    good = (x, torch.tensor([[1, 5], [0, 2], [3, 4]]), torch.tensor([0, 3]), torch.tensor([[0], [1], [3]]))
    c = tgt.compile_module(net, good)
    assert c.nodes_left_to_pytorch == 0
    with torch.no_grad():
        torch.testing.assert_close(c(*good), net(*good))
        for at, bad in [(1, torch.tensor([[1, -1], [0, 2], [3, 4]])), (2, torch.tensor([0, -4])),
                        (3, torch.tensor([[0], [-1], [3]]))]:
            args = list(good)
            args[at] = bad
            with pytest.raises(Exception):
                net(*args)  # PyTorch refuses it
            with pytest.raises(tensorgraph.Error, match="out of range"):
                c(*args)
        torch.testing.assert_close(c(*good), net(*good))

    class Index(torch.nn.Module):
        def forward(self, x, i):
            return x[i]

    i = torch.tensor([-1, 0])  # x[i] counts a negative index from the end, as in PyTorch
    torch.testing.assert_close(tgt.compile_module(Index(), (x, i))(x, i), x[i])


def _training_net(train_bn):
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU6(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5))
    _randomize_bn(net)
    return net.train(train_bn)


@pytest.mark.parametrize("train_bn", [False, True])
def test_training_graphs_through_aot_autograd(train_bn):
    """Forward and backward ATen graphs (AOTAutograd) converted: gradients agree with PyTorch's.
    PyTorch 1.13's AOTAutograd keeps training batch norm's in-place running-stat update, which stays
    in PyTorch (asserted: exactly those nodes); PyTorch 2's functional form converts."""
    aot = pytest.importorskip("functorch.compile")
    from tensorgraph.torch._backend import Stats, decompositions, make_compiler
    import copy
    net = _training_net(train_bn)
    ref = copy.deepcopy(net)
    Stats.reset()
    comp = make_compiler("f32")
    compiled = aot.aot_module(net, fw_compiler=comp, bw_compiler=comp, decompositions=decompositions())
    x, t = torch.randn(4, 3, 16, 16), torch.tensor([0, 3, 1, 4])
    for model in (compiled, ref):
        F.cross_entropy(model(x), t).backward()
    assert Stats.graphs == 2
    assert Stats.unsupported == ({"aten::native_batch_norm": 2} if train_bn else {})
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-6, rtol=1e-5, msg=name)


def test_import_without_torch_and_clear_error():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import tensorgraph.torch as t\n"
            "assert 'aten::convolution' in t.supported_ops_markdown()\n"
            "try:\n    t.compile_module(None, ())\nexcept ImportError as e:\n    print('ImportError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "tensorgraph.torch needs PyTorch" in out


def test_backend_needs_torch_compile():
    if hasattr(torch, "compile"):
        pytest.skip("PyTorch >= 2: the backend is checked on the GPU machine (bench/torch_backend_cuda.py)")
    with pytest.raises(ImportError, match="compile_module"):
        tgt.backend(None, [])


def test_docs_list_every_converter(root):
    doc = (root / "docs" / "torch.md").read_text()
    table = tgt.supported_ops_markdown()
    assert table in doc, "docs/torch.md is out of date: replace its table with `python3 -m tensorgraph.torch --list-ops`"


def test_fake_tensor_example_values_and_bool_outputs():
    """AOTAutograd (PyTorch >= 2) gives FakeTensor example values (node.meta['val']): converting with
    them matches converting with real ones; factories (arange), bool results and & work."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from tensorgraph.torch._lower import compile_graph, example_values
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 4)

    def f(x):
        y = torch.relu(lin(x)) + torch.arange(4).float()
        return y, (y > 0.5) & (x.sum() > 0), torch.ones(3) * 2

    x = torch.randn(5, 6)
    with torch.no_grad():
        gm = make_fx(f)(x)
    mode = FakeTensorMode()

    def fake(v):
        if isinstance(v, torch.Tensor):
            return mode.from_tensor(v)
        return type(v)(fake(e) for e in v) if isinstance(v, (tuple, list)) else v

    vals = {n: fake(v) for n, v in example_values(gm, (x,)).items()}
    assert any(type(v).__name__ == "FakeTensor" for v in vals.values())
    c = compile_graph(gm, None, "cpu", vals=vals)
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    with torch.no_grad():
        got, want = c(x), f(x)
    torch.testing.assert_close(got[0], want[0], atol=1e-5, rtol=1e-5)
    assert got[1].dtype == torch.bool and torch.equal(got[1], want[1])
    torch.testing.assert_close(got[2], want[2], atol=0, rtol=0)


def test_input_mutation_copy_is_applied():
    """aten::copy_ into a graph input (AOTAutograd keeps batch norm's running-stat updates so) runs
    on TensorGraph and the new value lands in the PyTorch tensor; another in-place op on an input
    stays in PyTorch."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from tensorgraph.torch._lower import compile_graph

    def f(x, buf, other):
        buf.copy_(x.sum(0) * 0.5 + buf)
        other.add_(1)
        return x * 2

    x, buf, other = torch.randn(3, 4), torch.ones(4), torch.zeros(2)
    gm = make_fx(f)(x, buf.clone(), other.clone())
    c = compile_graph(gm, (x, buf.clone(), other.clone()), "cpu")
    assert c.unsupported == {"aten::add_": 1}
    expected_buf = x.sum(0) * 0.5 + buf
    y = c(x, buf, other)
    torch.testing.assert_close(y, x * 2, atol=0, rtol=0)
    torch.testing.assert_close(buf, expected_buf, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(other, torch.ones(2), atol=0, rtol=0)


def test_reused_inputs_are_read_each_call():
    """Parameters fed as inputs (the backend's case) keep their DLPack view across calls; in-place
    updates between calls (an optimizer step) and a new tensor at the same position are seen."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from tensorgraph.torch._lower import compile_graph

    def f(x, w):
        return x @ w

    x, w = torch.randn(2, 3), torch.randn(3, 4)
    c = compile_graph(make_fx(f)(x, w), (x, w), "cpu")
    for _ in range(3):
        torch.testing.assert_close(c(x, w), x @ w, atol=1e-6, rtol=1e-6)
        with torch.no_grad():
            w.mul_(2)
    w2 = torch.randn(3, 4)
    torch.testing.assert_close(c(x, w2), x @ w2, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(c(x, w), x @ w, atol=1e-6, rtol=1e-6)


def test_gather_select_and_boolean_reductions():
    def f(x, i):
        return x.any(1), (x > 0).all(), torch.index_select(x, 0, i), torch.gather(x, 1, i.view(2, 1).expand(2, 3))

    x, i = torch.randn(4, 3), torch.tensor([2, 0])
    c = tgt.compile_module(f, (x, i))
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    for got, want in zip(c(x, i), f(x, i)):
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_safe_softmax_masked_rows_give_zero():
    """aten::_safe_softmax (PyTorch >= 2.5's attention softmax; absent from 1.13, so the FX node is
    built by hand around a reference with its schema name): fully masked rows give 0, not NaN."""
    import types
    from tensorgraph.torch._lower import compile_graph

    def safe_softmax(x, dim):
        s = torch.softmax(x, dim)
        return torch.where((x == float("-inf")).all(dim, keepdim=True), torch.zeros_like(s), s)

    safe_softmax._schema = types.SimpleNamespace(name="aten::_safe_softmax")
    g = torch.fx.Graph()
    g.output(g.call_function(safe_softmax, (g.placeholder("x"), -1)))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    x = torch.randn(4, 4)
    x[1] = float("-inf")
    x[2, :2] = float("-inf")
    x[3, 0], x[3, 1:] = float("nan"), float("-inf")  # not fully masked (the converter asks max == -inf)
    c = compile_graph(gm, (x,), "cpu")
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    got = c(x)
    assert torch.equal(got[1], torch.zeros(4))
    assert torch.isnan(got[3]).all()
    torch.testing.assert_close(got, safe_softmax(x, -1), atol=1e-6, rtol=1e-6, equal_nan=True)


def test_caller_stream_never_null():
    """PyTorch's default CUDA stream has handle 0, which Executable.run reads as "no caller
    stream" (unordered): it is passed as cudaStreamLegacy (1); other handles unchanged."""
    from tensorgraph.torch._lower import caller_stream
    assert caller_stream(0) == 1
    assert caller_stream(0x7F00AB) == 0x7F00AB


def _fx_call(target, n_inputs, *consts, n_out=None):
    """An FX graph calling `target(inputs..., consts...)`, returning its outputs (all of a tuple)."""
    g = torch.fx.Graph()
    args = [g.placeholder(f"x{i}") for i in range(n_inputs)] + list(consts)
    node = g.call_function(target, tuple(args))
    if n_out is None:
        g.output(node)
    else:
        import operator
        g.output(tuple(g.call_function(operator.getitem, (node, i)) for i in range(n_out)))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def _schema_named(fn, name):
    import types
    fn._schema = types.SimpleNamespace(name=name)
    return fn


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_backward_matches_aten(train):
    """native_batch_norm_backward (AOTAutograd's backward of batch norm), training (batch
    statistics) and inference forms, against PyTorch's own kernel; batch_norm_backward (PyTorch
    >= 2.3's name, built around it here) gives the same."""
    from tensorgraph.torch._lower import compile_graph
    torch.manual_seed(0)
    x, dy = torch.randn(4, 3, 5, 5), torch.randn(4, 3, 5, 5)
    w, rm, rv = torch.rand(3) + 0.5, torch.randn(3) * 0.1, torch.rand(3) + 0.5
    mean = x.mean((0, 2, 3))
    invstd = torch.rsqrt(x.var((0, 2, 3), unbiased=False) + 1e-5)
    args = (dy, x, w, rm, rv, mean, invstd)
    aten = torch.ops.aten.native_batch_norm_backward.default
    want = aten(*args, train, 1e-5, [True, True, True])
    c = compile_graph(_fx_call(aten, 7, train, 1e-5, [True, True, True], n_out=3), args, "cpu")
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    for got, exp in zip(c(*args), want):
        torch.testing.assert_close(got, exp, atol=1e-5, rtol=1e-5)

    def batch_norm_backward(dy, x, w, rm, rv, sm, si, update, eps, mask, reserve):
        return aten(dy, x, w, rm, rv, sm, si, update, eps, mask)

    ref = _schema_named(batch_norm_backward, "aten::batch_norm_backward")
    reserve = torch.empty(0, dtype=torch.uint8)
    gm = _fx_call(ref, 7, train, 1e-5, [True, True, True], reserve, n_out=3)
    c = compile_graph(gm, args, "cpu")
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    for got, exp in zip(c(*args), want):
        torch.testing.assert_close(got, exp, atol=1e-5, rtol=1e-5)


def test_functional_training_batch_norm_matches_aten():
    """_native_batch_norm_legit_functional and _batch_norm_with_update_functional (PyTorch 2's
    training batch norm in AOTAutograd's graphs, absent from 1.13: built around native_batch_norm)
    give PyTorch's output, saved statistics and updated running stats (unbiased variance)."""
    from tensorgraph.torch._lower import compile_graph
    torch.manual_seed(0)
    x, w, b = torch.randn(4, 3, 5, 5), torch.rand(3) + 0.5, torch.randn(3)
    rm, rv = torch.randn(3) * 0.1, torch.rand(3) + 0.5

    def legit_functional(x, w, b, rm, rv, training, momentum, eps):
        rm, rv = rm.clone(), rv.clone()
        y, m, s = torch.ops.aten.native_batch_norm.default(x, w, b, rm, rv, training, momentum, eps)
        return y, m, s, rm, rv

    def with_update_functional(x, w, b, rm, rv, momentum, eps):
        y, m, s, rm2, rv2 = legit_functional(x, w, b, rm, rv, True, momentum, eps)
        return y, m, s, torch.empty(0, dtype=torch.uint8), rm2, rv2

    args = (x, w, b, rm, rv)
    for fn, name, consts, n in ((legit_functional, "aten::_native_batch_norm_legit_functional", (True, 0.1, 1e-5), 5),
                                (with_update_functional, "aten::_batch_norm_with_update_functional", (0.1, 1e-5), 6)):
        ref = _schema_named(fn, name)
        c = compile_graph(_fx_call(ref, 5, *consts, n_out=n), args, "cpu")
        assert c.nodes_left_to_pytorch == 0, c.unsupported
        for got, exp in zip(c(*args), ref(*args, *consts)):
            assert got.shape == exp.shape and got.dtype == exp.dtype
            torch.testing.assert_close(got, exp, atol=1e-5, rtol=1e-5)


def test_size_inputs_recompile_per_shape():
    """Graphs taking sizes (PyTorch's symbolic shapes: an int input, arithmetic on it, sym_size)
    compile once per concrete shape and give PyTorch's results for each."""
    import operator
    from tensorgraph.torch._lower import compile_graph
    aten = torch.ops.aten
    g = torch.fx.Graph()
    x, n = g.placeholder("x"), g.placeholder("n")
    cols = g.call_function(aten.sym_size.int if hasattr(aten.sym_size, "int") else aten.sym_size, (x, 1))
    rows = g.call_function(operator.mul, (n, 2))
    y = g.call_function(aten.view.default, (x, [rows, g.call_function(operator.floordiv, (cols, 2))]))
    g.output((g.call_function(aten.mul.Tensor, (y, 3.0)), rows))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    for size in (3, 5):
        x = torch.randn(size, 4)
        c = compile_graph(gm, (x, size), "cpu")
        assert c.nodes_left_to_pytorch == 0, c.unsupported
        got, r = c(x, size)
        assert r == 2 * size
        torch.testing.assert_close(got, x.reshape(2 * size, 2) * 3, atol=0, rtol=0)
    assert len(c.fn.cache) == 1
    got, _ = c(torch.ones(7, 4), 7)
    assert len(c.fn.cache) == 2 and torch.equal(got, torch.full((14, 2), 3.0))


def test_empty_batch_runs_like_eager():
    # A batch of 0 after compiling for 2: the module's result (eager), not a crash; the compiled
    # path still serves batch 2.
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    fast = tgt.compile_module(m, (x,))
    y0 = fast(torch.randn(0, 3, 8, 8))
    assert tuple(y0.shape) == (0, 5)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-4)
