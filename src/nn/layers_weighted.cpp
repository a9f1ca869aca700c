// Layers with weights or windows: Dense, Conv2D, BatchNorm, MaxPool2D, AvgPool2D,
// GlobalAvgPool2D.
#include <fmt/format.h>

#include <cmath>

#include "core/error_util.h"
#include "nn/model_impl.h"
#include "tg/ops.h"
#include "tg/sync_batch_norm.h"

namespace tg::nn {

using detail::Fans;
using detail::LayerImpl;
using detail::ModelContext;

namespace {

std::string layout_name(Layout l) {
  switch (l) {
    case Layout::nhwc: return "nhwc";
    case Layout::nchw: return "nchw";
    case Layout::hwio: return "hwio";
    case Layout::oihw: return "oihw";
    case Layout::ohwi: return "ohwi";
  }
  return "?";
}

void check_data_layout(const LayerImpl& l, Layout layout) {
  if (layout != Layout::nhwc && layout != Layout::nchw) {
    l.fail(ErrorCode::invalid_argument,
           fmt::format("layout must be nhwc or nchw, got {}", layout_name(layout)));
  }
}

void check_size2(const LayerImpl& l, Size2 s, std::string_view what) {
  if (s.h < 1 || s.w < 1) {
    l.fail(ErrorCode::invalid_argument, fmt::format("{} must be >= 1, got {}x{}", what, s.h, s.w));
  }
}

void check_explicit_padding(const LayerImpl& l, const std::vector<int64_t>& p) {
  bool ok = p.size() == 4;
  for (int64_t v : p) ok = ok && v >= 0;
  if (!ok) {
    l.fail(ErrorCode::invalid_argument,
           fmt::format("explicit_padding must be 4 values >= 0 {{top, bottom, left, right}}, got "
                       "[{}]", fmt::join(p, ",")));
  }
}

// A rank-4 input's channel count (static) for `layout`.
int64_t channels_of(const LayerImpl& l, const Tensor& x, Layout layout) {
  if (x.rank() != 4) {
    l.fail(ErrorCode::shape_mismatch, fmt::format("expects a rank-4 {} input, got {}",
                                                  layout_name(layout), str(x.shape())));
  }
  int64_t c = x.shape()[layout == Layout::nhwc ? 3 : 1];
  if (c < 0) {
    l.fail(ErrorCode::shape_mismatch,
           fmt::format("needs a static channel dim, got {} ({})", str(x.shape()), layout_name(layout)));
  }
  return c;
}

// Adds a [C] bias to the channel axis.
Tensor add_channel_bias(Tensor y, Tensor bias, Layout layout) {
  if (layout == Layout::nchw) bias = reshape(bias, {bias.shape()[0], 1, 1});
  return add(y, bias);
}

class DenseImpl : public LayerImpl {
 public:
  DenseImpl(int64_t units, DenseOptions o)
      : LayerImpl("Dense", "dense", o.name), units_(units), o_(std::move(o)) {
    if (units < 1) fail(ErrorCode::invalid_argument, fmt::format("units = {} must be >= 1", units));
  }
  std::string describe() const override {
    return fmt::format("{} units{}", units_,
                       o_.activation == Act::linear ? "" : ", " + std::string(act_name(o_.activation)));
  }
  Tensor call(ModelContext& ctx, const std::vector<Tensor>& xs) override {
    const Tensor& x = xs[0];
    if (x.rank() < 2 || x.shape().back() < 0) {
      fail(ErrorCode::shape_mismatch,
           fmt::format("expects an input [batch, ..., features] with static features, got {}",
                       str(x.shape())));
    }
    const int64_t in = x.shape().back();
    if (!built_) {
      Fans fans{static_cast<double>(in), static_cast<double>(units_)};
      kernel_ = add_weight(ctx, "kernel", {in, units_}, o_.kernel_initializer, fans, true);
      if (o_.use_bias) bias_ = add_weight(ctx, "bias", {units_}, o_.bias_initializer, fans, true);
    } else if (kernel_.shape()[0] != in) {
      fail(ErrorCode::shape_mismatch, fmt::format("input has {} features, the layer was built for "
                                                  "{} (input {})", in, kernel_.shape()[0], str(x.shape())));
    }
    Tensor y = matmul(x, kernel_);
    if (o_.use_bias) y = add(y, bias_);
    return detail::apply_activation(y, o_.activation);
  }

