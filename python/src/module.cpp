// The extension module tensorgraph._tensorgraph: TensorGraph's C++ API for Python. The package
// tensorgraph (python/tensorgraph/__init__.py) re-exports it; semantics are the C++ API's
// (include/tg), documented per function in the docstrings and in python/tensorgraph/*.pyi.
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "common.h"
#include "tg/interrupt.h"

namespace tgpy {
namespace {
// tensorgraph.Error: every tg::Error becomes one, with `code` (the ErrorCode's name, e.g.
// "shape_mismatch") and `message` (the C++ message, "[add] shapes [2,3] and [4] do not broadcast").
PyObject* g_error_type = nullptr;

// Ctrl-C while a run or fit holds no GIL: the runtime calls this between loop iterations and fit
// between batches (tg::set_interrupt_check). Python handles signals on its main thread only, so
// other threads return at once; on the main thread a pending KeyboardInterrupt (or whatever the
// SIGINT handler raises) is thrown through the run, which then fails without committing anything.
std::thread::id g_main_thread;

// A message of the C++ API in the names a Python caller uses: the C++ option structs some
// messages suggest become the keyword arguments of the Python functions.
std::string in_python_terms(std::string m) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"WhileLoopOptions{.max_iterations = N}", "max_iterations=N"},
      {"ImportOptions::input_shapes", "tg.onnx.load(..., input_shapes={name: dims})"},
      {"ImportOptions::input_values", "tg.onnx.load(..., input_values={name: value})"},
      {"ImportOptions::initializer_values", "tg.onnx.load(..., initializer_values={name: value})"},
      {"ImportOptions::", "tg.onnx.load's "}};
  for (const auto& [cpp, py] : kNames) {
    for (size_t at = m.find(cpp); at != std::string::npos; at = m.find(cpp, at + std::strlen(py))) {
      m.replace(at, std::strlen(cpp), py);
    }
  }
  return m;
}
void check_python_signals() {
  if (std::this_thread::get_id() != g_main_thread) return;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}
}  // namespace
}  // namespace tgpy

PYBIND11_MODULE(_tensorgraph, m) {
  m.doc() = "TensorGraph: build, differentiate, compile and run computation graphs (C++ core).";
  tgpy::g_error_type = PyErr_NewExceptionWithDoc(
      "tensorgraph.Error",
      "The exception TensorGraph raises for anything a caller can get wrong.\n\n"
      "Attributes: code (str: 'invalid_argument', 'shape_mismatch', 'dtype_mismatch', "
      "'out_of_range', 'not_found', 'unsupported', 'io_error', 'out_of_memory', 'internal') and "
      "message (str: names the op and the shapes, e.g. \"[add] shapes [2,3] and [4] do not "
      "broadcast\").",
      PyExc_Exception, nullptr);
  m.attr("Error") = py::handle(tgpy::g_error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tg::Error& e) {
      py::object type = py::reinterpret_borrow<py::object>(tgpy::g_error_type);
      const std::string message = tgpy::in_python_terms(e.what());
      py::object exc = type(message);
      exc.attr("code") = std::string(tg::error_code_name(e.code()));
      exc.attr("message") = message;
      PyErr_SetObject(tgpy::g_error_type, exc.ptr());
    }
  });
  tgpy::g_main_thread = std::this_thread::get_id();  // the importing thread, normally the main one
  tg::set_interrupt_check(&tgpy::check_python_signals);
  tgpy::bind_core(m);
  tgpy::bind_graph(m);
  tgpy::bind_ops(m);
  tgpy::bind_nn_ops(m);
  tgpy::bind_control_flow(m);
  py::module_ nn = m.def_submodule("nn", "Keras-like models (tg::nn): layers, Model, fit, the zoo.");
  tgpy::bind_nn(nn);
  py::module_ onnx = m.def_submodule("onnx", "ONNX import (tg::onnx).");
  tgpy::bind_onnx(onnx);
}
