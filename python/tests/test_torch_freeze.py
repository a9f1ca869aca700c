"""tensorgraph.torch: parameters compiled in as constants (inference) and guarded, and the
channels-last choice for large-batch convolution graphs (tensorgraph/torch/_freeze.py, _lower.py).

The frozen graphs are the inference graphs torch.compile's backend gets from AOTAutograd, where
parameters and buffers are inputs: built here with make_fx over torch.func-style functional calls
(PyTorch 1.13 has no torch.compile). Every check compares with eager PyTorch on the current values.
"""
import logging

import pytest

torch = pytest.importorskip("torch")
import tensorgraph.torch as tgt  # noqa: E402,F401


def _functional(model, x):
    """model's forward as an ATen graph whose inputs are its parameters, buffers, then x."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    tensors = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]

    def f(*a):
        return stateless.functional_call(model, dict(zip(names, a[:-1])), (a[-1],))
    with torch.no_grad():
        gm = make_fx(f)(*tensors, x)
    return gm, tensors


def _net():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 5, 3)).eval()
    with torch.no_grad():
        bn = net[1]
        bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
        bn.running_var.copy_(torch.tensor([0.5, 1.5, 2.0, 1.0]))
        bn.weight.copy_(torch.tensor([1.2, 0.8, -0.5, 1.0]))
    return net


def _frozen(net, x):
    from tensorgraph.torch._backend import static_input_predicate
    from tensorgraph.torch._lower import compile_graph
    gm, tensors = _functional(net, x)
    return compile_graph(gm, (*tensors, x), "cpu", freeze=static_input_predicate(net)), tensors


def test_parameters_and_buffers_become_constants():
    net = _net()
    x = torch.randn(2, 3, 5, 5)
    c, tensors = _frozen(net, x)
    with torch.no_grad():
        got, want = c(*tensors, x), net(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # conv w, b; bn w, b, mean, var; linear w, b (num_batches_tracked is not read in eval)
    assert c.fn.frozen_count == 8
    exe = str(c.fn.runner.exe)
    assert exe.count("placeholder(") == 1, exe  # only x is fed
    # Batch norm's scale and shift were computed at compile time: no rsqrt is left to run.
    assert "rsqrt" not in exe, exe
    x2 = torch.randn(2, 3, 5, 5)
    with torch.no_grad():
        torch.testing.assert_close(c(*tensors, x2), net(x2), atol=1e-5, rtol=1e-5)


def test_changed_weights_are_seen_by_the_next_call(caplog):
    """In-place updates (optimizer step, load_state_dict, copy_ under no_grad), a replaced tensor,
    and a buffer change each recompile with the new values; after MAX_REFRESHES the inputs are fed."""
    from tensorgraph.torch._freeze import MAX_REFRESHES
    net = _net()
    x = torch.randn(2, 3, 5, 5)
    c, tensors = _frozen(net, x)
    with torch.no_grad():
        c(*tensors, x)
        with caplog.at_level(logging.INFO, logger="tensorgraph.torch"):
            net[0].weight.mul_(-2.0)                 # in place: version counter
            torch.testing.assert_close(c(*tensors, x), net(x), atol=1e-5, rtol=1e-5)
            assert c.fn.refreshes == 1
            net[1].running_var.copy_(torch.full((4,), 3.0))  # a buffer
            torch.testing.assert_close(c(*tensors, x), net(x), atol=1e-5, rtol=1e-5)
        assert any("recompiling" in r.getMessage() and "arg" in r.getMessage() for r in caplog.records)
        assert c.fn.frozen_count == 8 and c.fn.refreshes == 2
        # Unchanged values: no recompile.
        torch.testing.assert_close(c(*tensors, x), net(x), atol=1e-5, rtol=1e-5)
        assert c.fn.refreshes == 2
        # A different tensor at a parameter's position.
        other = [t.clone() for t in tensors]
        other[5].add_(1.0)  # linear bias (parameters first, then buffers)
        with caplog.at_level(logging.WARNING, logger="tensorgraph.torch"):
            got = c(*other, x)
        assert MAX_REFRESHES == 2 and c.fn.frozen_count == 0  # third change: fed from now on
        assert any("fed each call" in r.getMessage() for r in caplog.records)
        torch.testing.assert_close(got, net(x) + 1.0, atol=1e-5, rtol=1e-5)
        net[4].weight.mul_(0.5)
        torch.testing.assert_close(c(*tensors, x), net(x), atol=1e-5, rtol=1e-5)


def test_inputs_written_or_returned_stay_fed():
    """An input the graph writes (copy_) or returns is never compiled in."""
    from tensorgraph.torch._lower import compile_graph
    aten = torch.ops.aten
    g = torch.fx.Graph()
    w, buf, x = g.placeholder("w"), g.placeholder("buf"), g.placeholder("x")
    y = g.call_function(aten.mul.Tensor, (x, w))
    g.call_function(aten.copy_.default, (buf, y))
    g.output((y, w))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    w_, buf_, x_ = torch.nn.Parameter(torch.randn(3)), torch.nn.Parameter(torch.zeros(3)), torch.randn(3)
    c = compile_graph(gm, (w_, buf_, x_), "cpu", freeze=lambda t, i: isinstance(t, torch.nn.Parameter))
    with torch.no_grad():
        y_, w_out = c(w_, buf_, x_)
    assert c.fn.frozen_count == 0 and w_out is w_
    torch.testing.assert_close(buf_.detach(), x_ * w_.detach(), atol=0, rtol=0)


def test_compile_module_sees_changed_parameters(caplog):
    net = _net()
    x = torch.randn(1, 3, 5, 5)
    c = tgt.compile_module(net, (x,))
    torch.testing.assert_close(c(x), net(x).detach(), atol=1e-5, rtol=1e-5)
    for k in range(4):  # two recompiles, then fed each call
        with torch.no_grad():
            net[4].bias.add_(1.0)
            net[1].running_mean.add_(0.25)
        with torch.no_grad():
            torch.testing.assert_close(c(x), net(x), atol=1e-5, rtol=1e-5)
    assert c.refreshes == 3 and c._attr_feeds
    with torch.no_grad():
        net[0].weight.mul_(3.0)
        torch.testing.assert_close(c(x), net(x), atol=1e-5, rtol=1e-5)


def _spied_small_cnn(monkeypatch):
    """For the training-graph tests: the Runners compile makes (collected in a list), the layout
    pass left to decide (TG_CHANNELS_LAST unset), and a small CNN (conv, batch norm, max and
    average pooling, linear) with a deep copy of it as PyTorch's reference."""
    import copy
    from tensorgraph.torch import _lower
    runners = []
    real = _lower.Runner.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        runners.append(self)
    monkeypatch.setattr(_lower.Runner, "__init__", spy)
    monkeypatch.delenv("TG_CHANNELS_LAST", raising=False)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.AvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 2 * 2, 5)).eval()
    return runners, net, copy.deepcopy(net)