 private:
  int64_t units_;
  DenseOptions o_;
  Tensor kernel_, bias_;
};

class Conv2DImpl : public LayerImpl {
 public:
  Conv2DImpl(int64_t filters, Size2 kernel, Conv2DOptions o)
      : LayerImpl("Conv2D", "conv2d", o.name), filters_(filters), kernel_size_(kernel),
        o_(std::move(o)) {
    if (filters < 1) fail(ErrorCode::invalid_argument, fmt::format("filters = {} must be >= 1", filters));
    check_size2(*this, kernel, "kernel_size");
    check_size2(*this, o_.strides, "strides");
    check_size2(*this, o_.dilation, "dilation");
    check_data_layout(*this, o_.layout);
    check_explicit_padding(*this, o_.explicit_padding);
    if (o_.groups < 1 || filters % o_.groups != 0) {
      fail(ErrorCode::invalid_argument,
           fmt::format("groups = {} must be >= 1 and divide filters = {}", o_.groups, filters));
    }
  }
  std::string describe() const override {
    return fmt::format("{} {}x{}/{}", filters_, kernel_size_.h, kernel_size_.w, o_.strides.h);
  }
  Tensor call(ModelContext& ctx, const std::vector<Tensor>& xs) override {
    const Tensor& x = xs[0];
    const int64_t cin = channels_of(*this, x, o_.layout);
    if (cin % o_.groups != 0) {
      fail(ErrorCode::shape_mismatch, fmt::format("input channels {} are not divisible by groups = "
                                                  "{} (input {})", cin, o_.groups, str(x.shape())));
    }
    const bool nhwc = o_.layout == Layout::nhwc;
    const int64_t kh = kernel_size_.h, kw = kernel_size_.w, cg = cin / o_.groups;
    Shape wshape = nhwc ? Shape{kh, kw, cg, filters_} : Shape{filters_, cg, kh, kw};
    if (!built_) {
      Fans fans{static_cast<double>(kh * kw * cg), static_cast<double>(kh * kw * filters_ / o_.groups)};
      kernel_ = add_weight(ctx, "kernel", wshape, o_.kernel_initializer, fans, true);
      if (o_.use_bias) bias_ = add_weight(ctx, "bias", {filters_}, o_.bias_initializer, fans, true);
    } else if (kernel_.shape() != wshape) {
      fail(ErrorCode::shape_mismatch, fmt::format("input {} has {} channels, the layer was built for "
                                                  "weights {}", str(x.shape()), cin, str(kernel_.shape())));
    }
    Conv2dDesc desc{.strides = {o_.strides.h, o_.strides.w},
                    .dilations = {o_.dilation.h, o_.dilation.w},
                    .padding = o_.padding,
                    .explicit_padding = o_.explicit_padding,
                    .groups = o_.groups,
                    .data_layout = o_.layout,
                    .weights_layout = nhwc ? Layout::hwio : Layout::oihw};
    Tensor y = conv2d(x, kernel_, desc);
    if (o_.use_bias) y = add_channel_bias(y, bias_, o_.layout);
    return detail::apply_activation(y, o_.activation);
  }

 private:
  int64_t filters_;
  Size2 kernel_size_;
  Conv2DOptions o_;
  Tensor kernel_, bias_;
};

class BatchNormImpl : public LayerImpl {
 public:
  explicit BatchNormImpl(BatchNormLayerOptions o)
      : LayerImpl("BatchNorm", "batch_norm", o.name), o_(std::move(o)) {
    if (!(o_.momentum >= 0 && o_.momentum <= 1)) {
      fail(ErrorCode::invalid_argument, fmt::format("momentum = {} must be in [0, 1]", o_.momentum));
    }
    if (!(o_.epsilon >= 0) || !std::isfinite(o_.epsilon)) {
      fail(ErrorCode::invalid_argument, fmt::format("epsilon = {} must be finite and >= 0", o_.epsilon));
    }
  }
  std::string describe() const override { return fmt::format("axis {}{}", o_.axis, o_.sync ? ", sync" : ""); }
  Tensor call(ModelContext& ctx, const std::vector<Tensor>& xs) override {
    const Tensor& x = xs[0];
    const int64_t rank = x.rank();
    if (rank < 2 || o_.axis < -rank || o_.axis >= rank) {
      fail(ErrorCode::shape_mismatch,
           fmt::format("axis {} does not fit the input {} (rank >= 2)", o_.axis, str(x.shape())));
    }
    const int64_t c = x.shape()[o_.axis < 0 ? o_.axis + rank : o_.axis];
    if (c < 0) fail(ErrorCode::shape_mismatch, "needs a static channel dim, got " + str(x.shape()));
    if (!built_) build(ctx, c);
    if (mean_.shape()[0] != c) {
      fail(ErrorCode::shape_mismatch, fmt::format("input {} has {} channels at axis {}, the layer was "
                                                  "built for {}", str(x.shape()), c, o_.axis, mean_.shape()[0]));
    }
    const BatchNormOptions bn{.axis = o_.axis, .momentum = o_.momentum, .epsilon = o_.epsilon};
    // Synchronized: built on the single communicator; compile binds the collectives to the
    // model's DataParallel communicator (model.cpp, bind_sync_batch_norm).
    if (o_.sync) return sync_batch_norm(x, gamma_, beta_, mean_, var_, ctx.is_training, Communicator(), bn);
    return batch_norm(x, gamma_, beta_, mean_, var_, ctx.is_training, bn);
  }

