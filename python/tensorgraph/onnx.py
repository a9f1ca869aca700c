"""ONNX import (the C++ tg::onnx, docs/onnx.md).

    import tensorgraph as tg
    m = tg.onnx.load("model.onnx")
    outputs = m.run([image])           # TensorData per model output
"""

from ._tensorgraph.onnx import *  # noqa: F401,F403
