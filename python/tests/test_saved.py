"""Executable.save / load (issue 23, docs/design/0008): a loaded executable runs without
recompiling and gives the saved one's results bit for bit; bad files raise tensorgraph.Error."""
import numpy as np
import pytest

import tensorgraph as tg


def _program():
    g = tg.Graph()
    x = g.placeholder([2, 3], tg.float32, "x")
    w = g.variable(np.array([[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]], np.float32), name="w")
    y = tg.relu(tg.matmul(x, w)) + 1.0
    step = tg.assign_variable(w, w * 2.0)
    return g, x, w, y, step


def test_save_load_round_trip_is_bit_identical(tmp_path):
    g, x, _, y, _ = _program()
    exe = g.compile({x: ([2, 3], tg.float32)}, [y], device="cpu")
    xv = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], np.float32)
    want = np.asarray(exe.run([xv])[0])
    path = str(tmp_path / "m.tgx")
    exe.save(path)
    compiles = tg.runtime_stats()["compiles"]
    loaded = tg.Executable.load(path, "cpu")
    assert tg.runtime_stats()["compiles"] == compiles  # no pass pipeline on load
    got = np.asarray(loaded.run([xv])[0])
    assert got.tobytes() == want.tobytes()
    with pytest.raises(tg.Error, match="takes a list of inputs in feed order"):
        loaded.run({x: xv})
    # relu(x @ w) + 1 by hand for the first row: [1*0.5 - 2*2 + 0.5*1.5, 1*-1 - 2*0.25 + 0.5*-0.75]
    np.testing.assert_allclose(got[0], [max(0.5 - 4.0 + 0.75, 0.0) + 1.0, max(-1.0 - 0.5 - 0.375, 0.0) + 1.0])
    from_bytes = tg.Executable.load_from_bytes(exe.save_to_bytes(), "cpu")
    assert np.asarray(from_bytes.run([xv])[0]).tobytes() == want.tobytes()


def test_paths_and_buffers_of_any_kind(tmp_path):
    """save/load take os.PathLike paths (pathlib.Path) as well as str; load_from_bytes any
    contiguous buffer (bytes, bytearray, memoryview); a path of another type is a TypeError."""
    g, x, _, y, _ = _program()
    exe = g.compile({x: ([2, 3], tg.float32)}, [y], device="cpu")
    xv = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], np.float32)
    want = np.asarray(exe.run([xv])[0]).tobytes()
    path = tmp_path / "m.tgx"
    exe.save(path)
    data = path.read_bytes()
    for loaded in (tg.Executable.load(path, "cpu"), tg.Executable.load_from_bytes(bytearray(data), "cpu"),
                   tg.Executable.load_from_bytes(memoryview(data), "cpu")):
        assert np.asarray(loaded.run([xv])[0]).tobytes() == want
    with pytest.raises(TypeError):
        tg.Executable.load(3, "cpu")


def test_variables_embedded_or_bound_to_a_graph():
    g, x, w, y, step = _program()
    exe = g.compile({x: ([2, 3], tg.float32)}, [y], [step], device="cpu")
    w0 = np.asarray(g.variable_value(w)).copy()
    own = tg.Executable.load_from_bytes(exe.save_to_bytes(), "cpu")
    own.run([np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(np.asarray(g.variable_value(w)), w0)  # its own copy changed
    bound = tg.Executable.load_from_bytes(exe.save_to_bytes(embed_variables=False), "cpu", variables=g)
    bound.run([np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(np.asarray(g.variable_value(w)), w0 * 2.0)
    with pytest.raises(tg.Error) as e:
        tg.Executable.load_from_bytes(exe.save_to_bytes(embed_variables=False), "cpu")
    assert e.value.code == "not_found"


def test_bad_files_raise(tmp_path):
    g, x, _, y, _ = _program()
    data = bytearray(g.compile({x: ([2, 3], tg.float32)}, [y], device="cpu").save_to_bytes())
    with pytest.raises(tg.Error) as e:
        tg.Executable.load_from_bytes(bytes(data[: len(data) // 2]), "cpu")
    assert e.value.code == "io_error" and "<bytes>" in e.value.message
    data[0:4] = b"NOPE"
    with pytest.raises(tg.Error) as e:
        tg.Executable.load_from_bytes(bytes(data), "cpu")
    assert e.value.code in ("io_error", "unsupported")
    with pytest.raises(tg.Error) as e:
        tg.Executable.load(str(tmp_path / "missing.tgx"), "cpu")
    assert e.value.code == "io_error" and "missing.tgx" in e.value.message
