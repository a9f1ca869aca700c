// Shared helpers of the Python bindings (the `tensorgraph` package's extension module
// tensorgraph._tensorgraph): conversions between Python objects and TensorGraph values, and the
// binding functions of each part of the API (one file per part: core, graph, ops, control flow,
// dlpack, nn, onnx).
#pragma once
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tg/tg.h"

namespace py = pybind11;

namespace tgpy {

/// A DType from a tg.DType, a numpy dtype or scalar type (np.float32), or a name ("float32",
/// "f32", "bfloat16", "bool"). tg::Error(invalid_argument) for anything else (numpy dtypes
/// TensorGraph lacks, e.g. int16, raise tg::Error(dtype_mismatch) naming them).
tg::DType to_dtype(py::handle h);
/// numpy's name of a dtype: "float32", "bfloat16", "bool", ...
std::string numpy_name(tg::DType t);
/// A Device from None (the default device), "cpu", "cuda", "cuda:N" or a tg.Device.
tg::Device to_device(py::handle h);
/// A file path from a str, bytes or os.PathLike (pathlib.Path) object, as os.fspath takes it;
/// TypeError for anything else.
std::string fs_path(py::handle h);
/// A shape from an int or a sequence of ints.
tg::Shape to_shape(py::handle h);
/// A shape as a Python tuple: ints, and for symbolic dims (tg::symbolic_dim) their names as str.
py::tuple shape_tuple(const tg::Shape& s);
/// Axes from None (empty), an int, or a sequence of ints.
std::vector<int64_t> to_axes(py::handle h);

/// A host or device tensor from a tg.TensorData (shared), a numpy array or anything numpy
/// converts (C-contiguous arrays of a TensorGraph dtype are wrapped without copying; others are
/// copied), or an object with __dlpack__ (wrapped without copying). `dtype`, when given, converts
/// Python scalars and sequences (not arrays) to it.
tg::TensorData to_tensor_data(py::handle h, std::optional<tg::DType> dtype = std::nullopt);
/// A zero-copy numpy view of a host tensor (device tensors are copied to the host first; bfloat16
/// is widened to a float32 copy, numpy having no bfloat16). The view keeps the storage alive.
py::array to_numpy(const tg::TensorData& t);

/// `h` as a tensor of `like`'s graph: a tg.Tensor as is, anything else (Python scalar, numpy
/// array, TensorData) a constant; Python scalars take `like`'s dtype.
tg::Tensor as_tensor(py::handle h, const tg::Tensor& like);
/// True for a tg.Tensor.
bool is_tensor(py::handle h);
/// f(a, b) where either side may be a Python value (made a constant of the other's dtype, as
/// as_tensor); tg::Error(invalid_argument) when neither is a tg.Tensor.
tg::Tensor binary_op(tg::Tensor (*f)(tg::Tensor, tg::Tensor), py::handle a, py::handle b);

/// Maps an enum spelled as a string; tg::Error(invalid_argument) "[what] ..." listing the choices.
template <typename E>
E parse_enum(std::string_view what, const std::string& s,
             std::initializer_list<std::pair<const char*, E>> choices) {
  std::string names;
  for (auto& [n, v] : choices) {
    if (s == n) return v;
    names += names.empty() ? std::string("'") + n + "'" : std::string(", '") + n + "'";
  }
  throw tg::Error(tg::ErrorCode::invalid_argument,
                  "[" + std::string(what) + "] '" + s + "' is not one of " + names);
}
tg::Layout to_layout(const std::string& s);
/// "valid", "same", "same_lower" or "explicit"; explicit padding given with "valid" (the default)
/// means "explicit".
tg::Padding to_padding(const std::string& s, py::handle explicit_padding = py::none());

void bind_core(py::module_& m);
void bind_graph(py::module_& m);
void bind_ops(py::module_& m);
void bind_nn_ops(py::module_& m);
void bind_control_flow(py::module_& m);
void bind_dlpack(py::module_& m, py::class_<tg::TensorData>& td);
void bind_nn(py::module_& m);
void bind_onnx(py::module_& m);

}  // namespace tgpy
