// tg::onnx::import: ModelProto -> Graph.
#include "frontends/onnx/importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <cctype>
#include <fstream>
#include <set>

#include "core/error_util.h"
#include "frontends/onnx/tensor_proto.h"

namespace tg::onnx {
namespace {

constexpr const char* kPrefix = "[onnx] ";

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Ops whose results are drawn at run time: never folded.
bool is_random_op(const std::string& op) {
  static const std::set<std::string> kRandom = {"RandomUniform", "RandomNormal",
                                                "RandomUniformLike", "RandomNormalLike",
                                                "Bernoulli", "Multinomial"};
  return kRandom.count(op) > 0;
}

void merge_deps(std::vector<std::string>& into, const std::vector<std::string>& from) {
  std::vector<std::string> out;
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(out));
  into = std::move(out);
}

// The shape of a graph input/output's declared type: a dim_param that is a valid symbol name
// (tg::symbolic_dim: letters, digits, '_.:[]', at most 64) becomes that named symbol, so that
// inputs declaring one "sequence" share one size; other symbolic or absent dims are -1.
// nullopt when the type declares no shape.
std::optional<Shape> declared_shape(const pb::TypeProto_Tensor& t) {
  if (!t.has_shape()) return std::nullopt;
  Shape s;
  for (const auto& d : t.shape().dim()) {
    int64_t v = -1;
    if (d.has_dim_value()) {
      v = d.dim_value();
      if (is_symbolic_dim(v)) v = -2;  // a malformed negative size, never a symbol: refused as -2
    } else if (d.has_dim_param() && !d.dim_param().empty() && d.dim_param().size() <= 64 &&
               std::all_of(d.dim_param().begin(), d.dim_param().end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' ||
                        c == '[' || c == ']';
               })) {
      v = symbolic_dim(d.dim_param());
    }
    s.push_back(v);
  }
  return s;
}

std::string value_kind(const pb::TypeProto& t) {
  if (t.has_sequence_type()) return "a sequence";
  if (t.has_optional_type()) return "an optional";
  if (t.has_map_type()) return "a map";
  if (t.has_sparse_tensor_type()) return "a sparse tensor";
  return "not a tensor";
}

// How a node reads input `i` when that input's import-time value holds symbols (Value::symbolic).
enum class SymbolicUse {
  moves,        // moves elements without computing on them: the output holds the symbols too
  takes_shape,  // the converter reads the symbols as sizes (Reshape's shape, Expand's shape...)
  compares,     // Equal against -1 (exporters' "replace -1 by 1" before Expand): decided exactly
  computes,     // anything else: only if the value holds no symbol after all
};

SymbolicUse symbolic_use(const pb::NodeProto& node, int i) {
  const std::string& op = node.op_type();
  if (op == "Concat") return SymbolicUse::moves;
  if ((op == "Gather" || op == "Unsqueeze" || op == "Squeeze" || op == "Identity" || op == "Flatten" ||
       op == "Slice" || op == "Reshape" || op == "Expand") && i == 0) {
    return SymbolicUse::moves;
  }
  if (op == "Where" && (i == 1 || i == 2)) return SymbolicUse::moves;
  if (op == "Cast" && i == 0) {
    for (const auto& a : node.attribute()) {
      if (a.name() == "to" && a.i() == 7) return SymbolicUse::moves;  // int64 (int32 would wrap the symbols)
    }
  }
  if ((op == "Reshape" || op == "Expand") && i == 1) return SymbolicUse::takes_shape;
  if ((op == "ConstantOfShape" && i == 0) || (op == "Slice" && i == 2) || (op == "Range" && i == 1)) {
    return SymbolicUse::takes_shape;
  }
  if (op == "Equal") return SymbolicUse::compares;
  if (op == "Shape" || op == "Size") return SymbolicUse::takes_shape;  // reads the type, not the values
  return SymbolicUse::computes;
}

