#include "ir/attrs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tg::ir {
namespace {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::nhwc: return "nhwc";
    case Layout::nchw: return "nchw";
    case Layout::hwio: return "hwio";
    case Layout::oihw: return "oihw";
    case Layout::ohwi: return "ohwi";
  }
  return "?";
}

const char* padding_name(Padding p) {
  switch (p) {
    case Padding::explicit_padding: return "explicit";
    case Padding::valid: return "valid";
    case Padding::same: return "same";
    case Padding::same_lower: return "same_lower";
  }
  return "?";
}

std::string conv_to_string(const Conv2dDesc& a) {
  return fmt::format("strides=[{}], dilations=[{}], padding={}, explicit_padding=[{}], groups={}, "
                     "data_layout={}, weights_layout={}",
                     fmt::join(a.strides, ","), fmt::join(a.dilations, ","),
                     padding_name(a.padding), fmt::join(a.explicit_padding, ","), a.groups,
                     layout_name(a.data_layout), layout_name(a.weights_layout));
}

std::string pool_to_string(const Pool2dDesc& a) {
  return fmt::format("kernel_size=[{}], strides=[{}], dilations=[{}], padding={}, "
                     "explicit_padding=[{}], ceil_mode={}, count_include_pad={}, data_layout={}",
                     fmt::join(a.kernel_size, ","), fmt::join(a.strides, ","),
                     fmt::join(a.dilations, ","), padding_name(a.padding),
                     fmt::join(a.explicit_padding, ","), a.ceil_mode, a.count_include_pad,
                     layout_name(a.data_layout));
}

std::string_view pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::constant: return "constant";
    case PadMode::reflect: return "reflect";
    case PadMode::symmetric: return "symmetric";
    case PadMode::edge: return "edge";
    case PadMode::periodic: return "periodic";
  }
  return "?";
}
std::string_view scatter_name(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::none: return "none";
    case ScatterReduction::add: return "add";
    case ScatterReduction::mul: return "mul";
    case ScatterReduction::min: return "min";
    case ScatterReduction::max: return "max";
  }
  return "?";
}
std::string_view stencil_reduction_name(StencilReduction r) {
  switch (r) {
    case StencilReduction::sum: return "sum";
    case StencilReduction::product: return "product";
    case StencilReduction::min: return "min";
    case StencilReduction::max: return "max";
    case StencilReduction::argmin: return "argmin";
    case StencilReduction::argmax: return "argmax";
  }
  return "?";
}
std::string_view padding_style_name(PaddingStyle p) {
  switch (p) {
    case PaddingStyle::explicit_padding: return "explicit";
    case PaddingStyle::valid: return "valid";
    case PaddingStyle::same: return "same";
  }
  return "?";
}
std::string_view boundary_name(BoundaryMode b) {
  switch (b) {
    case BoundaryMode::zero: return "zero";
    case BoundaryMode::constant: return "constant";
    case BoundaryMode::reflect: return "reflect";
    case BoundaryMode::symmetric: return "symmetric";
    case BoundaryMode::clamp_to_edge: return "clamp_to_edge";
    case BoundaryMode::periodic: return "periodic";
  }
  return "?";
}