 private:
  void build(ModelContext& ctx, int64_t c) {
    Fans fans{static_cast<double>(c), static_cast<double>(c)};
    gamma_ = o_.scale ? add_weight(ctx, "gamma", {c}, Initializer::ones(), fans, true)
                      : ctx.graph.constant(TensorData::full({c}, ctx.dtype, 1.0));
    beta_ = o_.center ? add_weight(ctx, "beta", {c}, Initializer::zeros(), fans, true)
                      : ctx.graph.constant(TensorData::zeros({c}, ctx.dtype));
    mean_ = add_weight(ctx, "moving_mean", {c}, Initializer::zeros(), fans, false);
    var_ = add_weight(ctx, "moving_variance", {c}, Initializer::ones(), fans, false);
  }
  BatchNormLayerOptions o_;
  Tensor gamma_, beta_, mean_, var_;
};

class Pool2DImpl : public LayerImpl {
 public:
  Pool2DImpl(bool max, Size2 pool, Pool2DOptions o)
      : LayerImpl(max ? "MaxPool2D" : "AvgPool2D", max ? "max_pool2d" : "avg_pool2d", o.name),
        max_(max), pool_(pool), o_(std::move(o)) {
    check_size2(*this, pool, "pool_size");
    if (o_.strides) check_size2(*this, *o_.strides, "strides");
    check_data_layout(*this, o_.layout);
    check_explicit_padding(*this, o_.explicit_padding);
  }
  std::string describe() const override {
    Size2 s = o_.strides.value_or(pool_);
    return fmt::format("{}x{}/{}", pool_.h, pool_.w, s.h);
  }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    channels_of(*this, xs[0], o_.layout);
    Size2 s = o_.strides.value_or(pool_);
    Pool2dDesc desc{.kernel_size = {pool_.h, pool_.w},
                    .strides = {s.h, s.w},
                    .padding = o_.padding,
                    .explicit_padding = o_.explicit_padding,
                    .ceil_mode = o_.ceil_mode,
                    .count_include_pad = o_.count_include_pad,
                    .data_layout = o_.layout};
    return max_ ? max_pool2d(xs[0], desc) : avg_pool2d(xs[0], desc);
  }

 private:
  bool max_;
  Size2 pool_;
  Pool2DOptions o_;
};

class GlobalAvgPoolImpl : public LayerImpl {
 public:
  GlobalAvgPoolImpl(Layout layout, std::string name)
      : LayerImpl("GlobalAvgPool2D", "global_avg_pool2d", std::move(name)), layout_(layout) {
    check_data_layout(*this, layout);
  }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    channels_of(*this, xs[0], layout_);
    return global_avg_pool2d(xs[0], layout_);
  }

 private:
  Layout layout_;
};

}  // namespace

Dense::Dense(int64_t units, DenseOptions options)
    : Layer(std::make_shared<DenseImpl>(units, std::move(options))) {}
Conv2D::Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options)
    : Layer(std::make_shared<Conv2DImpl>(filters, kernel_size, std::move(options))) {}
BatchNorm::BatchNorm(BatchNormLayerOptions options)
    : Layer(std::make_shared<BatchNormImpl>(std::move(options))) {}
MaxPool2D::MaxPool2D(Size2 pool_size, Pool2DOptions options)
    : Layer(std::make_shared<Pool2DImpl>(true, pool_size, std::move(options))) {}
AvgPool2D::AvgPool2D(Size2 pool_size, Pool2DOptions options)
    : Layer(std::make_shared<Pool2DImpl>(false, pool_size, std::move(options))) {}
GlobalAvgPool2D::GlobalAvgPool2D(Layout layout, std::string name)
    : Layer(std::make_shared<GlobalAvgPoolImpl>(layout, std::move(name))) {}

}  // namespace tg::nn
