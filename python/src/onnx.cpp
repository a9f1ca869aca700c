// Bindings of the ONNX importer (tg/onnx.h): tensorgraph.onnx.load makes a Graph of an ONNX model
// (docs/onnx.md lists the supported ops).
#include "common.h"
#include "tg/onnx.h"

namespace tgpy {

namespace {

namespace onnx = tg::onnx;

py::list named(const std::vector<onnx::NamedTensor>& v) {
  py::list l;
  for (auto& n : v) l.append(py::make_tuple(n.name, n.tensor));
  return l;
}

onnx::ImportOptions import_options(py::handle input_shapes, bool as_variables, py::handle input_values,
                                   py::handle initializer_values) {
  onnx::ImportOptions o;
  o.initializers_as_variables = as_variables;
  if (!initializer_values.is_none()) {
    for (auto [k, v] : initializer_values.cast<py::dict>()) {
      o.initializer_values[k.cast<std::string>()] = to_tensor_data(v);
    }
  }
  if (!input_shapes.is_none()) {
    for (auto [k, v] : input_shapes.cast<py::dict>()) o.input_shapes[k.cast<std::string>()] = to_shape(v);
  }
  if (!input_values.is_none()) {
    // A dict {name: value} or a function name -> value or None (called during the import).
    py::object iv = py::reinterpret_borrow<py::object>(input_values);
    o.input_values = [iv](const std::string& name) -> std::optional<tg::TensorData> {
      py::object v;
      if (py::isinstance<py::dict>(iv)) {
        py::dict d = iv.cast<py::dict>();
        if (!d.contains(name)) return std::nullopt;
        v = d[py::str(name)];
      } else {
        v = iv(name);
      }
      if (v.is_none()) return std::nullopt;
      return to_tensor_data(v);
    };
  }
  return o;
}

}  // namespace

void bind_onnx(py::module_& m) {
  py::class_<onnx::ImportResult>(m, "Model", "An imported ONNX model: its Graph, inputs (placeholders) and outputs.")
      .def_readonly("graph", &onnx::ImportResult::graph)
      .def_property_readonly("inputs", [](const onnx::ImportResult& r) { return named(r.inputs); },
                             "[(name, placeholder Tensor)] in the model's graph-input order.")
      .def_property_readonly("outputs", [](const onnx::ImportResult& r) { return named(r.outputs); },
                             "[(name, Tensor)] in the model's order.")
      .def_property_readonly("variables", [](const onnx::ImportResult& r) { return named(r.variables); })
      .def_readonly("fixed_inputs", &onnx::ImportResult::fixed_inputs)
      .def_readonly("ir_version", &onnx::ImportResult::ir_version)
      .def_readonly("opset", &onnx::ImportResult::opset)
      .def_readonly("producer_name", &onnx::ImportResult::producer_name)
      .def_readonly("producer_version", &onnx::ImportResult::producer_version)
      .def("targets", &onnx::ImportResult::targets, "The output tensors.")
      .def("run", [](onnx::ImportResult& r, py::handle inputs, py::handle device) {
             tg::Feeds feeds;
             if (py::isinstance<py::dict>(inputs)) {
               py::dict d = inputs.cast<py::dict>();
               for (auto item : d) {  // a misspelled name must not be ignored silently
                 const std::string key = py::str(item.first);
                 bool known = false;
                 for (auto& in : r.inputs) known |= in.name == key;
                 if (!known) {
                   std::string names;
                   for (auto& in : r.inputs) names += (names.empty() ? "'" : ", '") + in.name + "'";
                   bool fixed = false;
                   for (const std::string& f : r.fixed_inputs) fixed |= f == key;
                   // An initializer (a weight) or a fixed input is set when the model is loaded.
                   const std::string hint =
                       fixed ? "; '" + key + "' was fixed at load by input_values="
                             : "; an initializer's value is given at load: tg.onnx.load(..., "
                               "initializer_values={'" + key + "': value})";
                   throw tg::Error(tg::ErrorCode::not_found,
                                   "[onnx] the model has no input '" + key + "' (its inputs: " + names + ")" + hint);
                 }
               }
               for (auto& in : r.inputs) {
                 if (!d.contains(in.name)) {
                   throw tg::Error(tg::ErrorCode::not_found, "[onnx] no value for the model's input '" + in.name + "'");
                 }
                 feeds.emplace_back(in.tensor, to_tensor_data(d[py::str(in.name)], in.tensor.dtype()));
               }
             } else {
               std::vector<py::handle> values;
               if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
                 for (py::handle h : inputs) values.push_back(h);
               } else {
                 values.push_back(inputs);
               }
               if (values.size() != r.inputs.size()) {
                 throw tg::Error(tg::ErrorCode::invalid_argument,
                                 "[onnx] the model has " + std::to_string(r.inputs.size()) + " inputs, " +
                                     std::to_string(values.size()) + " values given");
               }
               for (size_t i = 0; i < values.size(); ++i) {
                 feeds.emplace_back(r.inputs[i].tensor, to_tensor_data(values[i], r.inputs[i].tensor.dtype()));
               }
             }
             tg::Device dev = to_device(device);
             std::vector<tg::TensorData> out;
             {
               py::gil_scoped_release nogil;
               out = r.graph.run(feeds, r.targets(), {}, dev);
             }
             return out;
           }, py::arg("inputs"), py::arg("device") = py::none(),
           "Runs the model on `inputs` (a list in input order, one value, or {name: value}) and returns\n"
           "the outputs (TensorData) in the model's order. device: None is the default device.");
  m.def("load", [](py::handle source, py::handle input_shapes, bool as_variables, py::handle input_values,
                   py::handle initializer_values) {
          onnx::ImportOptions o = import_options(input_shapes, as_variables, input_values, initializer_values);
          if (py::isinstance<py::bytes>(source)) {
            std::string b = source.cast<std::string>();
            return onnx::import(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size()), o);
          }
          std::string path = py::str(source).cast<std::string>();  // str or os.PathLike
          return onnx::import(std::filesystem::path(path), o);
        }, py::arg("model"), py::arg("input_shapes") = py::none(), py::arg("initializers_as_variables") = false,
        py::arg("input_values") = py::none(), py::arg("initializer_values") = py::none(),
        "Imports an ONNX model from a path or from bytes (a serialized ModelProto).\n"
        "input_shapes: {input name: shape} fixing dynamic dims; initializers_as_variables: make\n"
        "initializers variables (to fine-tune); input_values: {name: value} or a function for inputs\n"
        "that shapes depend on; initializer_values: {name: value} replacing the defaults of graph\n"
        "inputs that an initializer provides (old models list every weight as such an input).\n"
        "Raises tensorgraph.Error naming the node for what it cannot import.");
  m.def("model_inputs", [](const std::string& path, bool with_defaults) {
          py::list l;
          for (auto& i : onnx::model_inputs(path, with_defaults)) {
            py::object shape = i.shape ? py::object(shape_tuple(*i.shape)) : py::object(py::none());
            l.append(py::make_tuple(i.name, i.dtype, shape));
          }
          return l;
        }, py::arg("path"), py::arg("with_defaults") = false,
        "[(name, dtype, shape or None)] of the model's graph inputs, as declared: a dim_param is a\n"
        "named symbol (its name, a str), other unknown dims -1. Inputs an initializer provides (a\n"
        "default, see load's initializer_values) are listed only with_defaults.");
  m.def("available", &onnx::available, "True when this build has the ONNX frontend.");
  m.def("supported_ops", []() {
          py::list l;
          for (auto& s : onnx::supported_ops())
            l.append(py::make_tuple(s.domain, s.op_type, s.since_version, s.until_version, s.notes));
          return l;
        }, "[(domain, op_type, since_version, until_version, notes)] of the converter table.");
  m.def("read_tensor_proto", [](const std::string& path) { return onnx::read_tensor_proto(path); }, py::arg("path"),
        "A serialized TensorProto file (e.g. ONNX test data) as a TensorData.");
}

}  // namespace tgpy