struct Printer {
  std::string operator()(const NoAttrs&) const { return ""; }
  std::string operator()(const ConstantAttrs& a) const { return "value=" + a.value.to_string(4); }
  std::string operator()(const FillAttrs& a) const { return fmt::format("value={:g}", a.value); }
  std::string operator()(const IotaAttrs& a) const { return fmt::format("axis={}", a.axis); }
  std::string operator()(const RandomAttrs& a) const {
    return fmt::format("a={:g}, b={:g}, seed={}", a.a, a.b, a.seed);
  }
  std::string operator()(const VariableAttrs& a) const { return fmt::format("slot={}", a.index); }
  std::string operator()(const CastAttrs& a) const {
    return fmt::format("dtype={}", dtype_name(a.dtype));
  }
  std::string operator()(const BroadcastAttrs& a) const { return "shape=" + shape_to_string(a.shape); }
  std::string operator()(const ReshapeAttrs& a) const {
    return fmt::format("shape=[{}]", fmt::join(a.shape, ","));
  }
  std::string operator()(const TransposeAttrs& a) const {
    return fmt::format("perm=[{}]", fmt::join(a.perm, ","));
  }
  std::string operator()(const SliceDesc& a) const {
    return fmt::format("begin=[{}], end=[{}], strides=[{}], axes=[{}]", fmt::join(a.begin, ","),
                       fmt::join(a.end, ","), fmt::join(a.strides, ","), fmt::join(a.axes, ","));
  }
  std::string operator()(const PadDesc& a) const {
    return fmt::format("before=[{}], after=[{}], mode={}, value={:g}", fmt::join(a.before, ","),
                       fmt::join(a.after, ","), pad_mode_name(a.mode), a.value);
  }
  std::string operator()(const ConcatAttrs& a) const { return fmt::format("axis={}", a.axis); }
  std::string operator()(const ReverseAttrs& a) const {
    return fmt::format("axes=[{}]", fmt::join(a.axes, ","));
  }
  std::string operator()(const TileAttrs& a) const {
    return fmt::format("multiples=[{}]", fmt::join(a.multiples, ","));
  }
  std::string operator()(const ReduceDesc& a) const {
    return fmt::format("axes=[{}], keep_dims={}", fmt::join(a.axes, ","), a.keep_dims);
  }
  std::string operator()(const ArgReduceDesc& a) const {
    return fmt::format("axis={}, keep_dims={}", a.axis, a.keep_dims);
  }
  std::string operator()(const MatmulDesc& a) const {
    return fmt::format("transpose_a={}, transpose_b={}", a.transpose_a, a.transpose_b);
  }
  std::string operator()(const GatherDesc& a) const {
    return fmt::format("axis={}, batch_dims={}", a.axis, a.batch_dims);
  }
  std::string operator()(const GatherNdDesc& a) const {
    return fmt::format("batch_dims={}", a.batch_dims);
  }
  std::string operator()(const GatherElementsDesc& a) const { return fmt::format("axis={}", a.axis); }
  std::string operator()(const ScatterNdDesc& a) const {
    return fmt::format("reduction={}", scatter_name(a.reduction));
  }
  std::string operator()(const ScatterElementsDesc& a) const {
    return fmt::format("axis={}, reduction={}", a.axis, scatter_name(a.reduction));
  }
  std::string operator()(const StencilDesc& a) const {
    return fmt::format(
        "reduction={}, strides=[{}], dilations=[{}], padding=[{}], style={}, boundary={}, "
        "constant={:g}",
        stencil_reduction_name(a.reduction), fmt::join(a.strides, ","), fmt::join(a.dilations, ","),
        fmt::join(a.explicit_padding, ","), padding_style_name(a.padding_style),
        boundary_name(a.boundary_mode), a.padding_constant);
  }
  std::string operator()(const Conv2dDesc& a) const { return conv_to_string(a); }
  std::string operator()(const ConvBackwardAttrs& a) const {
    return fmt::format("{}, shape={}", conv_to_string(a.conv), shape_to_string(a.shape));  // symbols by name
  }
  std::string operator()(const Pool2dDesc& a) const { return pool_to_string(a); }
  std::string operator()(const RandomLikeAttrs& a) const {
    return fmt::format("low={:g}, high={:g}, seed={}", a.low, a.high, a.seed);
  }
  std::string operator()(const LoopAttrs& a) const {
    if (a.max_iterations < 0) return fmt::format("carried={}", a.num_carried);
    return fmt::format("carried={}, max_iterations={}", a.num_carried, a.max_iterations);
  }
  // "shape=[2,3], steps={add(0,1):f32; exp(2):f32}, outputs=[3]" (values: inputs, then steps)
  std::string operator()(const FusedAttrs& a) const {
    std::string steps;
    for (size_t k = 0; k < a.steps.size(); ++k) {
      const FusedStep& s = a.steps[k];
      steps += fmt::format("{}{}({}):{}", k ? "; " : "", op_name(s.kind), fmt::join(s.args, ","),
                           dtype_name(s.dtype));
    }
    std::string out = fmt::format("shape={}, steps={{{}}}, outputs=[{}]", shape_to_string(a.shape), steps,
                                  fmt::join(a.outputs, ","));
    if (!a.reduce_axes.empty()) {
      out += fmt::format(", reduce_axes=[{}], keep_dims={}", fmt::join(a.reduce_axes, ","), a.keep_dims);
    }
    return out;
  }
  std::string operator()(const CollectiveAttrs& a) const {
    return fmt::format("reduction={}, axis={}, root={}, comm={} rank {} of {} (group {})",
                       collective_reduction_name(a.reduction), a.axis, a.root, comm_backend_name(a.backend),
                       a.rank, a.world_size, a.group);
  }
  // "stencil={...}, window=[3,3], weights=[...], prologue={...}, epilogue={...}"
  std::string operator()(const FusedStencilAttrs& a) const {
    std::string out = fmt::format("stencil={{{}}}, window=[{}]", (*this)(a.stencil), fmt::join(a.window, ","));
    if (!a.weights.empty()) out += fmt::format(", weights=[{}]", fmt::join(a.weights, ","));
    return out + fmt::format(", prologue_inputs={}, prologue={{{}}}, epilogue={{{}}}", a.num_prologue_inputs,
                             (*this)(a.prologue), (*this)(a.epilogue));
  }
};

}  // namespace

std::string attrs_to_string(const Attrs& attrs) { return std::visit(Printer{}, attrs); }

}  // namespace tg::ir
