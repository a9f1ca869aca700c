// Bindings of the core types: DType (numpy's names), Device, TensorType and TensorData (numpy in
// and out without copies where the layout allows), plus the conversions of common.h.
#include <cstring>

#include "common.h"

namespace tgpy {

namespace {

struct DTypeName {
  tg::DType dtype;
  const char* numpy;
};
constexpr DTypeName kNames[] = {
    {tg::DType::bool_, "bool"},     {tg::DType::i8, "int8"},       {tg::DType::u8, "uint8"},
    {tg::DType::i32, "int32"},      {tg::DType::i64, "int64"},     {tg::DType::f16, "float16"},
    {tg::DType::bf16, "bfloat16"},  {tg::DType::f32, "float32"},   {tg::DType::f64, "float64"},
};

// The numpy dtype of a TensorGraph dtype (bfloat16 has none: nullopt).
std::optional<py::dtype> numpy_dtype(tg::DType t) {
  if (t == tg::DType::bf16) return std::nullopt;
  return py::dtype(numpy_name(t));
}

}  // namespace

std::string numpy_name(tg::DType t) {
  for (auto& n : kNames)
    if (n.dtype == t) return n.numpy;
  return std::string(tg::dtype_name(t));
}

tg::DType to_dtype(py::handle h) {
  if (py::isinstance<tg::DType>(h)) return h.cast<tg::DType>();
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    for (auto& n : kNames)
      if (s == n.numpy) return n.dtype;
    if (s == "bool_") return tg::DType::bool_;
    return tg::dtype_from_name(s);  // "f32", "i64", ... (tg::Error(invalid_argument) otherwise)
  }
  // numpy dtypes and scalar types (np.float32, np.dtype('int64'), float, bool).
  py::module_ np = py::module_::import("numpy");
  py::object d;
  try {
    d = np.attr("dtype")(h);
  } catch (py::error_already_set&) {
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[dtype] " + py::repr(h).cast<std::string>() + " is not a dtype");
  }
  std::string name = py::str(d.attr("name")).cast<std::string>();
  for (auto& n : kNames)
    if (name == n.numpy) return n.dtype;
  throw tg::Error(tg::ErrorCode::dtype_mismatch,
                  "[dtype] numpy dtype " + name +
                      " has no TensorGraph counterpart (bool, int8, uint8, int32, int64, float16, "
                      "bfloat16, float32, float64)");
}

std::string fs_path(py::handle h) {
  return py::module_::import("os").attr("fspath")(h).cast<std::string>();
}

tg::Device to_device(py::handle h) {
  if (h.is_none()) return tg::Device::default_device();
  if (py::isinstance<tg::Device>(h)) return h.cast<tg::Device>();
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    if (s == "cpu") return tg::Device::cpu();
    if (s == "cuda") return tg::Device::cuda(0);
    if (s.rfind("cuda:", 0) == 0) {
      try {
        size_t used = 0;
        int i = std::stoi(s.substr(5), &used);
        if (used == s.size() - 5 && i >= 0) return tg::Device::cuda(i);
      } catch (const std::exception&) {
      }
    }
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[device] '" + s + "' is not a device: 'cpu', 'cuda' or 'cuda:N'");
  }
  throw tg::Error(tg::ErrorCode::invalid_argument,
                  "[device] " + py::repr(h).cast<std::string>() + " is not a device");
}

tg::Shape to_shape(py::handle h) {
  if (py::isinstance<py::int_>(h)) return {h.cast<int64_t>()};
  tg::Shape s;
  try {
    // Ints, and str dims naming symbols (tg::symbolic_dim), e.g. ("batch", "seq", 768).
    for (py::handle d : py::iter(h)) {
      s.push_back(py::isinstance<py::str>(d) ? tg::symbolic_dim(d.cast<std::string>()) : d.cast<int64_t>());
    }
  } catch (const py::error_already_set&) {
    s.clear();
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[shape] " + py::repr(h).cast<std::string>() + " is not a shape (ints, or str symbols)");
  } catch (const py::cast_error&) {
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[shape] " + py::repr(h).cast<std::string>() + " is not a shape (ints, or str symbols)");
  }
  return s;
}

