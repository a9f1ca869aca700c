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


if __name__ == "__main__":
    for f in (False, True):
        test_index_errors_are_raised_by_a_later_call(f)
        print(f"test_index_errors_are_raised_by_a_later_call[freeze={f}] passed", flush=True)