// The symbols among an integer value's elements ("batch, sequence"); empty when none.
std::string symbols_in(const TensorData& v) {
  std::string names;
  if (!is_integer(v.dtype())) return names;
  for (int64_t k = 0; k < v.num_elements(); ++k) {
    const double e = v.element_as_double(k);
    if (e < -1 && is_symbolic_dim(static_cast<int64_t>(e))) names += (names.empty() ? "" : ", ") + dim_name(static_cast<int64_t>(e));
  }
  return names;
}

}  // namespace

std::string describe_node(const pb::NodeProto& node, int64_t opset) {
  std::string who = !node.name().empty() ? fmt::format("'{}'", node.name())
                    : node.output_size() > 0 ? fmt::format("-> '{}'", node.output(0))
                                             : std::string("(unnamed)");
  std::string op = is_default_domain(node.domain())
                       ? node.op_type()
                       : fmt::format("{}:{}", node.domain(), node.op_type());
  return fmt::format("node {} ({}, opset {})", who, op, opset);
}

Importer::Importer(const pb::ModelProto& model, const ImportOptions& options,
                   std::filesystem::path dir, const std::map<std::string, TensorData>& fixed)
    : model_(model), options_(options), dir_(std::move(dir)), fixed_(fixed) {}

int64_t Importer::opset_of(const std::string& domain) const {
  auto it = opsets_.find(is_default_domain(domain) ? "" : domain);
  return it == opsets_.end() ? -1 : it->second;
}

void Importer::add_opsets() {
  for (const auto& o : model_.opset_import()) {
    opsets_[is_default_domain(o.domain()) ? "" : o.domain()] = o.version();
  }
  // IR version < 3 models carry no opset_import: they are opset 1.
  if (model_.opset_import_size() == 0) opsets_[""] = 1;
}

Value* Importer::find(const std::string& name) {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<TensorData> Importer::known_of(const Tensor& t) const {
  auto k = known_by_tensor_.find({t.node_id(), t.index()});
  if (k == known_by_tensor_.end()) return std::nullopt;
  return k->second;
}

void Importer::note_known(const Tensor& t, const TensorData& v) {
  known_by_tensor_[{t.node_id(), t.index()}] = v;
}

TensorData Importer::value_of(const NodeContext& ctx, int i) {
  Value* v = find(ctx.proto().input(i));
  std::string where = fmt::format("input {} ('{}')", i, ctx.proto().input(i));
  if (v->known) return *v->known;
  if (!v->deps.empty()) {
    throw NeedInputValues{v->deps, fmt::format("{}{}: {}", kPrefix, ctx.describe(), where)};
  }
  if (v->variable_dep) {
    ctx.fail(ErrorCode::unsupported,
             "{} must be known at import time but depends on a variable (import with "
             "initializers_as_variables off)",
             where);
  }
  if (v->random) {
    ctx.fail(ErrorCode::unsupported, "{} must be known at import time but is random", where);
  }
  try {
    v->known = graph_.run({}, {v->tensor}, {}, Device::cpu()).at(0);
  } catch (const Error& e) {
    ctx.fail(e.code(), "evaluating {} at import time failed: {}", where, e.what());
  }
  return *v->known;
}

std::optional<TensorData> Importer::try_value_of(const NodeContext& ctx, int i) {
  Value* v = find(ctx.proto().input(i));
  if (v->known) return v->known;
  if (!v->deps.empty() || v->variable_dep || v->random) return std::nullopt;
  return value_of(ctx, i);
}

std::vector<Tensor> Importer::import_subgraph(const NodeContext& ctx, const pb::GraphProto& body,
                                              const std::vector<Tensor>& inputs) {
  if (body.input_size() != static_cast<int>(inputs.size())) {
    ctx.fail(ErrorCode::invalid_argument, "the body graph '{}' has {} inputs, {} are bound",
             body.name(), body.input_size(), inputs.size());
  }
  // The enclosing node's dependencies stand for those of everything the body computes.
  Value meta;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Value* in = find(ctx.proto().input(i));
    merge_deps(meta.deps, in->deps);
    meta.variable_dep |= in->variable_dep;
    meta.random |= in->random;
  }
  std::unordered_map<std::string, Value> saved = values_;
  for (int i = 0; i < body.input_size(); ++i) {
    Value v = meta;
    v.tensor = inputs[i];
    v.producer = ctx.describe();
    auto k = known_by_tensor_.find({inputs[i].node_id(), inputs[i].index()});
    if (k != known_by_tensor_.end()) v.known = k->second;
    values_[body.input(i).name()] = std::move(v);
  }
  for (const pb::TensorProto& init : body.initializer()) {
    TensorData data;
    try {
      data = tensor_from_proto(init, dir_);
    } catch (const Error& e) {
      ctx.fail(e.code(), "body initializer '{}': {}", init.name(), e.what());
    }
    Value v;
    v.tensor = graph_.constant(data, init.name());
    v.known = data;
    values_[init.name()] = std::move(v);
  }
  for (int i = 0; i < body.node_size(); ++i) convert_node(body.node(i), i);
  std::vector<Tensor> outs;
  for (const pb::ValueInfoProto& o : body.output()) {
    const Value* v = find(o.name());
    if (!v) ctx.fail(ErrorCode::not_found, "body output '{}' is not produced", o.name());
    outs.push_back(v->tensor);
    if (!v->known) {
      merge_deps(pending_.deps, v->deps);
      pending_.variable_dep |= v->variable_dep;
      pending_.random |= v->random;
    }
  }
  values_ = std::move(saved);
  return outs;
}

