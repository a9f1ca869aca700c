// Bindings of Graph, Tensor (with Python operators), Operation, Executable and runtime_stats.
#include <cmath>

#include "common.h"
#include "tg/deferred_errors.h"

namespace tgpy {

tg::Tensor as_tensor(py::handle h, const tg::Tensor& like) {
  if (is_tensor(h)) return h.cast<tg::Tensor>();
  tg::Graph g(like.graph_impl());
  if (py::isinstance<py::bool_>(h) || py::isinstance<py::int_>(h) || py::isinstance<py::float_>(h)) {
    double v = h.cast<double>();
    if (tg::is_integer(like.dtype()) && v != std::floor(v)) {
      throw tg::Error(tg::ErrorCode::invalid_argument,
                      "[constant] " + py::repr(h).cast<std::string>() + " is not an integer, as a tensor of " +
                          numpy_name(like.dtype()) + " needs (cast the tensor first)");
    }
    if ((tg::is_integer(like.dtype()) || like.dtype() == tg::DType::bool_) && !py::isinstance<py::float_>(h)) {
      // Exactly or not at all: through numpy's reading of the int (200 against an int8 tensor
      // was clamped to 127, 2**53 + 1 rounded through double).
      return g.constant(to_tensor_data(h, like.dtype()));
    }
    return g.constant(v, like.dtype());
  }
  if (py::isinstance<py::array>(h) || py::isinstance<tg::TensorData>(h)) return g.constant(to_tensor_data(h));
  return g.constant(to_tensor_data(h, like.dtype()));
}

tg::Tensor binary_op(tg::Tensor (*f)(tg::Tensor, tg::Tensor), py::handle a, py::handle b) {
  if (is_tensor(a)) {
    tg::Tensor ta = a.cast<tg::Tensor>();
    return f(ta, as_tensor(b, ta));
  }
  if (is_tensor(b)) {
    tg::Tensor tb = b.cast<tg::Tensor>();
    return f(as_tensor(a, tb), tb);
  }
  throw tg::Error(tg::ErrorCode::invalid_argument, "[op] needs at least one tg.Tensor operand");
}

namespace {

std::vector<tg::Tensor> to_tensors(py::handle h) {
  if (is_tensor(h)) return {h.cast<tg::Tensor>()};
  return h.cast<std::vector<tg::Tensor>>();
}

std::vector<tg::Operation> to_ops(py::handle h) {
  std::vector<tg::Operation> ops;
  if (h.is_none()) return ops;
  if (is_tensor(h) || py::isinstance<tg::Operation>(h)) {
    py::list l;
    l.append(h);
    return to_ops(l);
  }
  for (py::handle o : h) {
    if (is_tensor(o)) ops.push_back(o.cast<tg::Tensor>().op());
    else ops.push_back(o.cast<tg::Operation>());
  }
  return ops;
}

py::object results(std::vector<tg::TensorData> out, bool single) {
  if (single) return py::cast(out.at(0));
  py::list l;
  for (auto& t : out) l.append(py::cast(t));
  return l;
}

tg::TensorType to_tensor_type(py::handle h, const tg::Tensor& placeholder) {
  if (py::isinstance<tg::TensorType>(h)) return h.cast<tg::TensorType>();
  if (py::isinstance<tg::TensorData>(h)) return h.cast<tg::TensorData>().type();
  if (py::isinstance<py::array>(h)) return to_tensor_data(h).type();
  if (py::isinstance<py::tuple>(h) && py::len(h) == 2 && !py::isinstance<py::int_>(h.cast<py::tuple>()[1])) {
    py::tuple t = h.cast<py::tuple>();
    return {to_shape(t[0]), to_dtype(t[1])};
  }
  return {to_shape(h), placeholder.dtype()};  // a shape: the placeholder's dtype
}

// Tensor[...]: ints, slices and one Ellipsis, as numpy's basic indexing (a slice per axis, then
// the int-indexed axes squeezed).
tg::Tensor getitem(const tg::Tensor& x, py::handle key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  const int64_t rank = x.rank();
  int64_t n_explicit = 0;
  for (py::handle it : items) n_explicit += it.is(py::ellipsis()) ? 0 : 1;
  if (n_explicit > rank) {
    throw tg::Error(tg::ErrorCode::invalid_argument, "[getitem] " + std::to_string(n_explicit) +
                                                         " indices for a tensor of rank " + std::to_string(rank));
  }
  tg::SliceDesc d;
  std::vector<int64_t> squeeze_axes;
  int64_t axis = 0;
  for (py::handle it : items) {
    if (it.is(py::ellipsis())) {
      axis += rank - n_explicit;
      continue;
    }
    if (py::isinstance<py::slice>(it)) {
      py::slice s = it.cast<py::slice>();
      py::object start = s.attr("start"), stop = s.attr("stop"), step = s.attr("step");
      int64_t st = step.is_none() ? 1 : step.cast<int64_t>();
      d.axes.push_back(axis);
      d.strides.push_back(st);
      d.begin.push_back(start.is_none() ? (st > 0 ? 0 : tg::kSliceEnd) : start.cast<int64_t>());
      d.end.push_back(stop.is_none() ? tg::kSliceEnd : stop.cast<int64_t>());
    } else if (!py::isinstance<py::bool_>(it) && PyIndex_Check(it.ptr())) {  // int, np.int64, ...
      const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(it.ptr()));
      if (!index) throw py::error_already_set();
      int64_t i = 0;
      try {
        i = index.cast<int64_t>();
      } catch (const py::cast_error&) {
        throw py::index_error("[getitem] index " + py::repr(it).cast<std::string>() + " is out of range");
      }
      const int64_t n = x.shape()[static_cast<size_t>(axis)];
      if (n >= 0 && (i < -n || i >= n)) {  // IndexError: also what ends iteration of a sequence
        throw py::index_error("[getitem] index " + std::to_string(i) + " is out of range for axis " +
                              std::to_string(axis) + " of size " + std::to_string(n) + " (tensor " +
                              x.type().to_string() + ")");
      }
      d.axes.push_back(axis);
      d.strides.push_back(1);
      d.begin.push_back(i);
      d.end.push_back(i == -1 ? tg::kSliceEnd : i + 1);
      squeeze_axes.push_back(axis);
    } else {
      throw tg::Error(tg::ErrorCode::invalid_argument,
                      "[getitem] index " + py::repr(it).cast<std::string>() +
                          " is not an int, a slice or ...: use tg.gather for tensor indices");
    }
    ++axis;
  }
  tg::Tensor y = d.axes.empty() ? x : tg::slice(x, d);
  return squeeze_axes.empty() ? y : tg::squeeze(y, squeeze_axes);
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<tg::Operation>(m, "Operation", "A handle on a node: for target ops and control dependencies.")
      .def_property_readonly("kind", &tg::Operation::kind_name, "Op kind name ('add', 'matmul', ...).")
      .def_property_readonly("name", &tg::Operation::name)
      .def_property_readonly("num_outputs", &tg::Operation::num_outputs)
      .def_property_readonly("node_id", &tg::Operation::node_id)
      .def("output", &tg::Operation::output, py::arg("index") = 0)
      .def_property_readonly("outputs", [](const tg::Operation& o) {
        std::vector<tg::Tensor> v;
        for (int i = 0; i < o.num_outputs(); ++i) v.push_back(o.output(i));
        return v;
      })
      .def("__eq__", [](const tg::Operation& a, py::handle b) {
        return py::isinstance<tg::Operation>(b) && a.graph_impl() == b.cast<tg::Operation>().graph_impl() &&
               a.node_id() == b.cast<tg::Operation>().node_id();
      })
      .def("__hash__", [](const tg::Operation& o) {
        return py::hash(py::make_tuple(reinterpret_cast<uintptr_t>(o.graph_impl().get()), o.node_id()));
      })
      .def("__repr__", [](const tg::Operation& o) {
        return "<tg.Operation %" + std::to_string(o.node_id()) + " " + o.kind_name() + ">";
      });

