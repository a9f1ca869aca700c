"""tensorgraph.onnx: a PyTorch model exported to ONNX, imported and run, against PyTorch."""
import io

import numpy as np
import pytest

import tensorgraph as tg

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