void Importer::add_initializers(ImportResult& result) {
  std::map<std::string, const pb::ValueInfoProto*> graph_inputs;
  for (const pb::ValueInfoProto& in : model_.graph().input()) graph_inputs.emplace(in.name(), &in);
  std::set<std::string> defaults;  // initializers that are graph inputs
  for (const pb::TensorProto& init : model_.graph().initializer()) {
    TensorData data;
    try {
      data = tensor_from_proto(init, dir_);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("{}initializer '{}': {}", kPrefix, init.name(), e.what()));
    }
    Value v;
    v.producer = fmt::format("initializer '{}'", init.name());
    auto input = graph_inputs.find(init.name());
    if (input != graph_inputs.end()) defaults.insert(init.name());
    auto given = options_.initializer_values.find(init.name());
    if (given != options_.initializer_values.end() && input != graph_inputs.end()) {
      // The input's default replaced, as a feed replaces it (ImportOptions::initializer_values).
      const TensorData& value = given->second;
      auto fail_value = [&](ErrorCode code, const std::string& why) {
        throw Error(code, fmt::format("{}graph input '{}' (an initializer's default): "
                                      "ImportOptions::initializer_values gives {}",
                                      kPrefix, init.name(), why));
      };
      if (value.dtype() != data.dtype()) {
        fail_value(ErrorCode::dtype_mismatch, fmt::format("dtype {}, the initializer's is {}",
                                                          dtype_name(value.dtype()), dtype_name(data.dtype())));
      }
      const pb::ValueInfoProto& declared = *input->second;
      std::optional<Shape> shape;
      if (declared.type().has_tensor_type()) shape = declared_shape(declared.type().tensor_type());
      if (!shape) shape = data.shape();  // no declaration: the default's shape
      bool fits = shape->size() == value.shape().size();
      for (size_t d = 0; fits && d < shape->size(); ++d) fits = (*shape)[d] < 0 || (*shape)[d] == value.shape()[d];
      if (!fits) {
        fail_value(ErrorCode::shape_mismatch,
                   fmt::format("shape {}, declared {}", str(value.shape()), str(*shape)));
      }
      data = value.device().is_cpu() ? value : value.to(Device::cpu());
      v.producer = fmt::format("graph input '{}' (its default replaced)", init.name());
    }
    if (options_.initializers_as_variables && is_floating(data.dtype())) {
      v.tensor = graph_.variable(data, init.name());
      v.variable_dep = true;
      result.variables.push_back({init.name(), v.tensor});
    } else {
      v.tensor = graph_.constant(data, init.name());
      v.known = data;
    }
    values_[init.name()] = std::move(v);
  }
  for (const auto& [name, value] : options_.initializer_values) {
    if (!defaults.count(name)) {
      std::vector<std::string> names;
      for (const std::string& d : defaults) names.push_back("'" + d + "'");
      throw Error(ErrorCode::not_found,
                  fmt::format("{}ImportOptions::initializer_values names '{}', which is not a graph "
                              "input with an initializer (those: {})",
                              kPrefix, name, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
  }
  if (model_.graph().sparse_initializer_size() > 0) {
    throw Error(ErrorCode::unsupported,
                fmt::format("{}initializer '{}': sparse initializers are not supported", kPrefix,
                            model_.graph().sparse_initializer(0).values().name()));
  }
}

void Importer::add_inputs(ImportResult& result) {
  std::set<std::string> seen;
  for (const pb::ValueInfoProto& in : model_.graph().input()) {
    const std::string& name = in.name();
    seen.insert(name);
    if (values_.count(name)) continue;  // an initializer with a default value (IR < 4 style)
    auto fail_input = [&](ErrorCode code, const std::string& why) {
      throw Error(code, fmt::format("{}graph input '{}': {}", kPrefix, name, why));
    };
    if (!in.type().has_tensor_type()) {
      fail_input(ErrorCode::unsupported,
                 fmt::format("{} type is not supported", value_kind(in.type())));
    }
    const auto& tt = in.type().tensor_type();
    DType dtype{};
    try {
      dtype = require_dtype(tt.elem_type());
    } catch (const Error& e) {
      fail_input(e.code(), e.what());
    }
    std::optional<Shape> shape = declared_shape(tt);
    auto over = options_.input_shapes.find(name);
    if (over != options_.input_shapes.end()) {
      if (shape) {
        bool fits = over->second.size() == shape->size();
        for (size_t d = 0; fits && d < shape->size(); ++d) {
          // -1 or a symbol leaves a dim open even where a size is declared (compiled once).
          const int64_t o = over->second[d];
          fits = (*shape)[d] < 0 || o == -1 || is_symbolic_dim(o) || (*shape)[d] == o;
        }
        if (!fits) {
          fail_input(ErrorCode::shape_mismatch,
                     fmt::format("ImportOptions::input_shapes gives {}, declared {}",
                                 str(over->second), str(*shape)));
        }
      }
      shape = over->second;
    }
    Value v;
    v.producer = fmt::format("graph input '{}'", name);
    auto fixed = fixed_.find(name);
    if (fixed != fixed_.end()) {
      const TensorData& data = fixed->second;
      if (data.dtype() != dtype) {
        fail_input(ErrorCode::dtype_mismatch,
                   fmt::format("the value given has dtype {}, declared {}",
                               dtype_name(data.dtype()), dtype_name(dtype)));
      }
      v.tensor = graph_.constant(data, name);
      v.known = data;
      result.fixed_inputs.push_back(name);
    } else {
      if (!shape) {
        fail_input(ErrorCode::unsupported,
                   "its rank is not declared (give its shape in ImportOptions::input_shapes)");
      }
      v.tensor = graph_.placeholder(*shape, dtype, name);
      v.deps = {name};
      result.inputs.push_back({name, v.tensor});
    }
    values_[name] = std::move(v);
  }
  for (const auto& [name, shape] : options_.input_shapes) {
    if (!seen.count(name)) {
      throw Error(ErrorCode::not_found,
                  fmt::format("{}ImportOptions::input_shapes names '{}', which is not a graph "
                              "input",
                              kPrefix, name));
    }
  }
}

void Importer::convert_node(const pb::NodeProto& node, int index) {
  int64_t opset = opset_of(node.domain());
  NodeContext ctx(*this, node, opset);
  if (opset < 0) {
    ctx.fail(ErrorCode::unsupported, "the model imports no opset for domain '{}'", node.domain());
  }
  bool known = false;
  const ConverterRow* row = find_converter(
      is_default_domain(node.domain()) ? "" : node.domain(), node.op_type(), opset, &known);
  if (!row) {
    if (!known) ctx.fail(ErrorCode::unsupported, "unknown op (no converter for this op type)");
    std::string ranges;
    for (const ConverterRow& r : converter_table()) {
      if (r.op_type == node.op_type() && r.domain == (is_default_domain(node.domain())
                                                          ? std::string() : node.domain())) {
        ranges += fmt::format("{}[{}, {}]", ranges.empty() ? "" : ", ", r.since, r.until);
      }
    }
    ctx.fail(ErrorCode::unsupported, "unsupported opset: converters exist for opsets {}", ranges);
  }
  // Every named input must exist already (ONNX graphs are topologically sorted).
  Value merged;
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) continue;
    const Value* in = find(node.input(i));
    if (!in) {
      ctx.fail(ErrorCode::not_found,
               "input {} '{}' is not a graph input, an initializer or an earlier node's output",
               i, node.input(i));
    }
    if (in->known) continue;  // a value fixed at import time depends on nothing at run time
    merge_deps(merged.deps, in->deps);
    merged.variable_dep |= in->variable_dep;
    merged.random |= in->random;
  }
  merged.random |= is_random_op(node.op_type());
  merged.producer = ctx.describe();
  // Values holding symbols (sizes known at run time) may only be moved, read as shapes, or
  // compared with -1 (symbols are sizes, never -1); computing on them needs fixed input shapes.
  bool moves_symbols = false;
  for (int i = 0; i < node.input_size(); ++i) {
    const Value* in = node.input(i).empty() ? nullptr : find(node.input(i));
    if (!in || !in->symbolic) continue;
    const SymbolicUse use = symbolic_use(node, i);
    if (use == SymbolicUse::moves) moves_symbols = true;
    if (use == SymbolicUse::moves || use == SymbolicUse::takes_shape) continue;
    const std::optional<TensorData> v = try_value_of(ctx, i);
    const std::string names = v ? symbols_in(*v) : std::string();
    if (names.empty()) continue;  // no symbol reached this input after all
    bool decided = false;
    if (use == SymbolicUse::compares && node.input_size() == 2) {
      const std::optional<TensorData> other = try_value_of(ctx, 1 - i);
      decided = other.has_value() && symbols_in(*other).empty();
      for (int64_t k = 0; decided && k < other->num_elements(); ++k) decided = other->element_as_double(k) == -1;
    }
    if (!decided) {
      ctx.fail(ErrorCode::unsupported,
               "input {} ('{}') holds the run-time sizes {} (Shape of a tensor of symbolic shape), which {} "
               "cannot compute on; fix the input dims with ImportOptions::input_shapes",
               i, node.input(i), names, node.op_type());
    }
  }
  std::vector<Tensor> outs;
  Value outer_pending = std::move(pending_);
  pending_ = Value();
  try {
    outs = row->fn(ctx);
  } catch (const NeedInputValues&) {
    throw;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(kPrefix, 0) == 0) throw;
    throw Error(e.code(), fmt::format("{}{}: {}", kPrefix, ctx.describe(), msg));
  }
  // Subgraphs (If branches, loop bodies) may read outer values the node does not list.
  merge_deps(merged.deps, pending_.deps);
  merged.variable_dep |= pending_.variable_dep;
  merged.random |= pending_.random;
  pending_ = std::move(outer_pending);
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    if (i >= static_cast<int>(outs.size()) || !outs[i].valid()) {
      ctx.fail(ErrorCode::unsupported, "output {} ('{}') is not supported", i, node.output(i));
    }
    Value v = merged;
    v.tensor = outs[i];
    v.symbolic = moves_symbols || symbolic_by_tensor_.count({outs[i].node_id(), outs[i].index()}) > 0;
    auto k = known_by_tensor_.find({outs[i].node_id(), outs[i].index()});
    if (k != known_by_tensor_.end()) {
      v.known = k->second;
      v.deps.clear();  // e.g. Shape of a graph input: fixed by the static shape alone
      v.variable_dep = v.random = false;
    }
    values_[node.output(i)] = std::move(v);
  }
  (void)index;
}

