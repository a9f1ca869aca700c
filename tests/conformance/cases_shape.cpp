// Conformance cases of the shape / data-movement family: broadcast_to, reshape, transpose,
// slice, pad, concat, reverse, tile. Random inputs against the CPU (data movement is exact in
// every dtype), hand-computed values for the tricky index rules, and shapes that reach each
// device path (contiguous copies, vectorized rows, tiled transposes, odd sizes, rank 0, zero-size
// dims, 1/2/4/8-byte elements).
#include <utility>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::Shape;
using tg::Tensor;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

using Build = std::function<Tensor(Tensor)>;

OpCase one(std::string name, Shape shape, Build f, DType dtype = DType::f32,
           std::vector<double> values = {}, std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(shape), dtype, -50, 50, std::move(values)}};
  c.build = [f](tg::Graph&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{f(in[0])};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

std::vector<double> iota(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace

TG_CONFORMANCE_CASES(shape) {
  using tg::PadMode;
  // broadcast_to
  cases.push_back(one("broadcast_to_middle", {3, 1}, [](Tensor x) {
    return tg::broadcast_to(x, {2, 3, 5});
  }));
  cases.push_back(one("broadcast_to_rows", {1, 40}, [](Tensor x) {
    return tg::broadcast_to(x, {33, 40});
  }));
  cases.push_back(one("broadcast_to_scalar", {},
                      [](Tensor x) {
                        return tg::broadcast_to(x, {4, 3});
                      },
                      DType::f32, {2.5},
                      {2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5}));
  cases.push_back(one("broadcast_to_zero", {1, 3}, [](Tensor x) {
    return tg::broadcast_to(x, {0, 3});
  }));
  cases.push_back(one(
      "broadcast_to_i8", {5, 1, 7},
      [](Tensor x) {
        return tg::broadcast_to(x, {5, 9, 7});
      },
      DType::i8));
  cases.push_back(one(
      "broadcast_to_bool", {1, 6},
      [](Tensor x) {
        return tg::broadcast_to(x, {3, 6});
      },
      DType::bool_));
  // reshape
  cases.push_back(one("reshape_infer", {4, 6}, [](Tensor x) {
    return tg::reshape(x, {3, -1, 2});
  }));
  cases.push_back(one("reshape_then_transpose", {4, 6}, [](Tensor x) {
    return tg::transpose(tg::reshape(x, {2, 12}), {1, 0});
  }));
  // transpose
  cases.push_back(one("transpose_2d", {2, 3},
                      [](Tensor x) {
                        return tg::transpose(x, {1, 0});
                      },
                      DType::f32, {0, 1, 2, 3, 4, 5}, {0, 3, 1, 4, 2, 5}));
  cases.push_back(one("transpose_nchw_to_nhwc", {2, 5, 7, 9}, [](Tensor x) {
    return tg::transpose(x, {0, 2, 3, 1});
  }));
  cases.push_back(one("transpose_nhwc_to_nchw", {2, 7, 9, 5}, [](Tensor x) {
    return tg::transpose(x, {0, 3, 1, 2});
  }));
  // 2-byte elements: 64x64 tiles of element pairs (word loads and stores where aligned, single
  // elements at odd sizes and tile edges), both directions.
  cases.push_back(one("transpose_nchw_to_nhwc_bf16_odd_hw", {3, 70, 9, 11}, [](Tensor x) {
    return tg::transpose(x, {0, 2, 3, 1});
  }, DType::bf16));
  cases.push_back(one("transpose_nhwc_to_nchw_bf16_odd_hw", {3, 9, 11, 70}, [](Tensor x) {
    return tg::transpose(x, {0, 3, 1, 2});
  }, DType::bf16));
  cases.push_back(one("transpose_nchw_to_nhwc_f16_tile_edges", {2, 130, 8, 9}, [](Tensor x) {
    return tg::transpose(x, {0, 2, 3, 1});
  }, DType::f16));
  cases.push_back(one("transpose_nhwc_to_nchw_f16_tile_edges", {2, 8, 9, 130}, [](Tensor x) {
    return tg::transpose(x, {0, 3, 1, 2});
  }, DType::f16));
  cases.push_back(one("transpose_tiled_odd", {3, 45, 70}, [](Tensor x) {
    return tg::transpose(x, {0, 2, 1});
  }));
  cases.push_back(one(
      "transpose_tiled_i8", {33, 65},
      [](Tensor x) {
        return tg::transpose(x, {1, 0});
      },
      DType::i8));
  cases.push_back(one(
      "transpose_tiled_i64", {40, 3, 37},
      [](Tensor x) {
        return tg::transpose(x, {2, 1, 0});
      },
      DType::i64));
  cases.push_back(one(
      "transpose_5d", {2, 3, 1, 4, 5},
      [](Tensor x) {
        return tg::transpose(x, {4, 2, 0, 3, 1});
      },
      DType::i32));
  cases.push_back(one("transpose_zero", {0, 3, 4}, [](Tensor x) {
    return tg::transpose(x, {2, 0, 1});
  }));
  cases.push_back(one("transpose_rank0", {}, [](Tensor x) { return tg::transpose(x, {}); },
                      DType::f32, {7}, {7}));
  // slice
  cases.push_back(
      one("slice_basic", {10},
          [](Tensor x) { return tg::slice(x, {.begin = {2}, .end = {7}, .strides = {2}}); },
          DType::f32, iota(10), {2, 4, 6}));
  cases.push_back(one("slice_negative_stride", {10},
                      [](Tensor x) {
                        return tg::slice(x,
                                         {.begin = {-2}, .end = {tg::kSliceEnd}, .strides = {-3}});
                      },
                      DType::f32, iota(10), {8, 5, 2}));
  cases.push_back(one("slice_columns_vector", {9, 64}, [](Tensor x) {
    return tg::slice(x, {.begin = {8}, .end = {40}, .axes = {1}});
  }));
  cases.push_back(one("slice_3d_strided", {5, 7, 9}, [](Tensor x) {
    return tg::slice(x, {.begin = {1, -1, 0}, .end = {5, 0, 9}, .strides = {2, -2, 3}});
  }));
  cases.push_back(one("slice_empty", {4, 5}, [](Tensor x) {
    return tg::slice(x, {.begin = {3}, .end = {1}, .axes = {0}});
  }));
  cases.push_back(one(
      "slice_i32_rows", {6, 10},
      [](Tensor x) { return tg::slice(x, {.begin = {1}, .end = {9}, .axes = {1}}); }, DType::i32));
  // pad
  for (auto [name, mode] :
       {std::pair{"constant", PadMode::constant}, std::pair{"reflect", PadMode::reflect},
        std::pair{"symmetric", PadMode::symmetric}, std::pair{"edge", PadMode::edge},
        std::pair{"periodic", PadMode::periodic}}) {
    tg::PadDesc d{.before = {1, 7}, .after = {2, 8}, .mode = mode, .value = 1.5};
    cases.push_back(
        one(std::string("pad_") + name, {3, 3}, [d](Tensor x) { return tg::pad(x, d); }));
    tg::PadDesc d3{.before = {0, 2, 1}, .after = {1, 0, 3}, .mode = mode, .value = -2};
    cases.push_back(one(
        std::string("pad3d_") + name + "_i32", {2, 4, 5}, [d3](Tensor x) { return tg::pad(x, d3); },
        DType::i32));
  }
  cases.push_back(one(
      "pad_reflect_values", {3},
      [](Tensor x) { return tg::pad(x, {.before = {5}, .after = {4}, .mode = PadMode::reflect}); },
      DType::f32, {1, 2, 3}, {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}));
  cases.push_back(one("pad_symmetric_values", {3},
                      [](Tensor x) {
                        return tg::pad(x,
                                       {.before = {4}, .after = {2}, .mode = PadMode::symmetric});
                      },
                      DType::f32, {1, 2, 3}, {3, 3, 2, 1, 1, 2, 3, 3, 2}));
  cases.push_back(one("pad_constant_empty_dim", {0, 2},
                      [](Tensor x) {
                        return tg::pad(x, {.before = {1, 0}, .after = {1, 1}, .value = 4});
                      },
                      DType::f32, {}, {4, 4, 4, 4, 4, 4}));
  cases.push_back(one(
      "pad_bool", {2, 3},
      [](Tensor x) {
        return tg::pad(x, {.before = {1, 1}, .after = {0, 2}, .value = 1});
      },
      DType::bool_));
  cases.push_back(one("pad_rank0", {},
                      [](Tensor x) { return tg::pad(x, {.before = {}, .after = {}}); }, DType::f32,
                      {3}, {3}));
  // concat
  {
    OpCase c;
    c.name = "concat_axis1";
    c.inputs = {InputSpec{{3, 4, 5}}, InputSpec{{3, 0, 5}}, InputSpec{{3, 7, 5}},
                InputSpec{{3, 1, 5}}};
    c.build = [](tg::Graph&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{tg::concat({in[0], in[1], in[2], in[3]}, 1)};
    };
    cases.push_back(c);
    c.name = "concat_last_axis_odd";
    c.inputs = {InputSpec{{6, 3}}, InputSpec{{6, 1}}, InputSpec{{6, 8}}};
    c.build = [](tg::Graph&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{tg::concat({in[0], in[1], in[2]}, -1)};
    };
    cases.push_back(c);
    c.name = "concat_axis0_i8";
    c.inputs = {InputSpec{{2, 3}, DType::i8, -9, 9}, InputSpec{{1, 3}, DType::i8, -9, 9}};
    c.build = [](tg::Graph&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{tg::concat({in[0], in[1]}, 0)};
    };
    cases.push_back(c);
    c.name = "concat_values";
    c.inputs = {InputSpec{{2, 2}, DType::i64, 0, 1, {1, 2, 3, 4}},
                InputSpec{{2, 1}, DType::i64, 0, 1, {5, 6}}};
    c.build = [](tg::Graph&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{tg::concat({in[0], in[1]}, 1)};
    };
    c.expected = {{1, 2, 5, 3, 4, 6}};
    cases.push_back(c);
  }
  // reverse, tile
  cases.push_back(one("reverse_values", {2, 3}, [](Tensor x) { return tg::reverse(x, {1}); },
                      DType::f32, {0, 1, 2, 3, 4, 5}, {2, 1, 0, 5, 4, 3}));
  cases.push_back(one("reverse_3d", {4, 5, 6}, [](Tensor x) { return tg::reverse(x, {0, 2}); }));
  cases.push_back(
      one("reverse_u8", {37}, [](Tensor x) { return tg::reverse(x, {0}); }, DType::u8, {}, {}));
  cases.push_back(one("tile_values", {2}, [](Tensor x) { return tg::tile(x, {3}); }, DType::f32,
                      {1, 2}, {1, 2, 1, 2, 1, 2}));
  cases.push_back(one("tile_2d", {3, 5}, [](Tensor x) { return tg::tile(x, {2, 3}); }));
  cases.push_back(one(
      "tile_rows_vector", {4, 8},
      [](Tensor x) {
        return tg::tile(x, {3, 1});
      },
      DType::i64));
  cases.push_back(one("tile_zero", {3, 2}, [](Tensor x) { return tg::tile(x, {0, 2}); }));
}
