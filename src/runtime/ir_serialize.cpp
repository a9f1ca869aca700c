#include "runtime/ir_serialize.h"

#include <cstring>
#include <limits>

#include "core/error_util.h"

namespace tg::runtime::tgx {
namespace {

constexpr int kMaxDepth = 32;   // region nesting
constexpr size_t kMaxRank = 64;

// Attribute structs in ir::Attrs order, by name: a file names the struct, not its index.
constexpr const char* kAttrNames[] = {
    "none",      "constant", "fill",    "iota",       "random",         "variable",         "cast",
    "broadcast", "reshape",  "transpose", "slice",    "pad",            "concat",           "reverse",
    "tile",      "reduce",   "arg_reduce", "matmul",  "gather",         "gather_nd",        "gather_elements",
    "scatter_nd", "scatter_elements", "stencil", "conv2d", "conv_backward", "pool2d", "random_like",
    "loop",      "fused",    "fused_stencil", "collective"};
static_assert(std::size(kAttrNames) == std::variant_size_v<ir::Attrs>, "one name per ir::Attrs alternative");

// One description of each struct's fields serves both directions: Out writes, In reads.
struct Out {
  Writer& w;
  void operator()(const int64_t& v) { w.i64(v); }
  void operator()(const uint64_t& v) { w.u64(v); }
  void operator()(const int& v) { w.i64(v); }
  void operator()(const bool& v) { w.u8(v ? 1 : 0); }
  void operator()(const double& v) { w.f64(v); }
  void operator()(const DType& v) { w.str(dtype_name(v)); }
  void operator()(const ir::OpKind& v) { w.str(ir::op_name(v)); }
  void operator()(const std::vector<int64_t>& v) {  // shapes among them: symbols noted
    w.u32(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) {
      if (x < -1) w.note_symbol(x);
      w.i64(x);
    }
  }
  void operator()(const std::vector<int>& v) {
    w.u32(static_cast<uint32_t>(v.size()));
    for (int x : v) w.i64(x);
  }
  template <typename E>
    requires std::is_enum_v<E>
  void en(const E& v, int) { w.u8(static_cast<uint8_t>(v)); }
  void operator()(const TensorData& t) {
    TensorData host = t.to(Device::cpu());
    w.str(dtype_name(host.dtype()));
    (*this)(host.shape());
    w.u64(host.nbytes());
    if (host.nbytes()) w.bytes(host.raw_data(), host.nbytes());
  }
};

struct In {
  Reader& r;
  void operator()(int64_t& v) { v = r.i64(); }
  void operator()(uint64_t& v) { v = r.u64(); }
  void operator()(int& v) {
    const int64_t x = r.i64();
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()) r.malformed("an int out of range");
    v = static_cast<int>(x);
  }
  void operator()(bool& v) {
    const uint8_t b = r.u8();
    if (b > 1) r.malformed("a bool that is not 0 or 1");
    v = b == 1;
  }
  void operator()(double& v) { v = r.f64(); }
  void operator()(DType& v) {
    const std::string name = r.str();
    for (DType t : kAllDTypes) {
      if (dtype_name(t) == name) {
        v = t;
        return;
      }
    }
    r.malformed(fmt::format("unknown dtype '{}'", name));
  }
  void operator()(ir::OpKind& v) {
    const std::string name = r.str();
    if (!ir::op_kind_from_name(name, &v)) {
      fail(ErrorCode::unsupported, "load", "{}: section '{}': op '{}' is not known to this build", r.file(),
           r.section(), name);
    }
  }
  void operator()(std::vector<int64_t>& v) {  // the file's symbols mapped to this process's
    v.resize(r.count(8));
    for (int64_t& x : v) x = r.symbol(r.i64());
  }
  void operator()(std::vector<int>& v) {
    v.resize(r.count(8));
    for (int& x : v) (*this)(x);
  }
  template <typename E>
    requires std::is_enum_v<E>
  void en(E& v, int max) {
    const uint8_t b = r.u8();
    if (b > max) r.malformed(fmt::format("an enum value {} above {}", b, max));
    v = static_cast<E>(b);
  }
  void operator()(TensorData& t) {
    DType dtype{};
    (*this)(dtype);
    Shape shape;
    (*this)(shape);
    const uint64_t nbytes = r.u64();
    uint64_t elements = 1;
    for (int64_t d : shape) {
      if (d < 0) r.malformed("a constant with a negative dim");
      if (d != 0 && elements > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
        r.malformed("a constant too large");
      }
      elements *= static_cast<uint64_t>(d);
    }
    if (elements > nbytes || nbytes != elements * dtype_size(dtype)) {
      r.malformed(fmt::format("a constant {}{} holds {} bytes", dtype_name(dtype), shape_to_string(shape), nbytes));
    }
    std::string_view bytes = r.bytes(static_cast<size_t>(nbytes));
    void* at = const_cast<char*>(bytes.data());
    if (r.owner() && nbytes > 0 &&
        (reinterpret_cast<uintptr_t>(at) % dtype_size(dtype) == 0 || nbytes >= r.unaligned_min_bytes())) {
      t = TensorData::from_external(at, shape, dtype, Device::cpu(), r.owner());  // no copy: the file buffer
      return;
    }
    t = TensorData(shape, dtype);  // not zeroed first
    if (nbytes) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  }
};

// The fields of each attribute struct, in file order.
template <typename A> void fields(A&, ir::NoAttrs&) {}
template <typename A> void fields(A& a, ir::ConstantAttrs& x) { a(x.value); }
template <typename A> void fields(A& a, ir::FillAttrs& x) { a(x.value); }
template <typename A> void fields(A& a, ir::IotaAttrs& x) { a(x.axis); }
template <typename A> void fields(A& a, ir::RandomAttrs& x) { a(x.a), a(x.b), a(x.seed); }
template <typename A> void fields(A& a, ir::VariableAttrs& x) { a(x.index); }
template <typename A> void fields(A& a, ir::CastAttrs& x) { a(x.dtype); }
template <typename A> void fields(A& a, ir::BroadcastAttrs& x) { a(x.shape); }
template <typename A> void fields(A& a, ir::ReshapeAttrs& x) { a(x.shape); }
template <typename A> void fields(A& a, ir::TransposeAttrs& x) { a(x.perm); }
template <typename A> void fields(A& a, SliceDesc& x) { a(x.begin), a(x.end), a(x.strides), a(x.axes); }
template <typename A> void fields(A& a, PadDesc& x) { a(x.before), a(x.after), a.en(x.mode, 4), a(x.value); }
template <typename A> void fields(A& a, ir::ConcatAttrs& x) { a(x.axis); }
template <typename A> void fields(A& a, ir::ReverseAttrs& x) { a(x.axes); }
template <typename A> void fields(A& a, ir::TileAttrs& x) { a(x.multiples); }
template <typename A> void fields(A& a, ReduceDesc& x) { a(x.axes), a(x.keep_dims); }
template <typename A> void fields(A& a, ArgReduceDesc& x) { a(x.axis), a(x.keep_dims); }
template <typename A> void fields(A& a, MatmulDesc& x) { a(x.transpose_a), a(x.transpose_b); }
template <typename A> void fields(A& a, GatherDesc& x) { a(x.axis), a(x.batch_dims); }
template <typename A> void fields(A& a, GatherNdDesc& x) { a(x.batch_dims); }
template <typename A> void fields(A& a, GatherElementsDesc& x) { a(x.axis); }
template <typename A> void fields(A& a, ScatterNdDesc& x) { a.en(x.reduction, 4); }
template <typename A> void fields(A& a, ScatterElementsDesc& x) { a(x.axis), a.en(x.reduction, 4); }
template <typename A> void fields(A& a, StencilDesc& x) {
  a.en(x.reduction, 5), a(x.strides), a(x.dilations), a(x.explicit_padding), a.en(x.padding_style, 2),
      a.en(x.boundary_mode, 5), a(x.padding_constant);
}
template <typename A> void fields(A& a, Conv2dDesc& x) {
  a(x.strides), a(x.dilations), a.en(x.padding, 3), a(x.explicit_padding), a(x.groups), a.en(x.data_layout, 4),
      a.en(x.weights_layout, 4);
}
template <typename A> void fields(A& a, ir::ConvBackwardAttrs& x) { fields(a, x.conv), a(x.shape); }
template <typename A> void fields(A& a, Pool2dDesc& x) {
  a(x.kernel_size), a(x.strides), a(x.dilations), a.en(x.padding, 3), a(x.explicit_padding), a(x.ceil_mode),
      a(x.count_include_pad), a.en(x.data_layout, 4);
}
template <typename A> void fields(A& a, ir::RandomLikeAttrs& x) { a(x.low), a(x.high), a(x.seed); }
template <typename A> void fields(A& a, ir::LoopAttrs& x) { a(x.num_carried), a(x.max_iterations); }
template <typename A> void fields(A& a, ir::FusedAttrs& x) {
  a(x.shape);
  if constexpr (std::is_same_v<A, In>) {
    x.steps.resize(a.r.count(8));
  } else {
    a.w.u32(static_cast<uint32_t>(x.steps.size()));
  }
  for (ir::FusedStep& s : x.steps) a(s.kind), a(s.args), a(s.dtype);
  a(x.outputs), a(x.reduce_axes), a(x.keep_dims);
}

template <typename A> void fields(A& a, ir::FusedStencilAttrs& x) {
  fields(a, x.stencil), a(x.window);
  if constexpr (std::is_same_v<A, In>) {
    x.weights.resize(a.r.count(8));
  } else {
    a.w.u32(static_cast<uint32_t>(x.weights.size()));
  }
  for (double& v : x.weights) a(v);
  a(x.num_prologue_inputs), fields(a, x.prologue), fields(a, x.epilogue);
}

// The group id is only meaningful in the process that made it: a loaded executable's collectives
// find no group (tg::Error(not_found) when they run) unless it is loaded where it was saved.
template <typename A> void fields(A& a, ir::CollectiveAttrs& x) {
  a.en(x.reduction, 3), a(x.axis), a(x.root), a(x.rank), a(x.world_size), a.en(x.backend, 2), a(x.group);
}

template <size_t... I>
ir::Attrs make_attrs(size_t index, std::index_sequence<I...>) {
  ir::Attrs out;
  ((index == I ? (out.emplace<I>(), 0) : 0), ...);
  return out;
}

void write_attrs(Writer& w, const ir::Attrs& attrs) {
  w.str(kAttrNames[attrs.index()]);
  Out out{w};
  std::visit([&](const auto& x) { fields(out, const_cast<std::remove_const_t<std::remove_reference_t<decltype(x)>>&>(x)); },
             attrs);
}

ir::Attrs read_attrs(Reader& r) {
  const std::string tag = r.str();
  size_t index = std::size(kAttrNames);
  for (size_t i = 0; i < std::size(kAttrNames); ++i) {
    if (tag == kAttrNames[i]) index = i;
  }
  if (index == std::size(kAttrNames)) {
    fail(ErrorCode::unsupported, "load", "{}: section '{}': attributes '{}' are not known to this build", r.file(),
         r.section(), tag);
  }
  ir::Attrs attrs = make_attrs(index, std::make_index_sequence<std::variant_size_v<ir::Attrs>>{});
  In in{r};
  std::visit([&](auto& x) { fields(in, x); }, attrs);
  return attrs;
}

ir::ValueRef read_ref(Reader& r) {
  In in{r};
  ir::ValueRef v;
  in(v.node);
  in(v.index);
  return v;
}

std::shared_ptr<ir::Graph> read_graph_at(Reader& r, const std::shared_ptr<ir::VariableStore>& store, int depth) {
  if (depth > kMaxDepth) r.malformed("regions nested too deep");
  auto g = std::make_shared<ir::Graph>(store);
  const size_t n = r.count(16);
  In in{r};
  for (size_t i = 0; i < n; ++i) {
    ir::Node node;
    node.id = static_cast<int>(i);
    in(node.kind);
    node.name = r.str();
    node.attrs = read_attrs(r);
    node.inputs.resize(r.count(16));
    for (auto& v : node.inputs) v = read_ref(r);
    node.outputs.resize(r.count(5));
    for (auto& t : node.outputs) t = read_type(r);
    in(node.control_inputs);
    node.regions.resize(r.count(12));
    for (ir::Region& reg : node.regions) {
      reg.body = read_graph_at(r, store, depth + 1);
      in(reg.params);
      reg.results.resize(r.count(16));
      for (auto& v : reg.results) v = read_ref(r);
      for (int p : reg.params) {
        if (p < 0 || p >= reg.body->size() || reg.body->node(p).kind != ir::OpKind::placeholder) {
          r.malformed(fmt::format("node %{}: a region parameter %{} that is not a placeholder of its body", i, p));
        }
      }
    }
    g->nodes().push_back(std::move(node));
  }
  try {
    ir::verify(*g);
  } catch (const Error& e) {
    r.malformed(e.what());
  }
  return g;
}

}  // namespace