void Importer::add_outputs(ImportResult& result) {
  for (const pb::ValueInfoProto& out : model_.graph().output()) {
    const Value* v = find(out.name());
    if (!v) {
      throw Error(ErrorCode::not_found,
                  fmt::format("{}graph output '{}' is not produced by any node", kPrefix,
                              out.name()));
    }
    if (out.type().has_tensor_type()) {
      const auto& tt = out.type().tensor_type();
      std::optional<DType> declared = dtype_from_onnx(tt.elem_type());
      if (tt.elem_type() != 0 && declared && *declared != v->tensor.dtype()) {
        throw Error(ErrorCode::dtype_mismatch,
                    fmt::format("{}{}: output '{}' has dtype {}, the model declares {}", kPrefix,
                                v->producer, out.name(), dtype_name(v->tensor.dtype()),
                                dtype_name(*declared)));
      }
      std::optional<Shape> shape = declared_shape(tt);
      const Shape& got = v->tensor.shape();
      bool mismatch = shape && shape->size() != got.size();
      for (size_t d = 0; shape && !mismatch && d < got.size(); ++d) {
        mismatch = (*shape)[d] >= 0 && got[d] >= 0 && (*shape)[d] != got[d];
      }
      if (mismatch) {
        throw Error(ErrorCode::shape_mismatch,
                    fmt::format("{}{}: output '{}' has shape {}, the model declares {}", kPrefix,
                                v->producer, out.name(), str(got), str(*shape)));
      }
    }
    // A graph output holding symbols (the Shape of an input whose sizes vary) would return their
    // codes, not the sizes: refused, like any computation on them.
    const std::string names = v->symbolic && v->known ? symbols_in(*v->known) : std::string();
    if (!names.empty()) {
      throw Error(ErrorCode::unsupported,
                  fmt::format("{}{}: output '{}' holds the run-time sizes {} (Shape of a tensor of symbolic shape); "
                              "fix the input dims with ImportOptions::input_shapes",
                              kPrefix, v->producer, out.name(), names));
    }
    result.outputs.push_back({out.name(), v->tensor});
  }
}