py::tuple shape_tuple(const tg::Shape& s) {
  py::list out;
  for (int64_t d : s) {
    if (tg::is_symbolic_dim(d)) out.append(py::str(tg::dim_name(d)));
    else out.append(py::int_(d));
  }
  return py::tuple(out);
}

std::vector<int64_t> to_axes(py::handle h) {
  if (h.is_none()) return {};
  return to_shape(h);
}

tg::Layout to_layout(const std::string& s) {
  return parse_enum<tg::Layout>("layout", s,
                                {{"nhwc", tg::Layout::nhwc}, {"nchw", tg::Layout::nchw},
                                 {"hwio", tg::Layout::hwio}, {"oihw", tg::Layout::oihw},
                                 {"ohwi", tg::Layout::ohwi}});
}
tg::Padding to_padding(const std::string& s, py::handle explicit_padding) {
  if (!explicit_padding.is_none() && s == "valid") return tg::Padding::explicit_padding;
  return parse_enum<tg::Padding>("padding", s,
                                 {{"valid", tg::Padding::valid}, {"same", tg::Padding::same},
                                  {"same_lower", tg::Padding::same_lower},
                                  {"explicit", tg::Padding::explicit_padding}});
}

namespace {

// Keeps a Python object alive for as long as a TensorData's storage lives; the last release
// takes the GIL (runs may drop tensors on other threads).
std::shared_ptr<void> python_owner(py::object o) {
  auto* held = new py::object(std::move(o));
  return std::shared_ptr<void>(held, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
}

tg::TensorData from_numpy(py::array a) {
  tg::DType dt = to_dtype(a.dtype());
  tg::Shape shape(a.shape(), a.shape() + a.ndim());
  const bool contiguous = (a.flags() & py::array::c_style) != 0;
  const bool aligned = reinterpret_cast<uintptr_t>(a.data()) % 16 == 0;
  if (contiguous && aligned && a.size() > 0) {
    // Zero copy: the tensor reads the array's memory and keeps the array alive.
    return tg::TensorData::from_external(const_cast<void*>(a.data()), shape, dt, tg::Device::cpu(),
                                         python_owner(a));
  }
  tg::TensorData t(shape, dt);
  if (a.size() > 0) {
    py::array c = py::array::ensure(a, py::array::c_style | py::array::forcecast);
    std::memcpy(t.raw_data(), c.data(), t.nbytes());
  }
  return t;
}

}  // namespace

bool is_tensor(py::handle h) { return py::isinstance<tg::Tensor>(h); }

tg::TensorData to_tensor_data(py::handle h, std::optional<tg::DType> dtype) {
  if (py::isinstance<tg::TensorData>(h)) return h.cast<tg::TensorData>();
  if (py::isinstance<py::array>(h)) return from_numpy(py::reinterpret_borrow<py::array>(h));
  if (py::hasattr(h, "__dlpack__") && py::hasattr(h, "__dlpack_device__")) {
    py::module_ tgm = py::module_::import("tensorgraph._tensorgraph");
    py::object dense = py::reinterpret_borrow<py::object>(h);
    // A strided view (torch's x.T, x[::2]) is copied dense first, as a non-contiguous numpy array
    // is; tg.from_dlpack itself refuses one (it shares memory, which a copy would not).
    if (py::hasattr(h, "is_contiguous") && py::hasattr(h, "contiguous") &&
        !h.attr("is_contiguous")().cast<bool>()) {
      dense = h.attr("contiguous")();
    }
    return tgm.attr("from_dlpack")(dense).cast<tg::TensorData>();
  }
  // Python scalars and (nested) sequences: through numpy, in `dtype` when given.
  py::module_ np = py::module_::import("numpy");
  py::object arr;
  if (dtype && *dtype == tg::DType::bf16) {
    // numpy has no bfloat16: round float32 values to nearest even.
    py::array_t<float, py::array::c_style | py::array::forcecast> f =
        np.attr("asarray")(h, "float32");
    tg::Shape shape(f.shape(), f.shape() + f.ndim());
    tg::TensorData t(shape, tg::DType::bf16);
    auto* out = static_cast<tg::bf16_t*>(t.raw_data());
    for (py::ssize_t i = 0; i < f.size(); ++i) out[i] = tg::bf16_t(f.data()[i]);
    return t;
  }
  if (h.is_none()) {
    throw tg::Error(tg::ErrorCode::invalid_argument, "[feed] None is not a value (give an array or a number)");
  }
  if (dtype) {
    // Converted from numpy's own reading of the values, which must survive into an integer or
    // bool dtype exactly: [2**40] into i32 wrapped to 0 and [1.7] truncated to 1 before.
    py::object natural;
    try {
      natural = np.attr("asarray")(h);
    } catch (const py::error_already_set& e) {
      if (!e.matches(PyExc_OverflowError)) throw;
      natural = np.attr("asarray")(h, "object");  // ints beyond 64 bits: refused below
    }
    const std::string kind = py::str(natural.attr("dtype").attr("kind")).cast<std::string>();
    if (kind == "O" || kind == "U" || kind == "S") {  // None, strings, ints beyond 64 bits
      std::string shown = py::repr(h).cast<std::string>();
      if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
      throw tg::Error(tg::ErrorCode::invalid_argument,
                      "[feed] " + shown + " is not an array of numbers that fit " +
                          std::string(tg::dtype_name(*dtype)));
    }
    arr = natural.attr("astype")(numpy_name(*dtype));
    const bool exact_target = tg::is_integer(*dtype) || *dtype == tg::DType::bool_;
    if (exact_target && kind.size() == 1 && std::string("iufb").find(kind[0]) != std::string::npos &&
        !np.attr("array_equal")(arr, natural).cast<bool>()) {
      std::string shown = py::repr(h).cast<std::string>();
      if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
      throw tg::Error(tg::ErrorCode::invalid_argument,
                      "[feed] " + shown + " does not fit " + std::string(tg::dtype_name(*dtype)) +
                          " exactly (out of range or not whole): give an array of that dtype to convert it yourself");
    }
  } else {
    arr = np.attr("asarray")(h);
    // Python floats become float32 and ints int64 unless numpy says otherwise (as TensorFlow).
    std::string kind = py::str(arr.attr("dtype").attr("name")).cast<std::string>();
    if (kind == "float64" && !py::isinstance<py::array>(h)) arr = arr.attr("astype")("float32");
  }
  return from_numpy(py::reinterpret_borrow<py::array>(arr));
}

py::array to_numpy(const tg::TensorData& t0) {
  tg::TensorData t = t0.device().is_cpu() ? t0 : t0.to(tg::Device::cpu());
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == tg::DType::bf16) {
    py::array_t<float> out(shape);
    auto* src = static_cast<const tg::bf16_t*>(t.raw_data());
    for (int64_t i = 0; i < t.num_elements(); ++i) out.mutable_data()[i] = static_cast<float>(src[i]);
    return out;
  }
  auto* keep = new tg::TensorData(t);
  py::capsule base(keep, [](void* p) { delete static_cast<tg::TensorData*>(p); });
  void* data = t.empty() || t.num_elements() == 0 ? nullptr : const_cast<void*>(t.raw_data());
  if (data == nullptr) return py::array(*numpy_dtype(t.dtype()), shape);
  return py::array(*numpy_dtype(t.dtype()), shape, data, base);
}