  py::class_<tg::Tensor> t(m, "Tensor",
                           "A symbolic value: output `index` of a node of a graph. Shape and dtype\n"
                           "are known when the op is built (dims may be -1 when given by a feed).\n"
                           "Operators build ops: + - * / // % ** @, unary -, abs(), comparisons\n"
                           "< <= > >= (elementwise, bool results), & | ^ ~ on bool tensors, and\n"
                           "indexing with ints and slices (an int outside a static dim raises\n"
                           "IndexError; len() and iteration need a static first dim). / on integer\n"
                           "tensors truncates toward zero (tg.div, as C++); // and % floor, as\n"
                           "Python's. A numpy array on either side of an operator becomes a constant\n"
                           "(numpy's ufuncs defer to tg.Tensor). == and != compare identity (tensors\n"
                           "are dict keys for feeds); use tg.equal / tg.not_equal for elementwise tests.");
  // numpy's binary operators return NotImplemented for a Tensor operand, so ndarray + Tensor calls
  // Tensor.__radd__ (a constant) instead of building an object array of Tensors element by element.
  t.attr("__array_ufunc__") = py::none();
  // np.asarray(tensor) would otherwise index it element by element into an object array of
  // Tensors (each a new node): a symbolic tensor has no values until it runs.
  t.def("__array__", [](const tg::Tensor& x, py::args, py::kwargs) -> py::object {
    throw py::type_error("a symbolic tg.Tensor " + x.type().to_string() +
                         " has no values until it runs: run the graph (Graph.run) and convert its result");
  });
  t.def_property_readonly("shape", [](const tg::Tensor& x) { return shape_tuple(x.shape()); },
                          "Dims as a tuple: ints (-1 for a dim unknown until run time), and for a\n"
                          "symbolic dim (a placeholder dim given as a str, e.g. 'seq') its name.")
      .def("dim_expr", [](const tg::Tensor& x, int64_t axis) -> py::object {
             const int64_t r = x.rank();
             if (axis < -r || axis >= r) {
               throw tg::Error(tg::ErrorCode::invalid_argument, "[dim_expr] axis " + std::to_string(axis) +
                               " is out of range for " + x.type().to_string());
             }
             const int64_t d = x.shape()[static_cast<size_t>(axis < 0 ? axis + r : axis)];
             const std::optional<tg::SymbolicDimExpr> e = tg::symbolic_dim_expr(d);
             if (!e) return py::none();
             return py::make_tuple(tg::dim_name(e->base), e->a, e->b, e->c, e->lo);
           }, py::arg("axis"),
           "For a derived symbolic dim at `axis` (a convolution's output size \"(h+1)/2\" of symbol\n"
           "\"h\": docs/design/0009, \"Derived symbols\"), (base symbol name, a, b, c, lo): the size is\n"
           "floor((a * base + b) / c) for base sizes >= lo. None for a size, -1 or a plain symbol.\n"
           "Raises tg.Error (invalid_argument) for an axis outside [-ndim, ndim).")
      .def_property_readonly("dtype", &tg::Tensor::dtype)
      .def_property_readonly("ndim", &tg::Tensor::rank)
      .def_property_readonly("type", &tg::Tensor::type)
      .def_property_readonly("op", &tg::Tensor::op, "The node that produces this tensor.")
      .def_property_readonly("index", &tg::Tensor::index)
      .def_property_readonly("node_id", &tg::Tensor::node_id)
      .def_property_readonly("name", [](const tg::Tensor& x) { return x.op().name(); })
      .def_property_readonly("graph", [](const tg::Tensor& x) { return tg::Graph(x.graph_impl()); })
      .def("__repr__", [](const tg::Tensor& x) { return "<tg.Tensor " + x.to_string() + ">"; })
      .def("__eq__", [](const tg::Tensor& a, py::handle b) {
        if (!is_tensor(b)) return false;
        tg::Tensor tb = b.cast<tg::Tensor>();
        return a.graph_impl() == tb.graph_impl() && a.node_id() == tb.node_id() && a.index() == tb.index();
      })
      .def("__ne__", [](const tg::Tensor& a, py::handle b) {
        if (!is_tensor(b)) return true;
        tg::Tensor tb = b.cast<tg::Tensor>();
        return !(a.graph_impl() == tb.graph_impl() && a.node_id() == tb.node_id() && a.index() == tb.index());
      })
      .def("__hash__", [](const tg::Tensor& x) {
        return py::hash(py::make_tuple(reinterpret_cast<uintptr_t>(x.graph_impl().get()), x.node_id(), x.index()));
      })
      .def("__bool__", [](const tg::Tensor&) -> bool {
        throw py::type_error("the truth value of a symbolic tg.Tensor is unknown until it runs: use "
                             "tg.if_else / tg.select");
      })
      .def("__add__", [](py::handle a, py::handle b) { return binary_op(&tg::add, a, b); })
      .def("__radd__", [](py::handle a, py::handle b) { return binary_op(&tg::add, b, a); })
      .def("__sub__", [](py::handle a, py::handle b) { return binary_op(&tg::sub, a, b); })
      .def("__rsub__", [](py::handle a, py::handle b) { return binary_op(&tg::sub, b, a); })
      .def("__mul__", [](py::handle a, py::handle b) { return binary_op(&tg::mul, a, b); })
      .def("__rmul__", [](py::handle a, py::handle b) { return binary_op(&tg::mul, b, a); })
      .def("__truediv__", [](py::handle a, py::handle b) { return binary_op(&tg::div, a, b); })
      .def("__rtruediv__", [](py::handle a, py::handle b) { return binary_op(&tg::div, b, a); })
      .def("__floordiv__", [](py::handle a, py::handle b) { return binary_op(&tg::floor_div, a, b); })
      .def("__rfloordiv__", [](py::handle a, py::handle b) { return binary_op(&tg::floor_div, b, a); })
      .def("__mod__", [](py::handle a, py::handle b) { return binary_op(&tg::floor_mod, a, b); })
      .def("__rmod__", [](py::handle a, py::handle b) { return binary_op(&tg::floor_mod, b, a); })
      .def("__pow__", [](py::handle a, py::handle b) { return binary_op(&tg::pow, a, b); })
      .def("__rpow__", [](py::handle a, py::handle b) { return binary_op(&tg::pow, b, a); })
      .def("__matmul__", [](py::handle a, py::handle b) {
        return binary_op([](tg::Tensor x, tg::Tensor y) { return tg::matmul(x, y); }, a, b);
      })
      .def("__rmatmul__", [](py::handle a, py::handle b) {
        return binary_op([](tg::Tensor x, tg::Tensor y) { return tg::matmul(x, y); }, b, a);
      })
      .def("__lt__", [](py::handle a, py::handle b) { return binary_op(&tg::less, a, b); })
      .def("__le__", [](py::handle a, py::handle b) { return binary_op(&tg::less_equal, a, b); })
      .def("__gt__", [](py::handle a, py::handle b) { return binary_op(&tg::greater, a, b); })
      .def("__ge__", [](py::handle a, py::handle b) { return binary_op(&tg::greater_equal, a, b); })
      .def("__and__", [](py::handle a, py::handle b) { return binary_op(&tg::logical_and, a, b); })
      .def("__rand__", [](py::handle a, py::handle b) { return binary_op(&tg::logical_and, b, a); })
      .def("__or__", [](py::handle a, py::handle b) { return binary_op(&tg::logical_or, a, b); })
      .def("__ror__", [](py::handle a, py::handle b) { return binary_op(&tg::logical_or, b, a); })
      .def("__xor__", [](py::handle a, py::handle b) { return binary_op(&tg::logical_xor, a, b); })
      .def("__rxor__", [](py::handle a, py::handle b) { return binary_op(&tg::logical_xor, b, a); })
      .def("__invert__", [](const tg::Tensor& x) { return tg::logical_not(x); })
      .def("__neg__", [](const tg::Tensor& x) { return tg::neg(x); })
      .def("__pos__", [](const tg::Tensor& x) { return x; })
      .def("__abs__", [](const tg::Tensor& x) { return tg::abs(x); })
      .def("__getitem__", &getitem)
      .def("__len__", [](const tg::Tensor& x) {
        if (x.rank() == 0) throw py::type_error("len() of a 0-d tg.Tensor");
        if (x.shape()[0] < 0) {
          throw py::type_error("len() of a tg.Tensor " + x.type().to_string() +
                               " whose first dim is dynamic: its size is known only when it runs");
        }
        return x.shape()[0];
      })
      .def("__iter__", [](const tg::Tensor& x) {
        // Rows x[0], x[1], ... of a static first dim (a dynamic one would never end).
        if (x.rank() == 0) throw py::type_error("iteration over a 0-d tg.Tensor");
        if (x.shape()[0] < 0) {
          throw py::type_error("iteration over a tg.Tensor " + x.type().to_string() +
                               " whose first dim is dynamic: use tg.for_loop / tg.while_loop, or "
                               "index rows with x[i]");
        }
        py::list rows;
        for (int64_t i = 0; i < x.shape()[0]; ++i) rows.append(py::cast(getitem(x, py::int_(i))));
        return py::iter(rows);
      })
      .def_property_readonly("T", [](const tg::Tensor& x) { return tg::transpose(x); })
      .def("reshape", [](const tg::Tensor& x, py::args shape) {
        return tg::reshape(x, to_shape(shape.size() == 1 ? shape[0] : shape));
      })
      .def("astype", [](const tg::Tensor& x, py::handle dt) { return tg::cast(x, to_dtype(dt)); });