void Importer::check_single_assignment(const google::protobuf::RepeatedPtrField<pb::NodeProto>& nodes) {
  // ONNX graphs are in SSA form (IR spec, "Names Within a Graph"): a value written twice would
  // otherwise be silently taken from its last writer.
  std::map<std::string, std::string> written;  // value name -> who defines it
  for (const pb::TensorProto& t : model_.graph().initializer()) written.emplace(t.name(), "an initializer");
  for (const pb::ValueInfoProto& in : model_.graph().input()) written.emplace(in.name(), "a graph input");
  for (int i = 0; i < nodes.size(); ++i) {
    const pb::NodeProto& node = nodes[i];
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      const std::string who = fmt::format("node {} ({}{})", i, node.op_type(),
                                          node.name().empty() ? "" : " '" + node.name() + "'");
      auto [it, fresh] = written.emplace(out, who);
      if (!fresh) {
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("{}{} writes value '{}', which {} already defines (ONNX values are "
                                "assigned once)", kPrefix, who, out, it->second));
      }
    }
  }
}

ImportResult Importer::run() {
  if (!model_.has_graph()) {
    throw Error(ErrorCode::invalid_argument, fmt::format("{}the model has no graph", kPrefix));
  }
  ImportResult result;
  result.ir_version = model_.ir_version();
  result.producer_name = model_.producer_name();
  result.producer_version = model_.producer_version();
  add_opsets();
  result.opset = opset_of("");
  add_initializers(result);
  add_inputs(result);
  const auto& nodes = model_.graph().node();
  check_single_assignment(nodes);
  for (int i = 0; i < nodes.size(); ++i) convert_node(nodes[i], i);
  add_outputs(result);
  result.graph = graph_;
  return result;
}

