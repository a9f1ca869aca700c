"""tensorgraph.torch on a GPU (skipped without CUDA, and the backend cases without torch.compile):
device-side errors are asynchronous (docs/torch.md): a call whose embedding index is out of range
does not raise itself (no host wait per call), a later call of the same graph raises the
tensorgraph.Error naming the index (or check_device_errors does), once, and the graph runs right
after it. Runs as a script too (scripts/gpu-torch-check runs it where pytest is missing)."""
import functools

import pytest

torch = pytest.importorskip("torch")
import tensorgraph  # noqa: E402
import tensorgraph.torch as tgt  # noqa: E402

needs_cuda = pytest.mark.skipif(tensorgraph.Device.cuda_device_count() == 0 or not torch.cuda.is_available(),
                                reason="no CUDA GPU here")
needs_compile = pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs PyTorch >= 2")


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)

    def forward(self, i):
        return self.emb(i) * 2 + 1


def _raises_index(fn, index=12):
    try:
        fn()
    except tensorgraph.Error as e:
        assert f"index {index} " in str(e) and "out of range" in str(e), str(e)
        return
    raise AssertionError("no tensorgraph.Error raised")


@needs_cuda
@needs_compile
@pytest.mark.parametrize("freeze", [False, True])
def test_index_errors_are_raised_by_a_later_call(freeze):
    torch.manual_seed(0)
    net = _Net().cuda().eval()
    # One input tensor, refilled: its address stays (a new address would record the CUDA graph
    # again, which first waits for the device to settle the runs before).
    x = torch.zeros(1, 3, dtype=torch.int64, device="cuda")
    good, bad = [[1, 2, 9]], [[1, 12, 9]]

    def call(values):
        x.copy_(torch.tensor(values))
        return c(x)

    stats = tensorgraph.runtime_stats
    with torch.no_grad():
        ref = net(torch.tensor(good, device="cuda"))
        c = torch.compile(net, backend=functools.partial(tgt.backend, freeze=freeze), dynamic=False)
        for _ in range(3):  # compiled, walked, recorded: then replays
            torch.testing.assert_close(call(good), ref)
        torch.cuda.synchronize()
        waits = stats()["host_waits"]
        call(bad)  # found on the device: not raised by this call, no host wait
        assert stats()["host_waits"] == waits
        torch.cuda.synchronize()
        _raises_index(lambda: call(good))  # the next call raises it, before it queues anything
        waits = stats()["host_waits"]
        torch.testing.assert_close(call(good), ref)  # raised once: runs right again, no wait
        assert stats()["host_waits"] == waits
        call(bad)
        _raises_index(tgt.check_device_errors)  # waits for the device
        tgt.check_device_errors()  # nothing left
        torch.testing.assert_close(call(good), ref)


class _Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = self.body(x)
        return self.head(y.view(y.shape[0], -1))


def _no_tf32():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


@needs_cuda
@needs_compile
def test_dynamic_shapes_inference_matches_eager():
    """torch.compile(dynamic=True) makes every dim symbolic (the convolutions' output sizes are
    expressions, ((s - 1) // 2) + 1): equal to eager for every batch size, with nothing left to
    PyTorch. (Passed on the H200 in sessions 26 and 27.)"""
    _no_tf32()
    torch.manual_seed(0)
    torch._dynamo.reset()
    tgt.backend_stats(reset=True)
    net = _Cnn().cuda().eval()
    c = torch.compile(net, backend=tgt.backend, dynamic=True)
    with torch.no_grad():
        for n in (2, 3, 5, 8, 3):
            x = torch.randn(n, 3, 8, 8, device="cuda")
            torch.testing.assert_close(c(x), net(x), atol=1e-4, rtol=1e-4)
    stats = tgt.backend_stats()
    assert stats["nodes_left_to_pytorch"] == 0, stats["unsupported"]