  py::class_<tg::Executable>(
      m, "Executable",
      "An immutable compiled graph (Graph.compile): fixed placeholders (in feed order), targets\n"
      "and target ops. run() is thread-safe; runs are transactional (a failed run raises and\n"
      "leaves every variable unchanged). On CUDA every run after the first is one graph launch.")
      .def("run", [](const tg::Executable& e, py::handle inputs, uintptr_t cuda_stream) {
             if (py::isinstance<py::dict>(inputs)) {
               throw tg::Error(tg::ErrorCode::invalid_argument,
                               "[run] Executable.run takes a list of inputs in feed order (the compiled "
                               "placeholders' order), not a dict; Graph.run takes {placeholder: value}");
             }
             auto types = e.input_types();
             // One array (numpy, TensorData, DLPack) where the list of feeds belongs: iterating it
             // fed its rows as the inputs. It is the one feed of a one-feed executable, else an
             // error.
             const bool one_array = !py::isinstance<py::list>(inputs) && !py::isinstance<py::tuple>(inputs) &&
                                    (py::isinstance<tg::TensorData>(inputs) || py::hasattr(inputs, "__array__") ||
                                     py::hasattr(inputs, "__dlpack__"));
             if (one_array && types.size() != 1) {
               throw py::type_error("Executable.run takes a list of inputs in feed order; one array was given, "
                                    "but the executable has " + std::to_string(types.size()) +
                                    " feeds: pass run([x0, x1, ...])");
             }
             py::list wrapped;
             if (one_array) wrapped.append(inputs);
             std::vector<tg::TensorData> in;
             size_t i = 0;
             for (py::handle h : one_array ? py::handle(wrapped) : inputs) {
               std::optional<tg::DType> dt;
               if (i < types.size()) dt = types[i].dtype;
               in.push_back(to_tensor_data(h, dt));
               ++i;
             }
             tg::RunOptions o;
             o.cuda_stream = reinterpret_cast<void*>(cuda_stream);
             std::vector<tg::TensorData> out;
             {
               py::gil_scoped_release nogil;
               out = e.run(in, o);
             }
             return results(std::move(out), false);
           }, py::arg("inputs"), py::arg("cuda_stream") = 0,
           "Runs with `inputs` in feed order (numpy arrays, TensorData, DLPack tensors; one array\n"
           "alone is the feed of a one-feed executable, a TypeError for others) and returns\n"
           "the targets' values (TensorData, on the executable's device) in target order.\n"
           "cuda_stream: a cudaStream_t as int (e.g. torch.cuda.current_stream().cuda_stream) the\n"
           "run is ordered with. Raises tensorgraph.Error for a wrong input count, dtype or shape\n"
           "(naming the placeholder) and for errors found while running.")
      .def("__call__", [](py::object self, py::args inputs) { return self.attr("run")(py::list(inputs)); })
      .def("set_deferred_device_errors", [](const tg::Executable& e, bool deferred) {
             tg::set_deferred_device_errors(e, deferred);
           }, py::arg("deferred"),
           "Deferred device errors (tg::set_deferred_device_errors), as PyTorch's device asserts:\n"
           "a CUDA graph replay of a program with device checks (an out-of-range gather index)\n"
           "does not wait for the device; an error it finds is raised by a later run() before it\n"
           "queues anything, or by check_device_errors(). The failed run's results and those of\n"
           "the runs queued after it are not valid until then. On the CPU runs always raise their\n"
           "own errors (a no-op). An executable compiled for varying dims (disable_type_inference)\n"
           "defers every input signature's errors: a run of any signature raises them.")
      .def("check_device_errors", [](const tg::Executable& e) {
             py::gil_scoped_release nogil;
             tg::check_device_errors(e);
           },
           "Waits for the device and raises a deferred device error of this executable's runs, once\n"
           "(set_deferred_device_errors). A no-op without deferred errors or on the CPU.")
      .def_property_readonly("arena_bytes", &tg::Executable::arena_bytes)
      .def_property_readonly("unplanned_bytes", &tg::Executable::unplanned_bytes)
      .def_property_readonly("arena_count", &tg::Executable::arena_count)
      .def_property_readonly("input_types", &tg::Executable::input_types)
      .def_property_readonly("output_types", &tg::Executable::output_types)
      .def_property_readonly("device", &tg::Executable::device)
      .def("save", [](const tg::Executable& e, py::handle path, bool embed_variables) {
             e.save(fs_path(path), {.embed_variables = embed_variables});
           }, py::arg("path"), py::arg("embed_variables") = true,
           "Writes the executable to a .tgx file (Executable::save, docs/design/0008): the optimized\n"
           "graph, memory plan, generated GPU kernels and (embed_variables) the variables' values.\n"
           "Raises tensorgraph.Error(io_error) when the file cannot be written.")
      .def("save_to_bytes", [](const tg::Executable& e, bool embed_variables) {
             const std::vector<uint8_t> b = e.save_to_bytes({.embed_variables = embed_variables});
             return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
           }, py::arg("embed_variables") = true, "The bytes save() writes.")
      .def_static("load", [](py::handle path, py::handle device, const tg::Graph* variables) {
             return tg::Executable::load(fs_path(path), to_device(device), {.variables = variables});
           }, py::arg("path"), py::arg("device") = py::none(), py::arg("variables") = nullptr,
           "Reads a .tgx file for `device` (default: the default device) without recompiling when\n"
           "it was compiled for the same device kind, GPU architecture and library versions. A .tgx\n"
           "file holds GPU code: loading one runs its code, like loading a shared library.\n"
           "`variables`: a Graph whose variables of the same names the executable binds to (needed\n"
           "for files saved with embed_variables=False). Raises tensorgraph.Error (io_error,\n"
           "unsupported, not_found, shape_mismatch) naming the file and the section.")
      .def_static("load_from_bytes", [](py::buffer data, py::handle device, const tg::Graph* variables) {
             // bytes, bytearray, memoryview, a uint8 array: any C-contiguous buffer, read in place
             const py::buffer_info info = data.request();
             if (!PyBuffer_IsContiguous(info.view(), 'C')) {
               throw tg::Error(tg::ErrorCode::invalid_argument, "[load] the data must be one contiguous buffer");
             }
             const size_t n = static_cast<size_t>(info.size * info.itemsize);
             return tg::Executable::load_from_bytes({static_cast<const uint8_t*>(info.ptr), n}, to_device(device),
                                                    {.variables = variables});
           }, py::arg("data"), py::arg("device") = py::none(), py::arg("variables") = nullptr,
           "As load(), from the bytes of a .tgx file (bytes, bytearray, memoryview: any contiguous\n"
           "buffer).")
      .def("__str__", &tg::Executable::to_string);

