"""tensorgraph.onnx: a PyTorch model exported to ONNX, imported and run, against PyTorch."""
import io

import numpy as np
import pytest

import tensorgraph as tg
from conftest import ROOT

torch = pytest.importorskip("torch")


def exported_cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 5), torch.nn.Softmax(dim=1)).eval()
    buf = io.BytesIO()
    torch.onnx.export(model, torch.randn(2, 3, 8, 8), buf, input_names=["image"], output_names=["probs"],
                      dynamic_axes={"image": {0: "batch"}}, opset_version=13)
    return model, buf.getvalue()


def test_import_and_run_matches_torch(tmp_path):
    assert tg.onnx.available()
    model, data = exported_cnn()
    path = tmp_path / "cnn.onnx"
    path.write_bytes(data)
    # The dynamic batch axis keeps its dim_param's name: a named symbol.
    assert tg.onnx.model_inputs(str(path)) == [("image", tg.float32, ("batch", 3, 8, 8))]
    m = tg.onnx.load(path)
    assert [n for n, _ in m.inputs] == ["image"] and [n for n, _ in m.outputs] == ["probs"]
    x = np.random.default_rng(0).normal(size=(4, 3, 8, 8)).astype(np.float32)
    (probs,) = m.run([x], device="cpu")
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.asarray(probs), want, rtol=1e-5, atol=1e-6)
    (again,) = tg.onnx.load(data).run({"image": x}, device="cpu")  # from bytes, feeds by name
    np.testing.assert_array_equal(np.asarray(again), np.asarray(probs))


def test_initializer_values_replace_the_defaults_of_inputs(tmp_path):
    # keep_initializers_as_inputs: the weights are graph inputs with defaults (IR < 4 style), which
    # ONNX lets a feed replace: initializer_values does at import (it was impossible).
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2).eval()
    buf = io.BytesIO()
    torch.onnx.export(model, torch.randn(1, 3), buf, input_names=["x"], output_names=["y"],
                      keep_initializers_as_inputs=True, opset_version=13)
    path = tmp_path / "linear.onnx"
    path.write_bytes(buf.getvalue())
    assert [n for n, _, _ in tg.onnx.model_inputs(str(path))] == ["x"]
    assert [n for n, _, _ in tg.onnx.model_inputs(str(path), with_defaults=True)] == ["x", "weight", "bias"]
    x = np.float32([[1, 2, 3]])
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.asarray(tg.onnx.load(path).run([x], device="cpu")[0]), want, rtol=1e-6)
    w = np.float32([[1, 0, 0], [0, 1, 1]])
    m = tg.onnx.load(path, initializer_values={"weight": w, "bias": np.float32([10, 20])})
    assert [n for n, _ in m.inputs] == ["x"]
    np.testing.assert_array_equal(np.asarray(m.run([x], device="cpu")[0]), [[11, 25]])
    with pytest.raises(tg.Error) as e:
        tg.onnx.load(path, initializer_values={"x": x})
    assert e.value.code == "not_found"
    assert "tg.onnx.load(..., initializer_values={name: value}) names 'x'" in e.value.message
    with pytest.raises(tg.Error) as e:  # a weight given to run: the error points to initializer_values
        tg.onnx.load(path).run({"x": x, "weight": w}, device="cpu")
    assert e.value.code == "not_found"
    assert "no input 'weight' (its inputs: 'x'); an initializer's value is given at load: " \
        "tg.onnx.load(..., initializer_values={'weight': value})" in e.value.message


def test_import_errors():
    with pytest.raises(tg.Error) as e:
        tg.onnx.load("/nonexistent/model.onnx")
    assert e.value.code == "not_found"
    with pytest.raises(tg.Error) as e:
        tg.onnx.load(b"not a model")
    assert e.value.code in ("io_error", "invalid_argument")
    _, data = exported_cnn()
    with pytest.raises(tg.Error) as e:
        tg.onnx.load(data).run([np.zeros((2, 3, 8, 8), np.float32), np.zeros(1, np.float32)], device="cpu")
    assert "1 inputs, 2 values" in e.value.message
    with pytest.raises(tg.Error) as e:  # a misspelled input name is not ignored
        tg.onnx.load(data).run({"image": np.zeros((2, 3, 8, 8), np.float32), "imgae": 1}, device="cpu")
    assert e.value.code == "not_found" and "no input 'imgae' (its inputs: 'image')" in e.value.message
    with pytest.raises(tg.Error) as e:  # a directory is not a model file
        tg.onnx.load(ROOT / "python")
    assert e.value.code == "io_error" and "is a directory" in e.value.message


@pytest.mark.parametrize("kind,kwargs", [
    ("conv", dict(kernel_size=3, padding=1)),
    ("conv", dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 2), dilation=(2, 1, 1))),
    ("conv", dict(kernel_size=3, groups=2, bias=False)),
    ("convt", dict(kernel_size=3)),
    ("convt", dict(kernel_size=(3, 2, 3), stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
                   dilation=(1, 2, 1))),
    ("convt", dict(kernel_size=3, stride=2, groups=2, dilation=2, bias=False)),
])
def test_3d_convolutions_match_torch(kind, kwargs):
    # Conv3d / ConvTranspose3d (video and volumetric models) as PyTorch exports them, against
    # PyTorch in float64; odd sizes so every stride, dilation and padding edge shows.
    torch.manual_seed(1)
    module = (torch.nn.Conv3d if kind == "conv" else torch.nn.ConvTranspose3d)(4, 6, **kwargs).eval()
    x = torch.randn(2, 4, 7, 6, 9)
    buf = io.BytesIO()
    torch.onnx.export(module, x, buf, input_names=["x"], opset_version=13,
                      dynamic_axes={"x": {0: "batch"}})
    with torch.no_grad():
        want = module.double()(x.double()).numpy()
    (got,) = tg.onnx.load(buf.getvalue()).run([x.numpy()], device="cpu")
    assert np.asarray(got).shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
