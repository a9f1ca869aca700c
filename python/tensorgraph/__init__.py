"""TensorGraph for Python: build, differentiate, compile and run computation graphs.

The API mirrors the C++ one (include/tg)::

    import numpy as np
    import tensorgraph as tg

    g = tg.Graph()
    x = g.placeholder([2, 3], tg.float32, "x")
    y = tg.tanh(x) * 2.0 + 1.0
    out = g.run({x: np.ones((2, 3), np.float32)}, [y])   # [TensorData], numpy accepts them
    np.asarray(out[0])                                    # a view, no copy

Values are ``TensorData`` (host or GPU tensors): numpy arrays and DLPack tensors (PyTorch, JAX,
CuPy) go in and come out without copies where the layout allows (``TensorData(array)``,
``tg.from_dlpack``, ``numpy.asarray``, ``torch.from_dlpack``). Mistakes raise
``tensorgraph.Error`` with ``code`` and ``message``. ``tensorgraph.nn`` has the Keras-like model
API and the model zoo; ``tensorgraph.onnx`` imports ONNX models; ``tensorgraph.torch``
runs PyTorch models (imported on its own: ``import tensorgraph.torch``).
"""

from . import _tensorgraph as _C
from ._tensorgraph import *  # noqa: F401,F403 (the op functions, Graph, Tensor, dtypes, ...)
from ._tensorgraph import Error, from_dlpack  # noqa: F401 (not in * when the names start with _)
from . import nn, onnx  # noqa: F401

__version__ = "0.1.0"


def _error_repr(self):
    return f"tensorgraph.Error(code={self.code!r}, message={self.message!r})"


Error.__repr__ = _error_repr
