// Bindings of the op builders of tg/ops.h and tg/ops_conv.h: every public op, its attributes as
// keyword arguments (enums as their C++ names: "nhwc", "same", "reflect", "add", ...).
// Semantics: docs/ops.md.
#include "common.h"

namespace tgpy {

namespace {

tg::ScatterReduction to_scatter_reduction(const std::string& s) {
  return parse_enum<tg::ScatterReduction>("scatter", s,
                                          {{"none", tg::ScatterReduction::none}, {"add", tg::ScatterReduction::add},
                                           {"mul", tg::ScatterReduction::mul}, {"min", tg::ScatterReduction::min},
                                           {"max", tg::ScatterReduction::max}});
}

tg::Conv2dDesc conv_desc(py::handle strides, py::handle dilations, const std::string& padding,
                         py::handle explicit_padding, int64_t groups, const std::string& data_layout,
                         const std::string& weights_layout) {
  tg::Conv2dDesc d;
  d.strides = to_shape(strides);
  if (d.strides.size() == 1) d.strides.push_back(d.strides[0]);
  d.dilations = to_shape(dilations);
  if (d.dilations.size() == 1) d.dilations.push_back(d.dilations[0]);
  d.padding = to_padding(padding, explicit_padding);
  if (!explicit_padding.is_none()) d.explicit_padding = to_shape(explicit_padding);
  d.groups = groups;
  d.data_layout = to_layout(data_layout);
  d.weights_layout = to_layout(weights_layout);
  return d;
}

tg::Pool2dDesc pool_desc(py::handle kernel_size, py::handle strides, py::handle dilations, const std::string& padding,
                         py::handle explicit_padding, bool ceil_mode, bool count_include_pad,
                         const std::string& data_layout) {
  tg::Pool2dDesc d;
  d.kernel_size = to_shape(kernel_size);
  if (d.kernel_size.size() == 1) d.kernel_size.push_back(d.kernel_size[0]);
  d.strides = to_axes(strides);
  if (d.strides.size() == 1) d.strides.push_back(d.strides[0]);
  d.dilations = to_shape(dilations);
  if (d.dilations.size() == 1) d.dilations.push_back(d.dilations[0]);
  d.padding = to_padding(padding, explicit_padding);
  if (!explicit_padding.is_none()) d.explicit_padding = to_shape(explicit_padding);
  d.ceil_mode = ceil_mode;
  d.count_include_pad = count_include_pad;
  d.data_layout = to_layout(data_layout);
  return d;
}

// Indices: a tensor, or values made a constant (Python ints become int64).
tg::Tensor index_tensor(py::handle h, const tg::Tensor& x) {
  if (is_tensor(h)) return h.cast<tg::Tensor>();
  bool array = py::isinstance<py::array>(h) || py::isinstance<tg::TensorData>(h);
  return tg::Graph(x.graph_impl()).constant(array ? to_tensor_data(h) : to_tensor_data(h, tg::DType::i64));
}

#define TG_UNARY(name, doc) m.def(#name, [](const tg::Tensor& x) { return tg::name(x); }, py::arg("x"), doc)
#define TG_BINARY(name, doc) \
  m.def(#name, [](py::handle a, py::handle b) { return binary_op(&tg::name, a, b); }, py::arg("a"), py::arg("b"), doc)

constexpr const char* kUnaryDoc =
    "Elementwise; same shape and dtype. Float-only ops raise tensorgraph.Error(dtype_mismatch)\n"
    "on integers and bool; IEEE semantics for special values.";
constexpr const char* kBinaryDoc =
    "Elementwise with numpy broadcasting; both operands share a dtype (a Python scalar or array\n"
    "takes the tensor's). Non-broadcastable shapes raise tensorgraph.Error(shape_mismatch).";

}  // namespace

void bind_ops(py::module_& m) {
  TG_UNARY(neg, kUnaryDoc);
  TG_UNARY(abs, kUnaryDoc);
  TG_UNARY(sign, "sign(x): -1, 0 or 1 (NaN for NaN). Every numeric dtype.");
  TG_UNARY(exp, kUnaryDoc);
  TG_UNARY(log, kUnaryDoc);
  TG_UNARY(log1p, kUnaryDoc);
  TG_UNARY(expm1, kUnaryDoc);
  TG_UNARY(sqrt, kUnaryDoc);
  TG_UNARY(rsqrt, kUnaryDoc);
  TG_UNARY(reciprocal, kUnaryDoc);
  TG_UNARY(square, kUnaryDoc);
  TG_UNARY(sin, kUnaryDoc);
  TG_UNARY(cos, kUnaryDoc);
  TG_UNARY(tan, kUnaryDoc);
  TG_UNARY(tanh, kUnaryDoc);
  TG_UNARY(sigmoid, kUnaryDoc);
  TG_UNARY(erf, kUnaryDoc);
  TG_UNARY(floor, kUnaryDoc);
  TG_UNARY(ceil, kUnaryDoc);
  TG_UNARY(round, "Round half to even (numpy.round). Floating dtypes.");
  TG_UNARY(logical_not, "Elementwise not of a bool tensor.");
  TG_UNARY(is_nan, "Elementwise isnan; bool result.");
  TG_UNARY(is_inf, "Elementwise isinf; bool result.");

  TG_BINARY(add, kBinaryDoc);
  TG_BINARY(sub, kBinaryDoc);
  TG_BINARY(mul, kBinaryDoc);
  TG_BINARY(div, "a / b (integers truncate toward zero; integer division by zero raises at run time).");
  TG_BINARY(pow, "a ** b, floating dtypes.");
  TG_BINARY(maximum, "NaN-propagating elementwise maximum.");
  TG_BINARY(minimum, "NaN-propagating elementwise minimum.");
  TG_BINARY(mod, "C fmod sign rule (the result has the dividend's sign).");
  TG_BINARY(floor_mod, "Python/numpy rule (the result has the divisor's sign); Tensor.__mod__.");
  TG_BINARY(floor_div, "Integers round toward -inf; floats give floor(a / b); Tensor.__floordiv__.");
  m.def("atan2", [](py::handle y, py::handle x) { return binary_op(&tg::atan2, y, x); }, py::arg("y"), py::arg("x"),
        "atan2(y, x), floating dtypes.");
  TG_BINARY(equal, "Elementwise ==, bool result.");
  TG_BINARY(not_equal, "Elementwise !=, bool result.");
  TG_BINARY(less, "Elementwise <, bool result.");
  TG_BINARY(less_equal, "Elementwise <=, bool result.");
  TG_BINARY(greater, "Elementwise >, bool result.");
  TG_BINARY(greater_equal, "Elementwise >=, bool result.");
  TG_BINARY(logical_and, "Elementwise and of bool tensors.");
  TG_BINARY(logical_or, "Elementwise or of bool tensors.");
  TG_BINARY(logical_xor, "Elementwise xor of bool tensors.");

  m.def("select", [](const tg::Tensor& c, py::handle a, py::handle b) {
          tg::Tensor like = is_tensor(a) ? a.cast<tg::Tensor>() : is_tensor(b) ? b.cast<tg::Tensor>() : c;
          return tg::select(c, as_tensor(a, like), as_tensor(b, like));
        }, py::arg("condition"), py::arg("a"), py::arg("b"),
        "where(condition, a, b): a where the bool condition holds, else b; all three broadcast.");
  m.attr("where") = m.attr("select");
  m.def("clamp", [](const tg::Tensor& x, py::handle lo, py::handle hi) {
          return tg::clamp(x, as_tensor(lo, x), as_tensor(hi, x));
        }, py::arg("x"), py::arg("low"), py::arg("high"),
        "min(max(x, low), high) elementwise (numpy.clip); NaN propagates.");
  m.def("cast", [](const tg::Tensor& x, py::handle dt) { return tg::cast(x, to_dtype(dt)); }, py::arg("x"),
        py::arg("dtype"),
        "Converts the element type (float->int truncates and saturates, NaN->0; int->int wraps;\n"
        "x->bool is x != 0; to float16/bfloat16 rounds to nearest even).");

  // Sources.
  m.def("fill", [](tg::Graph& g, py::handle shape, double value, py::handle dt) {
          return tg::fill(g, to_shape(shape), value, to_dtype(dt));
        }, py::arg("graph"), py::arg("shape"), py::arg("value"), py::arg("dtype") = tg::DType::f32,
        "A tensor of `shape` filled with `value`.");
  m.def("iota", [](tg::Graph& g, py::handle shape, int64_t axis, py::handle dt) {
          return tg::iota(g, to_shape(shape), axis, to_dtype(dt));
        }, py::arg("graph"), py::arg("shape"), py::arg("axis") = 0, py::arg("dtype") = tg::DType::i32,
        "Element index along `axis`, broadcast over the other dims.");
  m.def("arange", [](tg::Graph& g, double start, py::handle limit, double delta, py::handle dt) {
          if (limit.is_none()) return tg::arange(g, 0, start, delta, to_dtype(dt));
          return tg::arange(g, start, limit.cast<double>(), delta, to_dtype(dt));
        }, py::arg("graph"), py::arg("start"), py::arg("limit") = py::none(), py::arg("delta") = 1.0,
        py::arg("dtype") = tg::DType::i32,
        "numpy.arange: [start, start+delta, ...) before limit (arange(g, n) is 0..n-1).");
  m.def("random_uniform", [](tg::Graph& g, py::handle shape, double low, double high, uint64_t seed, py::handle dt) {
          return tg::random_uniform(g, to_shape(shape), low, high, {seed, to_dtype(dt)});
        }, py::arg("graph"), py::arg("shape"), py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("seed") = 0,
        py::arg("dtype") = tg::DType::f32,
        "Uniform on [low, high) from Philox4x32-10: element i depends only on (seed, i).");
  m.def("random_normal", [](tg::Graph& g, py::handle shape, double mean, double stddev, uint64_t seed, py::handle dt) {
          return tg::random_normal(g, to_shape(shape), mean, stddev, {seed, to_dtype(dt)});
        }, py::arg("graph"), py::arg("shape"), py::arg("mean") = 0.0, py::arg("stddev") = 1.0, py::arg("seed") = 0,
        py::arg("dtype") = tg::DType::f32, "Normal(mean, stddev) via Box-Muller from Philox4x32-10.");
  m.def("random_uniform_like", [](const tg::Tensor& like, const tg::Tensor& key, double low, double high,
                                  uint64_t seed, py::handle dt) {
          return tg::random_uniform_like(like, key, low, high, {seed, to_dtype(dt)});
        }, py::arg("like"), py::arg("key"), py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("seed") = 0,
        py::arg("dtype") = tg::DType::f32,
        "Uniform with the shape of `like`, one independent stream per value of the i64 scalar `key`.");

  // Shape and data movement.
  m.def("broadcast_to", [](const tg::Tensor& x, py::handle s) { return tg::broadcast_to(x, to_shape(s)); },
        py::arg("x"), py::arg("shape"), "numpy broadcast of x to `shape` (-1 keeps x's dim).");
  m.def("reshape", [](const tg::Tensor& x, py::handle s) { return tg::reshape(x, to_shape(s)); }, py::arg("x"),
        py::arg("shape"), "Same elements, new shape; at most one -1 is inferred.");
  m.def("transpose", [](const tg::Tensor& x, py::handle perm) { return tg::transpose(x, to_axes(perm)); },
        py::arg("x"), py::arg("perm") = py::none(), "Output dim i is input dim perm[i]; None reverses the dims.");
  m.def("slice", [](const tg::Tensor& x, py::handle begin, py::handle end, py::handle strides, py::handle axes) {
          tg::SliceDesc d;
          d.begin = to_shape(begin);
          for (py::handle e : end) d.end.push_back(e.is_none() ? tg::kSliceEnd : e.cast<int64_t>());
          d.strides = to_axes(strides);
          d.axes = to_axes(axes);
          return tg::slice(x, d);
        }, py::arg("x"), py::arg("begin"), py::arg("end"), py::arg("strides") = py::none(), py::arg("axes") = py::none(),
        "Python-style strided slice per axis (None in `end`: to the end). Tensor[...] also slices.");
  m.def("pad", [](const tg::Tensor& x, py::handle before, py::handle after, const std::string& mode, double value) {
          tg::PadDesc d;
          d.before = to_shape(before);
          d.after = to_shape(after);
          d.mode = parse_enum<tg::PadMode>("pad", mode,
                                           {{"constant", tg::PadMode::constant}, {"reflect", tg::PadMode::reflect},
                                            {"symmetric", tg::PadMode::symmetric}, {"edge", tg::PadMode::edge},
                                            {"periodic", tg::PadMode::periodic}, {"wrap", tg::PadMode::periodic}});
          d.value = value;
          return tg::pad(x, d);
        }, py::arg("x"), py::arg("before"), py::arg("after"), py::arg("mode") = "constant", py::arg("value") = 0.0,
        "numpy.pad with one before/after entry per dim; mode constant, reflect, symmetric, edge, periodic.");
  m.def("concat", [](const std::vector<tg::Tensor>& xs, int64_t axis) { return tg::concat(xs, axis); },
        py::arg("tensors"), py::arg("axis"), "Joins tensors along `axis`.");
  m.def("split", [](const tg::Tensor& x, py::handle sizes, int64_t axis) {
          if (py::isinstance<py::int_>(sizes)) return tg::split(x, sizes.cast<int64_t>(), axis);
          return tg::split(x, to_shape(sizes), axis);
        }, py::arg("x"), py::arg("sizes"), py::arg("axis"),
        "Splits along `axis` into pieces of the given sizes, or into `sizes` equal pieces (an int).");
  m.def("reverse", [](const tg::Tensor& x, py::handle axes) { return tg::reverse(x, to_axes(axes)); }, py::arg("x"),
        py::arg("axes"), "Reverses the order of elements along each of `axes`.");
  m.def("expand_dims", &tg::expand_dims, py::arg("x"), py::arg("axis"), "Inserts a dim of size 1 at `axis`.");
  m.def("squeeze", [](const tg::Tensor& x, py::handle axes) { return tg::squeeze(x, to_axes(axes)); },
        py::arg("x"), py::arg("axes") = py::none(), "Removes dims of size 1 (those in `axes`, or all).");
  m.def("tile", [](const tg::Tensor& x, py::handle mult) { return tg::tile(x, to_shape(mult)); }, py::arg("x"),
        py::arg("multiples"), "numpy.tile with one multiple per dim.");

  // Reductions.
#define TG_REDUCE(name, doc)                                                                        \
  m.def(#name, [](const tg::Tensor& x, py::handle axes, bool keep_dims) {                          \
          return tg::name(x, {to_axes(axes), keep_dims});                                          \
        }, py::arg("x"), py::arg("axes") = py::none(), py::arg("keep_dims") = false, doc)
  TG_REDUCE(reduce_sum, "Sum over `axes` (None: all). Integers wrap; float32 accumulates in float64.");
  TG_REDUCE(reduce_prod, "Product over `axes` (None: all).");
  TG_REDUCE(reduce_max, "Maximum over `axes` (NaN propagates).");
  TG_REDUCE(reduce_min, "Minimum over `axes` (NaN propagates).");
  TG_REDUCE(reduce_and, "And over `axes` of a bool tensor.");
  TG_REDUCE(reduce_or, "Or over `axes` of a bool tensor.");
  TG_REDUCE(reduce_mean, "Arithmetic mean over `axes` (floating dtypes).");
  TG_REDUCE(reduce_variance, "Population variance (ddof = 0) over `axes`.");
#undef TG_REDUCE
  m.attr("mean") = m.attr("reduce_mean");
  m.def("argmax", [](const tg::Tensor& x, int64_t axis, bool keep) { return tg::argmax(x, {axis, keep}); },
        py::arg("x"), py::arg("axis") = 0, py::arg("keep_dims") = false,
        "Index (int64) of the largest element along `axis`; the first on ties, NaN wins.");
  m.def("argmin", [](const tg::Tensor& x, int64_t axis, bool keep) { return tg::argmin(x, {axis, keep}); },
        py::arg("x"), py::arg("axis") = 0, py::arg("keep_dims") = false,
        "Index (int64) of the smallest element along `axis`; the first on ties, NaN wins.");