void write_type(Writer& w, const TensorType& t) {
  w.str(dtype_name(t.dtype));
  Out{w}(t.shape);
}

TensorType read_type(Reader& r) {
  TensorType t;
  In in{r};
  in(t.dtype);
  t.shape.resize(r.count(8));
  for (int64_t& d : t.shape) {
    d = r.i64();
    if (d < -1 && !r.maps(d)) r.malformed(fmt::format("a type with dim {} (not in section 'symbols')", d));
    d = r.symbol(d);
  }
  if (t.shape.size() > kMaxRank) r.malformed(fmt::format("a type of rank {}", t.shape.size()));
  // Sizes stay far from overflowing the memory plan's 64-bit arithmetic: at most 2^50 bytes.
  uint64_t bytes = dtype_size(t.dtype);
  for (int64_t d : t.shape) {
    if (d < -1 && !is_symbolic_dim(d)) r.malformed(fmt::format("a type with dim {}", d));  // (mapped)
    if (d > 0 && bytes > (uint64_t{1} << 50) / static_cast<uint64_t>(d)) {
      r.malformed(fmt::format("a type of more than 2^50 bytes ({}{})", dtype_name(t.dtype), shape_to_string(t.shape)));
    }
    if (d > 0) bytes *= static_cast<uint64_t>(d);
  }
  return t;
}

void write_graph(Writer& w, const ir::Graph& g) {
  Out out{w};
  w.u32(static_cast<uint32_t>(g.size()));
  for (const ir::Node& n : g.nodes()) {
    out(n.kind);
    w.str(n.name);
    write_attrs(w, n.attrs);
    w.u32(static_cast<uint32_t>(n.inputs.size()));
    for (const auto& v : n.inputs) out(v.node), out(v.index);
    w.u32(static_cast<uint32_t>(n.outputs.size()));
    for (const auto& t : n.outputs) write_type(w, t);
    out(n.control_inputs);
    w.u32(static_cast<uint32_t>(n.regions.size()));
    for (const ir::Region& reg : n.regions) {
      write_graph(w, *reg.body);
      out(reg.params);
      w.u32(static_cast<uint32_t>(reg.results.size()));
      for (const auto& v : reg.results) out(v.node), out(v.index);
    }
  }
}

std::shared_ptr<ir::Graph> read_graph(Reader& r, const std::shared_ptr<ir::VariableStore>& store) {
  return read_graph_at(r, store, 0);
}

}  // namespace tg::runtime::tgx
