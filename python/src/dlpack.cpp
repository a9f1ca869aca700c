// DLPack exchange (https://dmlc.github.io/dlpack/latest/python_spec.html) without copies:
// TensorData.__dlpack__ / __dlpack_device__ export a tensor's memory, from_dlpack wraps another
// library's (PyTorch, JAX, CuPy, numpy) on the CPU or a CUDA GPU. Streams: exporting a CUDA tensor
// waits for TensorGraph's work on its device (unless the consumer passes stream=-1); importing asks
// the producer to order its work before TensorGraph's stream (tg::device_stream).
#include <dlpack/dlpack.h>

#include "common.h"

namespace tgpy {

namespace {

// DLPack >= 0.8 has kDLBool; Debian's 0.6 header does not name it.
constexpr uint8_t kDLBoolCode = 6;

DLDataType to_dl(tg::DType t) {
  switch (t) {
    case tg::DType::bool_: return {kDLBoolCode, 8, 1};
    case tg::DType::i8: return {kDLInt, 8, 1};
    case tg::DType::u8: return {kDLUInt, 8, 1};
    case tg::DType::i32: return {kDLInt, 32, 1};
    case tg::DType::i64: return {kDLInt, 64, 1};
    case tg::DType::f16: return {kDLFloat, 16, 1};
    case tg::DType::bf16: return {kDLBfloat, 16, 1};
    case tg::DType::f32: return {kDLFloat, 32, 1};
    case tg::DType::f64: return {kDLFloat, 64, 1};
  }
  return {kDLFloat, 32, 1};
}

tg::DType from_dl(DLDataType d) {
  if (d.lanes == 1) {
    if (d.code == kDLBoolCode && d.bits == 8) return tg::DType::bool_;
    if (d.code == kDLInt && d.bits == 8) return tg::DType::i8;
    if (d.code == kDLUInt && d.bits == 8) return tg::DType::u8;
    if (d.code == kDLInt && d.bits == 32) return tg::DType::i32;
    if (d.code == kDLInt && d.bits == 64) return tg::DType::i64;
    if (d.code == kDLFloat && d.bits == 16) return tg::DType::f16;
    if (d.code == kDLBfloat && d.bits == 16) return tg::DType::bf16;
    if (d.code == kDLFloat && d.bits == 32) return tg::DType::f32;
    if (d.code == kDLFloat && d.bits == 64) return tg::DType::f64;
  }
  throw tg::Error(tg::ErrorCode::dtype_mismatch,
                  "[from_dlpack] DLPack dtype (code " + std::to_string(d.code) + ", " + std::to_string(d.bits) +
                      " bits, " + std::to_string(d.lanes) + " lanes) has no TensorGraph counterpart");
}

// What an exported capsule owns: a reference to the tensor's storage, and the shape and strides
// DLTensor points to.
struct Export {
  tg::TensorData tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

py::capsule export_tensor(const tg::TensorData& t, py::handle stream) {
  if (t.empty()) throw tg::Error(tg::ErrorCode::invalid_argument, "[__dlpack__] an empty TensorData");
  if (t.device().is_cuda()) {
    // The consumer reads on its stream: TensorGraph's queued work (the run that made t) must be
    // done. stream -1 means the consumer synchronizes itself.
    if (stream.is_none() || stream.cast<int64_t>() != -1) {
      py::gil_scoped_release nogil;
      tg::synchronize(t.device());
    }
  }
  auto* e = new Export{t, t.shape(), tg::row_major_strides(t.shape()), {}};
  DLTensor& d = e->managed.dl_tensor;
  d.data = const_cast<void*>(t.storage_ptr());
  d.device = t.device().is_cpu() ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, t.device().index};
  d.ndim = static_cast<int32_t>(t.rank());
  d.dtype = to_dl(t.dtype());
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); };
  // A capsule nobody consumed (still named "dltensor") frees the tensor itself.
  return py::capsule(&e->managed, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    } else {
      PyErr_Clear();
    }
  });
}