void bind_core(py::module_& m) {
  py::enum_<tg::DType> dtype(m, "DType",
                             "Element type of a tensor, with numpy's names (tg.float32, tg.int64, "
                             "tg.bfloat16, ...). float16 and bfloat16 are stored in 16 bits and "
                             "computed in float32.");
  for (auto& n : kNames) dtype.value(n.numpy, n.dtype);
  dtype.def_property_readonly("itemsize", [](tg::DType t) { return tg::dtype_size(t); },
                              "Bytes per element (bool: 1).")
      .def_property_readonly("is_floating", [](tg::DType t) { return tg::is_floating(t); })
      .def_property_readonly("is_integer", [](tg::DType t) { return tg::is_integer(t); })
      .def_property_readonly(
          "numpy", [](tg::DType t) -> py::object {
            auto d = numpy_dtype(t);
            if (!d) return py::none();
            return *d;
          },
          "The numpy dtype (None for bfloat16, which numpy lacks).")
;
  // str(tg.float32) == "float32" (replacing the enum's "DType.float32").
  dtype.attr("__str__") = py::cpp_function([](tg::DType t) { return numpy_name(t); }, py::name("__str__"),
                                           py::is_method(dtype));
  for (auto& n : kNames) m.attr(n.numpy) = tg::DType(n.dtype);
  m.attr("bool_") = tg::DType::bool_;
  m.def("dtype", [](py::handle h) { return to_dtype(h); }, py::arg("spec"),
        "The DType of a name ('float32', 'f32'), a numpy dtype or type, or a DType.");

  py::class_<tg::Device>(m, "Device", "A compute device: the host CPU or CUDA GPU number `index`.")
      .def(py::init([](py::handle spec) { return to_device(spec); }), py::arg("spec"),
           "Device('cpu'), Device('cuda'), Device('cuda:1').")
      .def_static("cpu", &tg::Device::cpu)
      .def_static("cuda", &tg::Device::cuda, py::arg("index") = 0)
      .def_static("default_device", &tg::Device::default_device,
                  "CUDA device 0 when a GPU and the CUDA backend are present, else the CPU "
                  "(TG_DEVICE=cpu|cuda overrides).")
      .def_static("cuda_device_count", &tg::Device::cuda_device_count)
      .def_property_readonly("type", [](const tg::Device& d) { return d.is_cpu() ? "cpu" : "cuda"; })
      .def_readonly("index", &tg::Device::index)
      .def_property_readonly("is_cpu", &tg::Device::is_cpu)
      .def_property_readonly("is_cuda", &tg::Device::is_cuda)
      .def("__eq__", [](const tg::Device& a, const tg::Device& b) { return a == b; })
      .def("__hash__", [](const tg::Device& d) { return static_cast<int>(d.kind) * 1000 + d.index; })
      .def("__str__", &tg::Device::to_string)
      .def("__repr__", [](const tg::Device& d) { return "Device('" + d.to_string() + "')"; });
  m.def("synchronize", [](py::handle d) {
    tg::Device dev = to_device(d);
    py::gil_scoped_release nogil;
    tg::synchronize(dev);
  }, py::arg("device") = py::none(),
        "Waits until the work TensorGraph queued for `device` has finished (no-op on the CPU).");
  m.def("device_stream", [](py::handle d) { return reinterpret_cast<uintptr_t>(tg::device_stream(to_device(d))); },
        py::arg("device") = py::none(),
        "TensorGraph's CUDA stream for `device` as an integer (cudaStream_t), for ordering work of "
        "other libraries. tensorgraph.Error(unsupported) on the CPU.");

  py::class_<tg::TensorType>(m, "TensorType", "Element type and shape of a tensor value.")
      .def(py::init([](py::handle shape, py::handle dtype) {
             return tg::TensorType{to_shape(shape), to_dtype(dtype)};
           }),
           py::arg("shape"), py::arg("dtype") = tg::DType::f32)
      .def_property_readonly("shape", [](const tg::TensorType& t) { return shape_tuple(t.shape); },
                             "Dims as a tuple: ints (-1 unknown until run time), symbols by name (str).")
      .def_readonly("dtype", &tg::TensorType::dtype)
      .def("__eq__", [](const tg::TensorType& a, const tg::TensorType& b) { return a == b; })
      .def("__repr__", &tg::TensorType::to_string);

  py::class_<tg::TensorData> td(
      m, "TensorData",
      "A dense row-major tensor value on a device (the C++ tg::TensorData). Copies share storage;\n"
      "values are immutable once produced. numpy.asarray(t) is a view of a host tensor without a\n"
      "copy (a device tensor is copied to the host; bfloat16 becomes a float32 copy).\n"
      "TensorData(array) wraps a C-contiguous numpy array of a TensorGraph dtype without copying\n"
      "(the array must then not be modified while TensorGraph reads it); others are copied.");
  td.def(py::init([](py::handle values, py::handle dtype, py::handle device) {
             std::optional<tg::DType> dt;
             if (!dtype.is_none()) dt = to_dtype(dtype);
             tg::TensorData t = to_tensor_data(values, dt);
             if (dt && t.dtype() != *dt) {
               throw tg::Error(tg::ErrorCode::dtype_mismatch,
                               "[TensorData] values of dtype " + numpy_name(t.dtype()) + " given for dtype " +
                                   numpy_name(*dt) + " (convert the array with astype, or use tg.cast)");
             }
             if (!device.is_none()) t = t.to(to_device(device));
             return t;
           }),
           py::arg("values"), py::arg("dtype") = py::none(), py::arg("device") = py::none())
      .def_static("zeros", [](py::handle shape, py::handle dtype, py::handle device) {
             tg::TensorData t = tg::TensorData::zeros(to_shape(shape), to_dtype(dtype));
             return device.is_none() ? t : t.to(to_device(device));
           }, py::arg("shape"), py::arg("dtype") = tg::DType::f32, py::arg("device") = py::none())
      .def_static("full", [](py::handle shape, double value, py::handle dtype, py::handle device) {
             tg::TensorData t = tg::TensorData::full(to_shape(shape), to_dtype(dtype), value);
             return device.is_none() ? t : t.to(to_device(device));
           }, py::arg("shape"), py::arg("value"), py::arg("dtype") = tg::DType::f32, py::arg("device") = py::none())
      .def_static("random_uniform", [](py::handle shape, float low, float high, uint64_t seed, py::handle dtype) {
             return tg::TensorData::random_uniform(to_shape(shape), low, high, seed, to_dtype(dtype));
           }, py::arg("shape"), py::arg("low") = 0.f, py::arg("high") = 1.f, py::arg("seed") = 0,
           py::arg("dtype") = tg::DType::f32,
           "Uniform on [low, high) from Philox4x32-10, identical to tg.random_uniform with the seed.")
      .def_static("random_normal", [](py::handle shape, float mean, float stddev, uint64_t seed, py::handle dtype) {
             return tg::TensorData::random_normal(to_shape(shape), mean, stddev, seed, to_dtype(dtype));
           }, py::arg("shape"), py::arg("mean") = 0.f, py::arg("stddev") = 1.f, py::arg("seed") = 0,
           py::arg("dtype") = tg::DType::f32)
      .def_property_readonly("shape", [](const tg::TensorData& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", &tg::TensorData::dtype)
      .def_property_readonly("device", &tg::TensorData::device)
      .def_property_readonly("ndim", &tg::TensorData::rank)
      .def_property_readonly("size", &tg::TensorData::num_elements)
      .def_property_readonly("nbytes", &tg::TensorData::nbytes)
      .def_property_readonly("data_ptr", [](const tg::TensorData& t) {
             return reinterpret_cast<uintptr_t>(t.storage_ptr());
           }, "Address of the first element on the tensor's device (a device pointer on CUDA).")
      .def("numpy", &to_numpy, "A numpy view of the values (see the class doc).")
      .def("__array__", [](const tg::TensorData& t, py::handle dtype, py::handle copy) {
             py::array a = to_numpy(t);
             if (!dtype.is_none()) return py::array(a.attr("astype")(dtype));
             return a;
           }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("to", [](const tg::TensorData& t, py::handle d) {
             tg::Device dev = to_device(d);
             py::gil_scoped_release nogil;
             return t.to(dev);
           }, py::arg("device"), "A copy on `device` (the same tensor when already there).")
      .def("cpu", [](const tg::TensorData& t) { return t.to(tg::Device::cpu()); })
      .def("clone", &tg::TensorData::clone)
      .def("reshape", [](const tg::TensorData& t, py::args shape) {
             py::handle s = shape.size() == 1 ? shape[0] : shape;
             return t.reshaped(to_shape(s));
           }, "Same storage viewed with another shape of equal element count.")
      .def("item", [](const tg::TensorData& t) -> py::object {
             if (t.num_elements() != 1) {
               throw tg::Error(tg::ErrorCode::shape_mismatch,
                               "[item] a tensor of shape " + tg::shape_to_string(t.shape()) +
                                   " is not one element");
             }
             return to_numpy(t).attr("reshape")(-1)[py::int_(0)].attr("item")();
           })
      .def("tolist", [](const tg::TensorData& t) { return to_numpy(t).attr("tolist")(); })
      .def("__len__", [](const tg::TensorData& t) {
             if (t.rank() == 0) throw py::type_error("len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("__float__", [](const tg::TensorData& t) { return to_numpy(t).attr("__float__")(); })
      .def("__int__", [](const tg::TensorData& t) { return to_numpy(t).attr("__int__")(); })
      .def("__repr__", [](const tg::TensorData& t) {
             return "TensorData(" + t.to_string() + (t.device().is_cpu() ? "" : ", " + t.device().to_string()) + ")";
           });
  bind_dlpack(m, td);
}

}  // namespace tgpy