  m.def("matmul", [](py::handle a, py::handle b, bool ta, bool tb) {
          tg::Tensor x = is_tensor(a) ? a.cast<tg::Tensor>() : as_tensor(a, b.cast<tg::Tensor>());
          return tg::matmul(x, as_tensor(b, x), {ta, tb});
        }, py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
        "numpy.matmul: [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast.");

  // Gather and scatter.
  m.def("gather", [](const tg::Tensor& x, py::handle idx, int64_t axis, int64_t batch_dims) {
          return tg::gather(x, index_tensor(idx, x), {axis, batch_dims});
        }, py::arg("x"), py::arg("indices"), py::arg("axis") = 0, py::arg("batch_dims") = 0,
        "ONNX Gather / tf.gather along `axis` (int32/int64 indices, negative from the end).");
  m.def("gather_nd", [](const tg::Tensor& x, py::handle idx, int64_t batch_dims) {
          return tg::gather_nd(x, index_tensor(idx, x), {batch_dims});
        }, py::arg("x"), py::arg("indices"), py::arg("batch_dims") = 0, "ONNX GatherND / tf.gather_nd.");
  m.def("gather_elements", [](const tg::Tensor& x, py::handle idx, int64_t axis) {
          return tg::gather_elements(x, index_tensor(idx, x), {axis});
        }, py::arg("x"), py::arg("indices"), py::arg("axis") = 0, "ONNX GatherElements / torch.gather.");
  m.def("scatter_nd", [](const tg::Tensor& data, py::handle idx, py::handle upd, const std::string& r) {
          return tg::scatter_nd(data, index_tensor(idx, data), as_tensor(upd, data), {to_scatter_reduction(r)});
        }, py::arg("data"), py::arg("indices"), py::arg("updates"), py::arg("reduction") = "none",
        "ONNX ScatterND; reduction none, add, mul, min or max.");
  m.def("scatter_elements", [](const tg::Tensor& data, py::handle idx, py::handle upd, int64_t axis,
                               const std::string& r) {
          return tg::scatter_elements(data, index_tensor(idx, data), as_tensor(upd, data), {axis, to_scatter_reduction(r)});
        }, py::arg("data"), py::arg("indices"), py::arg("updates"), py::arg("axis") = 0, py::arg("reduction") = "none",
        "ONNX ScatterElements; reduction none, add, mul, min or max.");

