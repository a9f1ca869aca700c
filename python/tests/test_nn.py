"""tensorgraph.nn: layers, Model / Sequential, compile / fit / evaluate / predict with the progress
bar, callbacks written in Python, checkpoints, the zoo; and the demo's accuracy on MNIST."""
import numpy as np
import pytest

import tensorgraph as tg
from tensorgraph import nn
from conftest import ROOT


def clusters(n, seed):
    """Three separable Gaussian clusters in 2-D."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = np.array([[0.0, 3.0], [3.0, -2.0], [-3.0, -2.0]], np.float32)
    x = centers[y] + rng.normal(scale=0.6, size=(n, 2)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


def test_functional_model_fit_evaluate_predict(capfd):
    x, y = clusters(300, 1)
    xt, yt = clusters(90, 2)
    inp = nn.Input((2,), seed=3)
    h = nn.Dense(16, activation="relu", name="hidden")(inp)
    out = nn.Dense(3)(h)
    model = nn.Model(inp, out)
    assert [l.name for l in model.layers] == ["hidden", "dense"]
    assert model.parameter_count == 2 * 16 + 16 + 16 * 3 + 3
    model.compile(nn.Optimizer.adam(0.05), "sparse_categorical_crossentropy", ["accuracy"])

    class Recorder(nn.Callback):
        def __init__(self):
            super().__init__()
            self.epochs = []

        def on_epoch_end(self, model, epoch, logs):
            self.epochs.append((epoch, logs["loss"]))

    rec = Recorder()
    hist = model.fit(x, y, epochs=10, batch_size=32, callbacks=[rec], verbose=1)
    printed = capfd.readouterr().out
    assert "Epoch 1/10" in printed and "Epoch 10/10" in printed and "accuracy" in printed
    assert [e for e, _ in rec.epochs] == list(range(10))
    losses = hist.history["loss"]
    assert len(losses) == 10 and losses[-1] < losses[0] / 4
    assert hist["accuracy"][-1] >= 0.97
    assert model.global_step == 10 * 10  # ceil(300 / 32) steps per epoch
    logs = model.evaluate(xt, yt)
    assert logs["accuracy"] >= 0.97
    pred = np.asarray(model.predict(xt))
    assert pred.shape == (90, 3)
    assert (pred.argmax(1) == yt).mean() == pytest.approx(logs["accuracy"])


def test_sequential_save_load_and_weights(tmp_path):
    x, y = clusters(64, 3)
    m = nn.Sequential([nn.Dense(8, activation="tanh"), nn.Dense(3)], input_shape=(2,), seed=1)
    m.compile("sgd", "sparse_categorical_crossentropy")
    m.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / "m.safetensors")
    m.save(path)
    before = np.asarray(m.predict(x))
    m2 = nn.Sequential([nn.Dense(8, activation="tanh"), nn.Dense(3)], input_shape=(2,), seed=2)
    assert not np.allclose(np.asarray(m2.predict(x)), before)
    m2.load(path)
    np.testing.assert_array_equal(np.asarray(m2.predict(x)), before)
    w = m2.get_weights()
    assert set(w) == {"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}
    w["dense_1/bias"] = np.array([0.0, 0.0, 100.0], np.float32)
    m2.set_weights(w)
    assert (np.asarray(m2.predict(x)).argmax(1) == 2).all()
    with pytest.raises(tg.Error) as e:
        m2.set_weights({"nope": np.zeros(1, np.float32)})
    assert "[set_weights]" in e.value.message


def test_layers_and_lambda():
    inp = nn.Input((8, 8, 3), seed=0)
    a = nn.Conv2D(4, 3, padding="same", activation="relu")(inp)
    b = nn.Lambda(lambda t: tg.sigmoid(t))(a)
    c = nn.Add()([a, b])
    d = nn.Concatenate()([c, nn.BatchNorm()(c)])
    e = nn.GlobalAvgPool2D()(nn.MaxPool2D(2)(nn.AvgPool2D(1)(d)))
    f = nn.Dense(2)(nn.Dropout(0.1)(nn.Activation("gelu")(e)))
    g = nn.Reshape((2, 1))(f)
    model = nn.Model(inp, nn.Flatten()(g))
    assert model.output.shape == (-1, 2)
    out = np.asarray(model.predict(np.ones((5, 8, 8, 3), np.float32)))
    assert out.shape == (5, 2) and np.isfinite(out).all()
    assert "Conv2D" in model.summary()


def test_zoo():
    assert nn.zoo.names() == ["mlp", "lenet5", "mnist_cnn", "resnet18", "resnet34", "resnet50"]
    assert nn.zoo.lenet5().parameter_count == 61706
    assert nn.zoo.mnist_cnn().parameter_count == 421738
    assert nn.zoo.build("resnet50").parameter_count == 25557032
    with pytest.raises(tg.Error) as e:
        nn.zoo.build("resnet51")
    assert e.value.code == "invalid_argument" and "resnet50" in e.value.message


def test_mnist_cnn_reaches_the_demo_accuracy():
    """`make demo` (tg train: mnist_cnn on the shipped digits, Adam 2e-3 with a cosine schedule and
    100 warm-up steps, batch 32, 6 epochs, each on the images shifted by up to 1 pixel) reaches 98%
    test accuracy; so does the same recipe written in Python (one fit per epoch, stopped by a
    Python callback, so the schedule spans the 6 epochs)."""
    x, y = nn.data.load_mnist(str(ROOT / "data" / "mnist"), "train")
    xt, yt = nn.data.load_mnist(str(ROOT / "data" / "mnist"), "test")
    assert x.shape == (8000, 28, 28, 1) and xt.shape == (2000, 28, 28, 1)
    model = nn.zoo.mnist_cnn(seed=0)
    opt = nn.Optimizer.adam(2e-3)
    opt.schedule = lambda step, total: tg.cosine_warmup_lr(2e-3, step, 100, total)
    model.compile(opt, "sparse_categorical_crossentropy", ["accuracy"])

    class StopAfterEpoch(nn.Callback):
        def on_epoch_end(self, model, epoch, logs):
            model.stop_training()

    epochs = 6
    for e in range(epochs):
        xs, ys = nn.data.random_shift(x, y, 1, seed=e)
        model.fit(xs, ys, epochs=epochs, initial_epoch=e, batch_size=32, callbacks=[StopAfterEpoch()], verbose=2)
    assert model.global_step == epochs * 250
    acc = model.evaluate(xt, yt, batch_size=256)["accuracy"]
    print(f"test accuracy: {100 * acc:.2f}%")
    assert acc >= 0.98


def test_ctrl_c_ends_fit_after_the_current_batch():
    # SIGINT while fit runs (the GIL released) raises KeyboardInterrupt at the next batch's end,
    # not after every epoch: a child trains "forever" and must stop within seconds of the signal.
    out = interrupted_child(
        "x = np.random.default_rng(0).standard_normal((256, 2)).astype(np.float32)\n"
        "y = (x[:, 0] > 0).astype(np.int64)\n"
        "inp = nn.Input((2,)); m = nn.Model(inp, nn.Dense(2)(inp)); m.compile('sgd')\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    m.fit(x, y, epochs=10**7, batch_size=8, verbose=0)\n"
        "    print('finished', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted at step', m.global_step, flush=True)\n")
    assert "interrupted at step" in out, out
    assert int(out.split("interrupted at step")[1].split()[0]) > 0


def test_ctrl_c_ends_a_run_whose_while_loop_never_ends():
    # A while_loop without max_iterations whose predicate stays true: Ctrl-C raises
    # KeyboardInterrupt from Graph.run, and the failed run commits no variable assignment.
    out = interrupted_child(
        "g = tg.Graph()\n"
        "x = g.placeholder([3], tg.float32, 'x')\n"
        "v = g.variable(np.float32([1, 2, 3]), name='v')\n"
        "w = tg.while_loop([x], lambda s: (tg.less(tg.reduce_sum(s[0]), 1e9), [s[0]]), lambda s: [s[0] * 1.0])[0]\n"
        "step = tg.assign_variable(v, w)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    g.run({x: np.ones(3, np.float32)}, [w], [step], device='cpu')\n"
        "    print('finished', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted, v =', np.asarray(g.variable_value(v)).tolist(), flush=True)\n")
    assert "interrupted, v = [1.0, 2.0, 3.0]" in out, out


def interrupted_child(code):
    """Runs `code` (after numpy/tensorgraph imports) in a child that prints 'ready' before its long
    call, sends it SIGINT a second later and returns its output (fails if it has not ended 30 s later)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    code = "import numpy as np, tensorgraph as tg\nfrom tensorgraph import nn\n" + code
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
    finally:
        p.kill()
    return out
