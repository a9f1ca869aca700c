"""DTypes with numpy's names, devices, TensorData from and to numpy without copies."""
import numpy as np
import pytest

import tensorgraph as tg


def test_dtypes_have_numpy_names():
    names = {
        tg.bool_: "bool", tg.int8: "int8", tg.uint8: "uint8", tg.int32: "int32", tg.int64: "int64",
        tg.float16: "float16", tg.bfloat16: "bfloat16", tg.float32: "float32", tg.float64: "float64",
    }
    for dt, name in names.items():
        assert dt.name == name and str(dt) == name
        assert tg.dtype(name) == dt
        if dt != tg.bfloat16:
            assert dt.numpy == np.dtype(name)
            assert tg.dtype(np.dtype(name)) == dt
            assert dt.itemsize == np.dtype(name).itemsize
    assert tg.bfloat16.numpy is None and tg.bfloat16.itemsize == 2
    assert tg.dtype(np.float32) == tg.float32 and tg.dtype("f32") == tg.float32
    with pytest.raises(tg.Error) as e:
        tg.dtype(np.int16)
    assert e.value.code == "dtype_mismatch" and "int16" in e.value.message


def test_numpy_in_without_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = tg.TensorData(a)
    assert t.shape == (3, 4) and t.dtype == tg.float32 and t.device == tg.Device.cpu()
    assert t.data_ptr == a.ctypes.data  # the same memory
    back = np.asarray(t)
    assert back.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(back, a)


def test_numpy_out_without_copy_keeps_storage_alive():
    g = tg.Graph()
    x = g.placeholder([2, 3], tg.float32, "x")
    (y,) = g.run({x: np.ones((2, 3), np.float32)}, [x * 3.0])
    view = np.asarray(y)
    assert view.ctypes.data == y.data_ptr
    del y  # the view keeps the tensor's storage
    np.testing.assert_array_equal(view, np.full((2, 3), 3.0, np.float32))


def test_non_contiguous_arrays_are_copied():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]
    t = tg.TensorData(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert t.data_ptr != a.ctypes.data


def test_python_sequences_convert_exactly_or_raise():
    g = tg.Graph()
    i = g.placeholder([2], tg.int32, "i")
    f = g.placeholder([2], tg.float32, "f")
    assert np.asarray(g.run({i: [3, -4]}, i * 2, device="cpu")).tolist() == [6, -8]
    np.testing.assert_allclose(np.asarray(g.run({f: [0.1, 2]}, f, device="cpu")), np.float32([0.1, 2]))
    for bad in ([2**40, 1], [1.7, 2]):  # wrapped to [0, 1] / truncated to [1, 2] before
        with pytest.raises(tg.Error, match="does not fit i32 exactly") as e:
            g.run({i: bad}, i, device="cpu")
        assert e.value.code == "invalid_argument"
    with pytest.raises(tg.Error, match="None is not a value"):
        g.run({i: None}, i, device="cpu")
    b = g.placeholder([2], tg.bool_ if hasattr(tg, "bool_") else tg.bool, "b")
    for bad, p in (([None, 1.0], f), (["7", "8"], i), ([2**70, 1], i), ([-2**63 - 1, 0], i), ([0, 2**64], b)):
        with pytest.raises(tg.Error) as e:  # None/str/huge ints: object or str arrays before
            g.run({p: bad}, p, device="cpu")
        assert e.value.code == "invalid_argument", bad


def test_python_int_operands_are_exact():
    g = tg.Graph()
    x8 = g.placeholder([2], tg.int8, "x8")
    x64 = g.placeholder([1], tg.int64, "x64")
    with pytest.raises(tg.Error, match="does not fit i8 exactly"):
        tg.equal(x8, 200)  # was clamped to 127: [127, 1] == 200 gave [True, False]
    got = g.run({x64: np.array([0], np.int64)}, x64 + (2**53 + 1), device="cpu")
    assert np.asarray(got).tolist() == [2**53 + 1]  # not rounded through double
    assert np.asarray(g.run({x8: np.int8([3, 4])}, x8 * 2, device="cpu")).tolist() == [6, 8]


def test_bfloat16_values_round_to_nearest_even():
    t = tg.TensorData([1.0, 1.00390625, 1.01171875, 3.0e38, -2.5], dtype=tg.bfloat16)
    assert t.dtype == tg.bfloat16 and t.nbytes == 10
    # bfloat16 keeps 7 mantissa bits (steps of 2^-7 in [1, 2)). 1 + 2^-8 is halfway between 1 and
    # 1 + 2^-7: ties to even gives 1; 1 + 1.5 * 2^-7 gives 1 + 2^-6 (even). 3e38 = 0x7f61b1e6 in
    # float32 rounds to 0x7f62 << 16 = 3.0040553e38.
    np.testing.assert_array_equal(np.asarray(t), np.array([1.0, 1.0, 1.015625, 3.0040553e38, -2.5], np.float32))


def test_tensor_data_helpers():
    z = tg.TensorData.zeros((2, 2), tg.int32)
    assert z.tolist() == [[0, 0], [0, 0]]
    f = tg.TensorData.full((3,), 1.5)
    assert f.tolist() == [1.5, 1.5, 1.5]
    assert tg.TensorData(np.array(7, np.int64)).item() == 7
    r = tg.TensorData.random_uniform((1000,), -1.0, 1.0, seed=3)
    v = np.asarray(r)
    assert v.min() >= -1.0 and v.max() < 1.0 and abs(v.mean()) < 0.1
    assert np.asarray(f.reshape(3, 1)).shape == (3, 1)


def test_devices():
    assert str(tg.Device("cpu")) == "cpu"
    assert tg.Device("cuda:1") == tg.Device.cuda(1)
    with pytest.raises(tg.Error) as e:
        tg.Device("gpu")
    assert e.value.code == "invalid_argument"
    tg.synchronize("cpu")  # a no-op
    with pytest.raises(tg.Error) as e:
        tg.device_stream("cpu")
    assert e.value.code == "unsupported"