  py::class_<tg::Graph>(m, "Graph",
                        "A computation graph. Ops are appended by the functions of tensorgraph,\n"
                        "which find the graph through their tensor arguments.")
      .def(py::init<>())
      .def("placeholder", [](tg::Graph& g, py::handle shape, py::handle dtype, std::string name) {
             return g.placeholder(to_shape(shape), to_dtype(dtype), std::move(name));
           }, py::arg("shape"), py::arg("dtype") = tg::DType::f32, py::arg("name") = "",
           "An input fed at run time. `shape` may hold -1 for dims given by the feed.")
      .def("constant", [](tg::Graph& g, py::handle value, py::handle dtype, std::string name) {
             std::optional<tg::DType> dt;
             if (!dtype.is_none()) dt = to_dtype(dtype);
             tg::TensorData v = to_tensor_data(value, dt);
             tg::Tensor c = g.constant(v, std::move(name));
             return dt && *dt != v.dtype() ? tg::cast(c, *dt) : c;
           }, py::arg("value"), py::arg("dtype") = py::none(), py::arg("name") = "",
           "A constant holding `value` (copied into the graph). Python floats default to float32.")
      .def("variable", [](tg::Graph& g, py::handle init, py::handle dtype, std::string name) {
             std::optional<tg::DType> dt;
             if (!dtype.is_none()) dt = to_dtype(dtype);
             return g.variable(to_tensor_data(init, dt), std::move(name));  // copied by the graph
           }, py::arg("init"), py::arg("dtype") = py::none(), py::arg("name") = "",
           "A variable: state of this graph that starts as a copy of `init`, persists across runs\n"
           "and executables, and changes by assign_variable. Names are unique.")
      .def("variable_value", [](const tg::Graph& g, const tg::Tensor& v) { return g.variable_value(v).clone(); },
           py::arg("variable"), "A copy of the variable's current value (outside any run).")
      .def("save_variables", &tg::Graph::save_variables, py::arg("path"),
           "Writes every variable to a safetensors file.")
      .def("load_variables", &tg::Graph::load_variables, py::arg("path"),
           "Loads a safetensors file; checks every name, dtype and shape first (nothing is half-loaded).")
      .def("control_dependency", [](tg::Graph& g, py::handle ops, py::function block) {
             bool single = false;
             auto out = g.control_dependency(to_ops(ops), [&]() {
               py::object r = block();
               single = is_tensor(r);
               return r.is_none() ? std::vector<tg::Tensor>{} : to_tensors(r);
             });
             return single ? py::cast(out.at(0)) : py::cast(out);
           }, py::arg("ops"), py::arg("block"),
           "Calls block(); every op it builds runs after `ops` (Operations or Tensors). Returns what\n"
           "block returns.")
      .def("run", [](tg::Graph& g, py::dict feeds, py::handle targets, py::handle target_ops, py::handle device) {
             tg::Feeds f;
             for (auto [k, v] : feeds) {
               tg::Tensor p = k.cast<tg::Tensor>();
               f.emplace_back(p, to_tensor_data(v, p.dtype()));
             }
             bool single = is_tensor(targets);
             std::vector<tg::Tensor> ts = targets.is_none() ? std::vector<tg::Tensor>{} : to_tensors(targets);
             auto ops = to_ops(target_ops);
             tg::Device dev = to_device(device);
             std::vector<tg::TensorData> out;
             {
               py::gil_scoped_release nogil;
               out = g.run(f, ts, ops, dev);
             }
             return single ? py::cast(out.at(0)) : results(std::move(out), false);
           }, py::arg("feeds"), py::arg("targets"), py::arg("target_ops") = py::none(),
           py::arg("device") = py::none(),
           "Runs the graph: feeds {placeholder: value} (numpy arrays, lists, TensorData, DLPack\n"
           "tensors), targets (a Tensor, or a list) -> TensorData (or a list, in order). Compiles on\n"
           "first use for these feed types, targets and device, then caches. device: None is the\n"
           "default device (CUDA when a GPU is usable).")
      .def("compile", [](tg::Graph& g, py::dict feed_types, py::handle targets, py::handle target_ops,
                         py::handle device, const std::string& precision, size_t memory_budget_bytes,
                         std::string arena_group, bool disable_type_inference) {
             tg::FeedTypes ft;
             for (auto [k, v] : feed_types) {
               tg::Tensor p = k.cast<tg::Tensor>();
               ft.emplace_back(p, to_tensor_type(v, p));
             }
             tg::CompileOptions o;
             o.precision = parse_enum<tg::ComputePrecision>(
                 "compile", precision,
                 {{"f32", tg::ComputePrecision::f32}, {"float32", tg::ComputePrecision::f32},
                  {"tf32", tg::ComputePrecision::tf32}, {"bf16", tg::ComputePrecision::bf16},
                  {"bfloat16", tg::ComputePrecision::bf16}, {"f16", tg::ComputePrecision::f16},
                  {"float16", tg::ComputePrecision::f16}});
             o.memory_budget_bytes = memory_budget_bytes;
             o.arena_group = std::move(arena_group);
             o.disable_type_inference = disable_type_inference;
             auto ts = targets.is_none() ? std::vector<tg::Tensor>{} : to_tensors(targets);
             auto ops = to_ops(target_ops);
             tg::Device dev = to_device(device);
             py::gil_scoped_release nogil;
             return g.compile(dev, ft, ts, ops, o);
           }, py::arg("feed_types"), py::arg("targets"), py::arg("target_ops") = py::none(),
           py::arg("device") = py::none(), py::arg("precision") = "f32", py::arg("memory_budget_bytes") = 0,
           py::arg("arena_group") = "", py::arg("disable_type_inference") = false,
           "Compiles what `targets` and `target_ops` reach for feed types {placeholder: type}, a type\n"
           "being a TensorType, (shape, dtype), a shape (the placeholder's dtype) or an example\n"
           "value. precision: 'f32', 'tf32', 'bf16' or 'f16' (conv and matmul on CUDA).\n"
           "disable_type_inference=True: a dim given as -1 may vary between runs; the graph is\n"
           "compiled once and each new input shape is lowered at its first run (no recompile).\n"
           "Returns an Executable whose inputs are in the dict's order.")
      .def_property_readonly("num_nodes", &tg::Graph::num_nodes)
      .def("__str__", &tg::Graph::to_string)
      .def("to_dot", [](const tg::Graph& g) { return tg::to_dot(g); }, "Graphviz DOT text of the graph.")
      .def("__eq__", [](const tg::Graph& a, py::handle b) {
        return py::isinstance<tg::Graph>(b) && a.impl() == b.cast<tg::Graph>().impl();
      })
      .def("__hash__", [](const tg::Graph& g) { return py::hash(py::int_(reinterpret_cast<uintptr_t>(g.impl().get()))); });