namespace {

ImportResult import_model(const pb::ModelProto& model, const ImportOptions& options,
                          const std::filesystem::path& dir) {
  std::map<std::string, TensorData> fixed;
  for (;;) {
    try {
      return Importer(model, options, dir, fixed).run();
    } catch (const NeedInputValues& need) {
      bool added = false;
      for (const std::string& name : need.names) {
        if (fixed.count(name)) continue;
        std::optional<TensorData> v;
        if (options.input_values) v = options.input_values(name);
        if (!v) {
          throw Error(ErrorCode::unsupported,
                      fmt::format("{} must be known at import time but depends on the value of "
                                  "graph input '{}' (give it through ImportOptions::input_values)",
                                  need.where, name));
        }
        fixed[name] = v->to(Device::cpu());
        added = true;
      }
      if (!added) {
        throw Error(ErrorCode::internal, need.where + ": input values requested twice");
      }
    }
  }
}

// Parses a serialized ModelProto; tg::Error naming `what` when it is too large or corrupt.
void parse_model(pb::ModelProto& model, const void* data, size_t size, const std::string& what) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw Error(ErrorCode::unsupported,
                fmt::format("{}{}: models over 2 GiB must keep their weights in external data",
                            kPrefix, what));
  }
  if (!model.ParseFromArray(data, static_cast<int>(size))) {
    throw Error(ErrorCode::io_error,
                fmt::format("{}{}: not a valid ONNX ModelProto (the file is truncated or "
                            "corrupt; protobuf parsing failed after reading {} bytes)",
                            kPrefix, what, size));
  }
}

