// Scatter-based image ONNX ops: MaxUnpool (values to the flat positions MaxPool's Indices name)
// and Col2Im (columns of sliding blocks summed back into an image, the inverse of im2col).
#include <numeric>

#include "frontends/onnx/converters.h"

namespace tg::onnx {

std::vector<Tensor> convert_max_unpool(NodeContext& c) {
  Tensor x = c.input(0), idx = c.input(1);
  int64_t nd = x.rank() - 2;
  if (nd < 1) c.fail(ErrorCode::invalid_argument, "input must have rank >= 3");
  c.require_attr("kernel_shape");
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  std::vector<int64_t> s = c.attr_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> p = c.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (static_cast<int64_t>(k.size()) != nd || static_cast<int64_t>(s.size()) != nd ||
      static_cast<int64_t>(p.size()) != 2 * nd) {
    c.fail(ErrorCode::invalid_argument, "kernel_shape, strides and pads do not fit {} spatial dims", nd);
  }
  // Values go to the shape the pooling window implies; output_shape pads it at the end.
  std::vector<int64_t> out = {c.static_dim(0, 0), c.static_dim(0, 1)};
  for (int64_t i = 0; i < nd; ++i) {
    out.push_back((c.static_dim(0, 2 + i) - 1) * s[i] + k[i] - p[i] - p[nd + i]);
  }
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  // Indices are flat positions in the whole output (as MaxPool's Indices output gives them).
  Tensor zeros = fill(c.graph(), {total}, 0.0, x.dtype());
  Tensor y = scatter_nd(zeros, reshape(cast_to(idx, DType::i64), {-1, 1}), reshape(x, {-1}));
  y = reshape(y, out);
  if (!c.has_input(2)) return {y};
  std::vector<int64_t> want = c.ints(2);
  if (want.size() != out.size()) c.fail(ErrorCode::invalid_argument, "output_shape must have {} entries", out.size());
  PadDesc pd{.before = std::vector<int64_t>(out.size(), 0), .after = std::vector<int64_t>(out.size(), 0)};
  for (size_t i = 0; i < out.size(); ++i) {
    if (want[i] < out[i]) c.fail(ErrorCode::invalid_argument, "output_shape {} is smaller than {}", str(want), str(out));
    pd.after[i] = want[i] - out[i];
  }
  return {pad(y, pd)};
}

std::vector<Tensor> convert_col2im(NodeContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> image = c.ints(1), block = c.ints(2);
  auto nd = static_cast<int64_t>(image.size());
  if (x.rank() != 3 || static_cast<int64_t>(block.size()) != nd) {
    c.fail(ErrorCode::shape_mismatch, "input {} must be [N, C * prod(block), L] with one block dim "
           "per image dim", str(x.shape()));
  }
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> str_ = c.attr_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  int64_t kprod = std::accumulate(block.begin(), block.end(), int64_t{1}, std::multiplies<>());
  int64_t n = c.static_dim(0, 0), ch = c.static_dim(0, 1) / kprod, l = c.static_dim(0, 2);
  // The padded canvas and the number of block positions per dim.
  std::vector<int64_t> canvas(static_cast<size_t>(nd)), count(static_cast<size_t>(nd));
  int64_t blocks = 1, canvas_size = 1;
  for (int64_t i = 0; i < nd; ++i) {
    canvas[i] = image[i] + pads[i] + pads[nd + i];
    count[i] = (canvas[i] - (dil[i] * (block[i] - 1) + 1)) / str_[i] + 1;
    blocks *= count[i];
    canvas_size *= canvas[i];
  }
  if (blocks != l || ch * kprod != x.shape()[1]) {
    c.fail(ErrorCode::shape_mismatch, "input {} does not fit image {} with blocks {}",
           str(x.shape()), str(image), str(block));
  }
  // Flat canvas position of (kernel offset k, block position b), k and b row-major.
  std::vector<int64_t> pos(static_cast<size_t>(kprod * l));
  for (int64_t k = 0; k < kprod; ++k) {
    for (int64_t b = 0; b < l; ++b) {
      int64_t kr = k, br = b, flat = 0;
      std::vector<int64_t> coord(static_cast<size_t>(nd));
      for (int64_t i = nd - 1; i >= 0; --i) {
        coord[i] = (br % count[i]) * str_[i] + (kr % block[i]) * dil[i];
        br /= count[i];
        kr /= block[i];
      }
      for (int64_t i = 0; i < nd; ++i) flat = flat * canvas[i] + coord[i];
      pos[k * l + b] = flat;
    }
  }
  Tensor index = broadcast_to(
      c.constant(TensorData::from_vector<int64_t>(pos, {1, 1, kprod * l})), {n, ch, kprod * l});
  Tensor zeros = fill(c.graph(), {n, ch, canvas_size}, 0.0, x.dtype());
  Tensor y = scatter_elements(zeros, index, reshape(x, {n, ch, kprod * l}),
                              {.axis = 2, .reduction = ScatterReduction::add});
  Shape full = {n, ch};
  full.insert(full.end(), canvas.begin(), canvas.end());
  y = reshape(y, full);
  SliceDesc crop;
  for (int64_t i = 0; i < nd; ++i) {
    crop.axes.push_back(2 + i);
    crop.begin.push_back(pads[i]);
    crop.end.push_back(pads[i] + image[i]);
  }
  return {slice(y, crop)};
}

}  // namespace tg::onnx