tg::TensorData import_capsule(py::capsule cap) {
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[from_dlpack] not an unconsumed DLPack capsule (named 'dltensor'); a capsule can be "
                    "consumed once");
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  const DLTensor& d = m->dl_tensor;
  // From here on the tensor owns the managed tensor: the capsule is marked consumed.
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (mt->deleter) {
      py::gil_scoped_acquire gil;  // producers may release Python objects
      mt->deleter(mt);
    }
  });
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  PyCapsule_SetDestructor(cap.ptr(), nullptr);

  tg::Device device;
  if (d.device.device_type == kDLCPU || d.device.device_type == kDLCUDAHost) device = tg::Device::cpu();
  else if (d.device.device_type == kDLCUDA) device = tg::Device::cuda(d.device.device_id);
  else {
    throw tg::Error(tg::ErrorCode::unsupported, "[from_dlpack] device type " + std::to_string(d.device.device_type) +
                                                    " (TensorGraph has the CPU and CUDA GPUs)");
  }
  tg::DType dtype = from_dl(d.dtype);
  tg::Shape shape(d.shape, d.shape + d.ndim);
  // An empty tensor's strides mean nothing (torch gives [0,3,8,8] strides [1,64,8,1] and calls it
  // contiguous): it becomes an empty TensorData of that shape.
  if (tg::num_elements(shape) == 0) return tg::TensorData(shape, dtype, device);
  if (d.strides != nullptr) {
    auto expected = tg::row_major_strides(shape);
    for (int i = 0; i < d.ndim; ++i) {
      if (shape[i] != 1 && d.strides[i] != expected[i]) {
        std::vector<int64_t> got(d.strides, d.strides + d.ndim);
        throw tg::Error(tg::ErrorCode::invalid_argument,
                        "[from_dlpack] strides " + tg::shape_to_string(got) + " of a tensor of shape " +
                            tg::shape_to_string(shape) +
                            " are not row-major (TensorGraph tensors are dense: make it contiguous first)");
      }
    }
  }
  auto* data = static_cast<char*>(d.data) + d.byte_offset;
  tg::TensorData t = tg::TensorData::from_external(data, shape, dtype, device, owner);
  // TensorGraph's kernels expect 16-byte aligned tensors: a view at another offset is copied.
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0) return t.clone();
  return t;
}

tg::TensorData from_dlpack(py::handle obj) {
  if (py::isinstance<tg::TensorData>(obj)) return obj.cast<tg::TensorData>();
  if (py::isinstance<py::capsule>(obj)) return import_capsule(py::reinterpret_borrow<py::capsule>(obj));
  if (!py::hasattr(obj, "__dlpack__")) {
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[from_dlpack] " + py::str(py::type::of(obj)).cast<std::string>() +
                        " has no __dlpack__ (not a DLPack tensor)");
  }
  py::object cap;
  py::tuple dev = obj.attr("__dlpack_device__")();
  int type = dev[0].cast<int>();
  if (type == kDLCUDA) {
    // The producer makes TensorGraph's stream wait for its pending work on the tensor.
    uintptr_t s = reinterpret_cast<uintptr_t>(tg::device_stream(tg::Device::cuda(dev[1].cast<int>())));
    cap = obj.attr("__dlpack__")(py::arg("stream") = s);
  } else {
    cap = obj.attr("__dlpack__")();
  }
  return import_capsule(cap.cast<py::capsule>());
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<tg::TensorData>& td) {
  td.def("__dlpack__", [](const tg::TensorData& t, py::handle stream, py::handle, py::handle, py::handle) {
           return export_tensor(t, stream);
         }, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
         py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
         "A DLPack capsule sharing this tensor's memory (no copy). For a CUDA tensor, waits for\n"
         "TensorGraph's work on the device first unless stream == -1.");
  td.def("__dlpack_device__", [](const tg::TensorData& t) {
           return t.device().is_cpu() ? py::make_tuple(int(kDLCPU), 0) : py::make_tuple(int(kDLCUDA), t.device().index);
         }, "(device type, index): (1, 0) for the CPU, (2, i) for cuda:i.");
  m.def("from_dlpack", &from_dlpack, py::arg("x"),
        "A TensorData sharing the memory of a DLPack tensor (an object with __dlpack__, e.g. a\n"
        "torch.Tensor, jax.Array, cupy or numpy array, or a DLPack capsule) without copying, on\n"
        "the CPU or a CUDA GPU. The tensor must be dense row-major (tensorgraph.Error otherwise);\n"
        "a view not 16-byte aligned is copied. Its memory must not change while TensorGraph uses it.");
}

}  // namespace tgpy
