"""Zero-copy DLPack exchange with PyTorch (Debian's python3-torch) and numpy: the same memory on
both sides, in both directions. GPU cases run where CUDA and torch.cuda are usable."""
import numpy as np
import pytest

import tensorgraph as tg

torch = pytest.importorskip("torch")


def test_torch_to_tensorgraph_shares_memory():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    d = tg.from_dlpack(t)
    assert d.shape == (3, 4) and d.dtype == tg.float32 and d.device == tg.Device.cpu()
    assert d.data_ptr == t.data_ptr()
    t[0, 0] = 100.0  # the same memory
    assert np.asarray(d)[0, 0] == 100.0
    # fed straight into a run
    g = tg.Graph()
    x = g.placeholder([3, 4], tg.float32)
    (y,) = g.run({x: t}, [tg.reduce_sum(x, 1)], device="cpu")
    np.testing.assert_array_equal(np.asarray(y), t.sum(1).numpy())


def test_tensorgraph_to_torch_shares_memory():
    g = tg.Graph()
    x = g.placeholder([2, 3], tg.float64)
    (y,) = g.run({x: np.ones((2, 3))}, [x * 4.0], device="cpu")
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.data_ptr and t.dtype == torch.float64 and tuple(t.shape) == (2, 3)
    assert t.sum().item() == 24.0
    del y  # torch's tensor keeps the storage
    assert t.sum().item() == 24.0


@pytest.mark.parametrize("dt, tdt", [(tg.int8, torch.int8), (tg.uint8, torch.uint8), (tg.int32, torch.int32),
                                     (tg.int64, torch.int64), (tg.float16, torch.float16),
                                     (tg.bfloat16, torch.bfloat16), (tg.float32, torch.float32)])
def test_dtypes_round_trip(dt, tdt):
    t = (torch.arange(6) - 2).to(tdt).reshape(2, 3)
    d = tg.from_dlpack(t)
    assert d.dtype == dt and d.data_ptr == t.data_ptr()
    back = torch.from_dlpack(d)
    assert back.dtype == tdt and back.data_ptr() == t.data_ptr() and torch.equal(back, t)


def test_numpy_from_dlpack_and_capsules():
    d = tg.TensorData(np.arange(5, dtype=np.int32))
    a = np.from_dlpack(d)
    assert a.ctypes.data == d.data_ptr and a.tolist() == [0, 1, 2, 3, 4]
    cap = torch.utils.dlpack.to_dlpack(torch.ones(3))
    assert tg.from_dlpack(cap).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(tg.Error) as e:
        tg.from_dlpack(cap)  # consumed
    assert e.value.code == "invalid_argument"


def test_non_contiguous_and_misaligned_tensors():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    with pytest.raises(tg.Error) as e:
        tg.from_dlpack(t.t())
    assert e.value.code == "invalid_argument" and "row-major" in e.value.message
    view = torch.arange(8, dtype=torch.float32)[1:]  # 4 bytes past an aligned start: copied
    d = tg.from_dlpack(view)
    assert d.tolist() == list(range(1, 8)) and d.data_ptr != view.data_ptr()


def test_strided_torch_views_are_copied_as_feeds():
    # tg.from_dlpack refuses a view (it shares memory); fed to a run, a view is copied dense, as a
    # non-contiguous numpy array is.
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    g = tg.Graph()
    p = g.placeholder([4, 3], tg.float32, "x")
    np.testing.assert_array_equal(np.asarray(g.run({p: t.T}, p * 1.0, device="cpu")), t.T.numpy())
    q = g.placeholder([2, 4], tg.float32, "y")
    np.testing.assert_array_equal(np.asarray(g.run({q: t[::2]}, q + 0.0, device="cpu")), t[::2].numpy())


def test_empty_tensors_with_any_strides():
    # torch calls a [0,3,8,8] tensor with strides [1,64,8,1] contiguous: accepted, shape kept.
    x = torch.randn(0, 3, 8, 8)
    d = tg.from_dlpack(x)
    assert list(d.shape) == [0, 3, 8, 8] and d.dtype == tg.float32
    g = tg.Graph()
    p = g.placeholder([-1, 3, 8, 8], tg.float32, "x")
    assert list(np.asarray(g.run({p: d}, p * 2.0)).shape) == [0, 3, 8, 8]


cuda = pytest.mark.skipif(tg.Device.cuda_device_count() == 0 or not torch.cuda.is_available(),
                          reason="needs a CUDA GPU usable by TensorGraph and torch")


@cuda
def test_cuda_exchange_without_copies():
    t = torch.arange(1 << 20, dtype=torch.float32, device="cuda").reshape(1024, 1024)
    d = tg.from_dlpack(t)
    assert d.device == tg.Device.cuda(0) and d.data_ptr == t.data_ptr()
    g = tg.Graph()
    x = g.placeholder([1024, 1024], tg.float32)
    (y,) = g.run({x: d}, [x * 2.0], device="cuda")
    back = torch.from_dlpack(y)
    assert back.device.type == "cuda" and back.data_ptr() == y.data_ptr
    assert torch.equal(back, t * 2)