@needs_cuda
@needs_compile
def test_dynamic_batch_compiles_once():
    """Only the batch dim dynamic (torch._dynamo.mark_dynamic, as Dynamo's automatic dynamic
    shapes mark a dim that changed): the graph's batch is a symbol and every batch size runs the
    one compile-once executable (no TensorGraph compile after the first call), equal to eager.
    (Passed on the H200 in session 27.)"""
    _no_tf32()
    torch.manual_seed(0)
    torch._dynamo.reset()
    net = _Cnn().cuda().eval()
    c = torch.compile(net, backend=tgt.backend)
    stats = tensorgraph.runtime_stats
    with torch.no_grad():
        for k, n in enumerate((2, 3, 5, 8, 3)):
            x = torch.randn(n, 3, 8, 8, device="cuda")
            torch._dynamo.mark_dynamic(x, 0)
            got = c(x)
            if k == 0:
                compiles = stats()["compiles"]
            torch.testing.assert_close(got, net(x), atol=1e-4, rtol=1e-4)
    from tensorgraph.torch._backend import Stats
    kinds = [type(getattr(r(), "fn", None)).__name__ for r in Stats.compiled if r() is not None]
    assert stats()["compiles"] == compiles, (stats()["compiles"], compiles, kinds)


def _train_alongside(make_net, shapes):
    """SGD steps of an eager model and of its torch.compile(dynamic=True) copy on the same
    batches (shapes: (batch, image size) per step): each step's losses agree to 1e-4 relative,
    and the weights after the last. Returns TensorGraph's compile count after the first step and
    at the end, and how each graph compiled (Runner: once; PerShape: per shape)."""
    _no_tf32()
    torch.manual_seed(0)
    torch._dynamo.reset()
    tgt.backend_stats(reset=True)
    ref = make_net().cuda()
    net = make_net().cuda()
    net.load_state_dict(ref.state_dict())
    c = torch.compile(net, backend=tgt.backend, dynamic=True)
    opt_r = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(net.parameters(), lr=0.1)
    first = None
    for n, size in shapes:
        x = torch.randn(n, 3, size, size, device="cuda")
        t = torch.randint(0, 5, (n,), device="cuda")
        losses = []
        for model, opt in ((ref, opt_r), (c, opt_c)):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), t)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        first = tensorgraph.runtime_stats()["compiles"] if first is None else first
        assert abs(losses[0] - losses[1]) <= 1e-4 * abs(losses[0]), (n, size, losses)
    for p, q in zip(ref.parameters(), net.parameters()):
        torch.testing.assert_close(q, p, atol=1e-4, rtol=1e-4)
    from tensorgraph.torch._backend import Stats
    kinds = [type(getattr(r(), "fn", None)).__name__ for r in Stats.compiled if r() is not None]
    return first, tensorgraph.runtime_stats()["compiles"], kinds


@needs_cuda
@needs_compile
def test_dynamic_batch_training_matches_eager():
    """Training steps (forward and backward graphs through AOTAutograd, SGD) with a different batch
    size each step, torch.compile(dynamic=True): the losses and weights equal eager's (passed on
    the H200 in sessions 26 and 27)."""
    _train_alongside(_Cnn, ((4, 8), (6, 8), (8, 8), (6, 8)))


class _GapCnn(torch.nn.Module):
    """A CNN whose head pools globally, so that any image size trains (strided convolution, batch
    norm, padded max pooling: sizes that are expressions of the image size)."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(3, 2, 1), torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        return self.head(self.body(x))


@needs_cuda
@needs_compile
def test_dynamic_training_compiles_once():
    """Training steps (AOTAutograd's forward and backward, SGD) over batch and image sizes with
    torch.compile(dynamic=True): the backward's saved activations have sizes that are
    expressions of the image size (TensorGraph's derived symbols), batch norm divides by each
    run's count, the max-pool indices the backward never reads are zeros: both graphs compile
    once (no TensorGraph compile after the first step), and losses and weights equal eager's.
    (Passed on the H200 in session 27.)"""
    first, last, kinds = _train_alongside(_GapCnn, ((4, 16), (6, 20), (4, 23), (6, 16), (3, 31)))
    assert tgt.backend_stats()["nodes_left_to_pytorch"] == 0, tgt.backend_stats()["unsupported"]
    assert last == first, (last, first, kinds)


if __name__ == "__main__":
    for f in (False, True):
        test_index_errors_are_raised_by_a_later_call(f)
        print(f"test_index_errors_are_raised_by_a_later_call[freeze={f}] passed", flush=True)
    test_dynamic_shapes_inference_matches_eager()
    print("test_dynamic_shapes_inference_matches_eager passed", flush=True)
    test_dynamic_batch_compiles_once()
    print("test_dynamic_batch_compiles_once passed", flush=True)
    test_dynamic_batch_training_matches_eager()
    print("test_dynamic_batch_training_matches_eager passed", flush=True)
    test_dynamic_training_compiles_once()
    print("test_dynamic_training_compiles_once passed", flush=True)