  m.def("read_variable", &tg::read_variable, py::arg("variable"),
        "The variable's value at this point of a run (ordered by control dependencies).");
  m.def("assign_variable", [](const tg::Tensor& v, py::handle value) { return tg::assign_variable(v, as_tensor(value, v)); },
        py::arg("variable"), py::arg("value"),
        "Sets the variable to `value` when the run reaches it (published when the whole run\n"
        "succeeds). Returns the Operation, to use as a target op or control dependency.");
  m.def("runtime_stats", []() {
    tg::RuntimeStats s = tg::runtime_stats();
    py::dict d;
    d["compiles"] = s.compiles;
    d["graph_launches"] = s.graph_launches;
    d["graph_captures"] = s.graph_captures;
    d["capture_fallbacks"] = s.capture_fallbacks;
    d["interpreted_runs"] = s.interpreted_runs;
    d["runs"] = s.runs;
    d["run_host_ns"] = s.run_host_ns;
    d["host_waits"] = s.host_waits;
    d["kernel_compiles"] = s.kernel_compiles;
    d["autotune_runs"] = s.autotune_runs;
    d["arena_allocations"] = s.arena_allocations;
    d["arena_bytes"] = s.arena_bytes;
    d["input_copy_bytes"] = s.input_copy_bytes;
    d["result_copy_bytes"] = s.result_copy_bytes;
    d["control_fallbacks"] = s.control_fallbacks;
    d["kernel_cache_rejects"] = s.kernel_cache_rejects;
    return d;
  }, "Process-wide runtime counters (compiles, graph launches, host waits, arena bytes, ...).");
}

}  // namespace tgpy