  m.def("stencil", [](const tg::Tensor& src, const tg::Tensor& w, const std::string& reduction, py::handle strides,
                      py::handle dilations, py::handle explicit_padding, const std::string& padding_style,
                      const std::string& boundary_mode, double padding_constant) {
          tg::StencilDesc d;
          d.reduction = parse_enum<tg::StencilReduction>(
              "stencil", reduction,
              {{"sum", tg::StencilReduction::sum}, {"product", tg::StencilReduction::product},
               {"min", tg::StencilReduction::min}, {"max", tg::StencilReduction::max},
               {"argmin", tg::StencilReduction::argmin}, {"argmax", tg::StencilReduction::argmax}});
          d.strides = to_axes(strides);
          d.dilations = to_axes(dilations);
          d.explicit_padding = to_axes(explicit_padding);
          d.padding_style = parse_enum<tg::PaddingStyle>(
              "stencil", padding_style,
              {{"explicit", tg::PaddingStyle::explicit_padding}, {"valid", tg::PaddingStyle::valid},
               {"same", tg::PaddingStyle::same}});
          d.boundary_mode = parse_enum<tg::BoundaryMode>(
              "stencil", boundary_mode,
              {{"zero", tg::BoundaryMode::zero}, {"constant", tg::BoundaryMode::constant},
               {"reflect", tg::BoundaryMode::reflect}, {"symmetric", tg::BoundaryMode::symmetric},
               {"clamp_to_edge", tg::BoundaryMode::clamp_to_edge}, {"periodic", tg::BoundaryMode::periodic}});
          d.padding_constant = padding_constant;
          return tg::stencil(src, w, d);
        }, py::arg("source"), py::arg("weights"), py::arg("reduction") = "sum", py::arg("strides") = py::none(),
        py::arg("dilations") = py::none(), py::arg("explicit_padding") = py::none(),
        py::arg("padding_style") = "explicit", py::arg("boundary_mode") = "zero", py::arg("padding_constant") = 0.0,
        "MPSGraph stencil: a window of weights' rank slides over the source's last dims.");