ImportResult import_bytes(const void* data, size_t size, const std::string& what,
                          const ImportOptions& options, const std::filesystem::path& dir) {
  pb::ModelProto model;
  parse_model(model, data, size, what);
  return import_model(model, options, dir);
}

std::string read_model_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorCode::io_error,
                fmt::format("{}'{}' is a directory, not a model file", kPrefix, path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::not_found,
                fmt::format("{}cannot open model file '{}'", kPrefix, path.string()));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw Error(ErrorCode::io_error, fmt::format("{}cannot read '{}'", kPrefix, path.string()));
  }
  return bytes;
}

}  // namespace

bool available() { return true; }

ImportResult import(const std::filesystem::path& path, const ImportOptions& options) {
  const std::string bytes = read_model_file(path);
  std::filesystem::path dir = options.external_data_dir;
  if (dir.empty()) dir = path.has_parent_path() ? path.parent_path() : ".";
  return import_bytes(bytes.data(), bytes.size(), fmt::format("'{}'", path.string()), options, dir);
}

std::vector<InputInfo> model_inputs(const std::filesystem::path& path, bool with_defaults) {
  const std::string bytes = read_model_file(path);
  pb::ModelProto model;
  parse_model(model, bytes.data(), bytes.size(), fmt::format("'{}'", path.string()));
  std::set<std::string> initialized;
  for (const pb::TensorProto& init : model.graph().initializer()) initialized.insert(init.name());
  std::vector<InputInfo> inputs;
  for (const pb::ValueInfoProto& in : model.graph().input()) {
    const bool has_default = initialized.count(in.name()) > 0;
    if (has_default && !with_defaults) continue;
    if (!in.type().has_tensor_type()) {
      throw Error(ErrorCode::unsupported,
                  fmt::format("{}graph input '{}': {} type is not supported", kPrefix, in.name(),
                              value_kind(in.type())));
    }
    InputInfo info{.name = in.name(), .shape = declared_shape(in.type().tensor_type()),
                   .has_default = has_default};
    try {
      info.dtype = require_dtype(in.type().tensor_type().elem_type());
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("{}graph input '{}': {}", kPrefix, in.name(), e.what()));
    }
    inputs.push_back(std::move(info));
  }
  return inputs;
}

ImportResult import(std::span<const uint8_t> model_bytes, const ImportOptions& options) {
  return import_bytes(model_bytes.data(), model_bytes.size(), "model bytes", options,
                      options.external_data_dir);
}

std::vector<Tensor> ImportResult::targets() const {
  std::vector<Tensor> t;
  for (const NamedTensor& o : outputs) t.push_back(o.tensor);
  return t;
}

Feeds ImportResult::feeds(const std::vector<TensorData>& values) const {
  if (values.size() != inputs.size()) {
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}the model has {} inputs, {} values given", kPrefix, inputs.size(),
                            values.size()));
  }
  Feeds f;
  for (size_t i = 0; i < values.size(); ++i) f.emplace_back(inputs[i].tensor, values[i]);
  return f;
}

}  // namespace tg::onnx