def test_training_graphs_run_channels_last_with_pytorchs_gradients(monkeypatch):
    """Training graphs (forward and backward, through functorch's AOTAutograd) of NCHW
    convolutions and pooling run NHWC where compile's layout pass pays (the CPU; CUDA at batch
    >= 32): the backward graph's convolution and pooling gradients too. Gradients are PyTorch's."""
    aot = pytest.importorskip("functorch.compile")
    from tensorgraph.torch._backend import decompositions, make_compiler
    runners, net, ref = _spied_small_cnn(monkeypatch)
    comp = make_compiler("f32")
    compiled = aot.aot_module(net, fw_compiler=comp, bw_compiler=comp, decompositions=decompositions())
    x, t = torch.randn(32, 3, 8, 8), torch.randint(0, 5, (32,))
    for model in (compiled, ref):
        torch.nn.functional.cross_entropy(model(x), t).backward()
    assert len(runners) == 2
    fw, bw = (str(r.exe) for r in runners)
    assert "data_layout=nchw" not in fw + bw, fw + bw
    assert fw.count("data_layout=nhwc") == 4, fw           # 2 convolutions, 2 pools
    assert "conv2d_backward_data" in bw and "max_pool2d_backward" in bw and "avg_pool2d_backward" in bw
    assert bw.count("data_layout=nhwc") == 5, bw           # 1 data and 2 weights gradients, 2 pools
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_saved_activations_cross_channels_last(monkeypatch):
    """docs/design/0010 step 3: a graph output marked saved (saved_outputs) comes back as an NCHW
    view of NHWC memory (the layout pass's own value, no transpose), and a channels-last input is
    fed as its NHWC permutation (nhwc_inputs), which the layout pass cancels against the
    convolution's transpose. Values are PyTorch's; the user output stays contiguous."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from tensorgraph.torch._lower import compile_graph
    monkeypatch.delenv("TG_CHANNELS_LAST", raising=False)
    torch.manual_seed(0)
    w, b = torch.randn(6, 4, 3, 3), torch.randn(6)

    def f(x, w, b):
        y = torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1))
        return (y * 2.0, y)
    x = torch.randn(2, 4, 5, 7).to(memory_format=torch.channels_last)
    gm = make_fx(f)(x, w, b)
    ref = f(x, w, b)
    plain = compile_graph(gm, (x, w, b), "cpu")
    cl = compile_graph(gm, (x, w, b), "cpu", saved_outputs=slice(1, None), nhwc_inputs=True)
    assert plain.fn.nhwc_outputs == [] and cl.fn.nhwc_outputs == [1]
    for fn in (plain, cl):
        got = fn(x, w, b)
        for g_, r in zip(got, ref):
            torch.testing.assert_close(g_, r, atol=1e-5, rtol=1e-5)
    got = cl(x, w, b)
    assert got[0].is_contiguous()
    assert got[1].is_contiguous(memory_format=torch.channels_last) and not got[1].is_contiguous()
    # x to NHWC, y * 2 and y back to NCHW; with step 3 only y * 2's transpose is left.
    assert str(plain.fn.exe).count("= transpose(") == 3, str(plain.fn.exe)
    assert str(cl.fn.exe).count("= transpose(") == 1, str(cl.fn.exe)
    # A contiguous (not channels-last) tensor at an NHWC feed is still right (copied by PyTorch).
    torch.testing.assert_close(cl(x.contiguous(), w, b)[1], ref[1], atol=1e-5, rtol=1e-5)
    # A saved weight (autocast's cast of a parameter) is not an activation: it stays contiguous.

    def g(x, w, b):
        w2 = w * 0.5
        y = torch.relu(torch.nn.functional.conv2d(x, w2, b, padding=1))
        return (y.sum(), y, w2)
    gm2 = make_fx(g)(x, w, b)
    c2 = compile_graph(gm2, (x, w, b), "cpu", saved_outputs=slice(1, None))
    assert c2.fn.nhwc_outputs == [1]
    got = c2(x, w, b)
    assert got[2].is_contiguous() and got[1].is_contiguous(memory_format=torch.channels_last)
    for g_, r in zip(got, g(x, w, b)):
        torch.testing.assert_close(g_, r, atol=1e-4, rtol=1e-5)


def test_training_saved_activations_channels_last_gradients(monkeypatch):
    """A training step's forward hands its saved activations back channels-last (role 'forward',
    here with the saved outputs given: functorch's AOTAutograd of PyTorch 1.13 has no metadata
    for them) and the backward (role 'backward') takes them: PyTorch's gradients."""
    aot = pytest.importorskip("functorch.compile")
    from tensorgraph.torch._backend import decompositions, make_compiler
    runners, net, ref = _spied_small_cnn(monkeypatch)
    fw = make_compiler("f32", role="forward", saved_slice=slice(1, None))
    bw = make_compiler("f32", role="backward")
    compiled = aot.aot_module(net, fw_compiler=fw, bw_compiler=bw, decompositions=decompositions())
    x, t = torch.randn(32, 3, 8, 8), torch.randint(0, 5, (32,))
    for model in (compiled, ref):
        torch.nn.functional.cross_entropy(model(x), t).backward()
    assert len(runners) == 2 and len(runners[0].nhwc_outputs) >= 3, runners[0].nhwc_outputs
    assert len(runners[0].zero_outputs) == 1  # the max-pool indices: a stand-in, not computed
    assert runners[1].unread_inputs == 1  # and not fed to the backward
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_pool_indices_left_to_pytorch_are_computed_from_the_input():
    """A backward graph whose max_pool2d_with_indices_backward stays in PyTorch (here dilated,
    which the converter refuses) called with the forward's zero-strided stand-in indices: the
    indices are computed from the saved input first, so the gradient is PyTorch's."""
    from tensorgraph.torch._lower import compile_graph
    aten = torch.ops.aten
    g = torch.fx.Graph()
    dy, x, idx = g.placeholder("dy"), g.placeholder("x"), g.placeholder("idx")
    dx = g.call_function(aten.max_pool2d_with_indices_backward.default,
                         (dy, x, [2, 2], [2, 2], [0, 0], [2, 2], False, idx))
    g.output((g.call_function(aten.mul.Tensor, (dx, 2.0)),))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    torch.manual_seed(0)
    xv = torch.randn(2, 3, 9, 9)
    y, real = aten.max_pool2d_with_indices.default(xv, [2, 2], [2, 2], [0, 0], [2, 2], False)
    dyv = torch.randn_like(y)
    stand_in = torch.zeros((), dtype=torch.int64).expand(real.shape)
    c = compile_graph(gm, (dyv, xv, real), "cpu")
    assert c.nodes_left_to_pytorch == 1
    want = aten.max_pool2d_with_indices_backward.default(dyv, xv, [2, 2], [2, 2], [0, 0], [2, 2], False, real) * 2
    torch.testing.assert_close(c(dyv, xv, stand_in)[0], want)
    torch.testing.assert_close(c(dyv, xv, real)[0], want)