  // Convolution and pooling.
  m.def("conv2d", [](const tg::Tensor& x, const tg::Tensor& w, py::handle strides, py::handle dilations,
                     const std::string& padding, py::handle explicit_padding, int64_t groups,
                     const std::string& data_layout, const std::string& weights_layout) {
          return tg::conv2d(x, w, conv_desc(strides, dilations, padding, explicit_padding, groups, data_layout,
                                            weights_layout));
        }, py::arg("x"), py::arg("w"), py::arg("strides") = py::make_tuple(1, 1),
        py::arg("dilations") = py::make_tuple(1, 1), py::arg("padding") = "valid",
        py::arg("explicit_padding") = py::none(), py::arg("groups") = 1,
        py::arg("data_layout") = "nhwc", py::arg("weights_layout") = "hwio",
        "2-D convolution (cross-correlation): x [N,H,W,C] (nhwc) or [N,C,H,W] (nchw), w [kH,kW,Cin/g,Cout]\n"
        "(hwio), [Cout,Cin/g,kH,kW] (oihw) or [Cout,kH,kW,Cin/g] (ohwi). padding: 'valid', 'same', 'same_lower' or 'explicit'\n"
        "(explicit_padding = (top, bottom, left, right)).");
  m.def("conv2d_backward_data", [](const tg::Tensor& dy, const tg::Tensor& w, py::handle input_shape,
                                   py::handle strides, py::handle dilations, const std::string& padding,
                                   py::handle explicit_padding, int64_t groups, const std::string& data_layout,
                                   const std::string& weights_layout) {
          return tg::conv2d_backward_data(dy, w, to_shape(input_shape),
                                          conv_desc(strides, dilations, padding, explicit_padding, groups,
                                                    data_layout, weights_layout));
        }, py::arg("dy"), py::arg("w"), py::arg("input_shape"), py::arg("strides") = py::make_tuple(1, 1),
        py::arg("dilations") = py::make_tuple(1, 1), py::arg("padding") = "valid",
        py::arg("explicit_padding") = py::none(), py::arg("groups") = 1,
        py::arg("data_layout") = "nhwc", py::arg("weights_layout") = "hwio",
        "The gradient of conv2d with respect to its input.");
  m.def("conv2d_backward_weights", [](const tg::Tensor& dy, const tg::Tensor& x, py::handle weights_shape,
                                      py::handle strides, py::handle dilations, const std::string& padding,
                                      py::handle explicit_padding, int64_t groups, const std::string& data_layout,
                                      const std::string& weights_layout) {
          return tg::conv2d_backward_weights(dy, x, to_shape(weights_shape),
                                             conv_desc(strides, dilations, padding, explicit_padding, groups,
                                                       data_layout, weights_layout));
        }, py::arg("dy"), py::arg("x"), py::arg("weights_shape"), py::arg("strides") = py::make_tuple(1, 1),
        py::arg("dilations") = py::make_tuple(1, 1), py::arg("padding") = "valid",
        py::arg("explicit_padding") = py::none(), py::arg("groups") = 1,
        py::arg("data_layout") = "nhwc", py::arg("weights_layout") = "hwio",
        "The gradient of conv2d with respect to its weights.");
  m.def("conv_transpose2d", [](const tg::Tensor& x, const tg::Tensor& w, py::handle strides, py::handle dilations,
                               const std::string& padding, py::handle explicit_padding, int64_t groups,
                               const std::string& data_layout, const std::string& weights_layout,
                               py::handle output_padding) {
          tg::ConvTranspose2dDesc d;
          d.conv = conv_desc(strides, dilations, padding, explicit_padding, groups, data_layout, weights_layout);
          d.output_padding = to_shape(output_padding);
          return tg::conv_transpose2d(x, w, d);
        }, py::arg("x"), py::arg("w"), py::arg("strides") = py::make_tuple(1, 1),
        py::arg("dilations") = py::make_tuple(1, 1), py::arg("padding") = "valid",
        py::arg("explicit_padding") = py::none(), py::arg("groups") = 1,
        py::arg("data_layout") = "nhwc", py::arg("weights_layout") = "hwio",
        py::arg("output_padding") = py::make_tuple(0, 0),
        "Transposed convolution (torch ConvTranspose2d; oihw weights are [Cin, Cout/g, kH, kW]).");
#define TG_POOL(name, doc)                                                                            \
  m.def(#name, [](const tg::Tensor& x, py::handle k, py::handle s, py::handle dil, const std::string& p, \
                  py::handle ep, bool ceil, bool cip, const std::string& layout) {                  \
          return tg::name(x, pool_desc(k, s, dil, p, ep, ceil, cip, layout));                        \
        }, py::arg("x"), py::arg("kernel_size") = py::make_tuple(2, 2), py::arg("strides") = py::none(),   \
        py::arg("dilations") = py::make_tuple(1, 1), py::arg("padding") = "valid",                   \
        py::arg("explicit_padding") = py::none(), py::arg("ceil_mode") = false,      \
        py::arg("count_include_pad") = false, py::arg("data_layout") = "nhwc", doc)
  TG_POOL(max_pool2d, "Maximum over each window (strides default to the window; padding never wins).");
  TG_POOL(avg_pool2d, "Mean over each window (floating dtypes).");
#undef TG_POOL
  m.def("max_pool2d_backward", [](const tg::Tensor& dy, const tg::Tensor& x, py::handle k, py::handle s,
                                  const std::string& p, py::handle ep, bool ceil, const std::string& layout) {
          return tg::max_pool2d_backward(dy, x, pool_desc(k, s, py::make_tuple(1, 1), p, ep, ceil, false, layout));
        }, py::arg("dy"), py::arg("x"), py::arg("kernel_size") = py::make_tuple(2, 2), py::arg("strides") = py::none(),
        py::arg("padding") = "valid", py::arg("explicit_padding") = py::none(),
        py::arg("ceil_mode") = false, py::arg("data_layout") = "nhwc", "Gradient of max_pool2d.");
  m.def("avg_pool2d_backward", [](const tg::Tensor& dy, const tg::Tensor& x, py::handle k, py::handle s,
                                  const std::string& p, py::handle ep, bool ceil, bool cip, const std::string& layout) {
          return tg::avg_pool2d_backward(dy, x, pool_desc(k, s, py::make_tuple(1, 1), p, ep, ceil, cip, layout));
        }, py::arg("dy"), py::arg("x"), py::arg("kernel_size") = py::make_tuple(2, 2), py::arg("strides") = py::none(),
        py::arg("padding") = "valid", py::arg("explicit_padding") = py::none(),
        py::arg("ceil_mode") = false, py::arg("count_include_pad") = false, py::arg("data_layout") = "nhwc",
        "Gradient of avg_pool2d.");
  m.def("global_avg_pool2d", [](const tg::Tensor& x, const std::string& layout, bool keep_dims) {
          return tg::global_avg_pool2d(x, to_layout(layout), keep_dims);
        }, py::arg("x"), py::arg("data_layout") = "nhwc", py::arg("keep_dims") = false,
        "Mean over H and W: [N,H,W,C] -> [N,C] (nhwc) or [N,C,H,W] -> [N,C] (nchw).");
}

}  // namespace tgpy
