// tg_stencil_emu: writes the generated tiled stencil kernels (backends/cuda/stencil_codegen.h) of a
// set of self-test cases as host programs, each checked under shim.h against a plain evaluation
// of the stencil op's semantics (stencil_harness.h), bit for bit.
//   usage: tg_stencil_emu OUT_DIR   (then tools/kernel_emu/run.sh OUT_DIR)
// The cases use the backend's own planner (tile shape, register blocking along y and z) and
// launch geometry, with fewer blocks than tiles so the grid-stride loop over tiles runs too; they
// cover 1-D to 4-D windows, strides, dilations, every boundary mode and reduction, and f32, f64,
// f16, bf16, i8 and i32; the 3-D windows march along z (several runs of z outputs a plane) or keep
// tiles of 4 z outputs ("nomarch"), and min/max folds without NaN checks see NaNs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/stencil_codegen.h"
#include "backends/fused_stepwise.h"
#include "ops/registry.h"

namespace {

using tg::DType;
using tg::cuda::TiledStencilSizes;
using tg::cuda::TiledStencilSpec;

struct Case {
  std::string name;
  DType dtype;
  int reduction, mode, k;
  std::vector<int> win, stride, dilation;  // k entries
  int64_t batch;
  std::vector<int64_t> in, before;  // k entries; outputs: explicit padding `before` on both sides
  bool special = false;             // zero weights, zeros of both signs, infs and NaNs (stencil_harness.h)
};

std::string list(const std::array<int64_t, 4>& v) {
  return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "," + std::to_string(v[3]);
}

/// The opening of a generated harness: kernel `i`'s source and `harness` included, StencilArgs
/// filled with the geometry `z` and the launch `l` (the plain and the fused cases share it).
std::string harness_head(size_t i, const char* harness, const TiledStencilSizes& z,
                         const tg::cuda::TiledStencilLaunch& l) {
  std::ostringstream h;
  h << "#include \"k" << i << ".cu\"\n#include \"" << TG_SOURCE_DIR << "/tools/kernel_emu/" << harness << "\"\n"
    << "int main() {\n  tg_dev::StencilArgs a{};\n  a.batch = " << z.batch << ";\n"
    << "  const long long in[4] = {" << list(z.in) << "}, out[4] = {" << list(z.out) << "}, before[4] = {"
    << list(z.before) << "};\n"
    << "  for (int i = 0; i < 4; ++i) { a.in[i] = in[i]; a.out[i] = out[i]; a.before[i] = before[i]; }\n"
    << "  a.tiles[0] = " << l.tiles[0] << "; a.tiles[1] = " << l.tiles[1] << "; a.tiles[2] = " << l.tiles[2]
    << "; a.total_tiles = " << l.total_tiles << "; a.zc = " << l.zc << ";\n";
  return h.str();
}

/// ", column march WxH (4 x RY a thread), ring of N planes[, memory options F]" when s takes the column march.
std::string column_text(const TiledStencilSpec& s) {
  if (!s.column) return "";
  return ", column march " + std::to_string(4 * s.col_bx) + "x" + std::to_string(s.col_by * s.col_ry) + " (4 x " +
         std::to_string(s.col_ry) + " a thread), ring of " +
         std::to_string(s.col_inflight + ((s.col_flags & 16) != 0 ? 3 : 4)) + " planes" +
         (s.col_flags != 0 ? ", memory options " + std::to_string(s.col_flags) : "");
}

/// A fused_stencil node (ir::FusedStencilAttrs) and its inputs: run on the CPU for the expected
/// result, its generated kernel emulated (fused_stencil_harness.h).
struct FusedCase {
  std::string name;
  tg::ir::FusedStencilAttrs attrs;
  std::vector<tg::TensorData> inputs;
};

void write(const std::string& path, const tg::TensorData& t) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(t.raw_data()),
                                              static_cast<std::streamsize>(t.nbytes()));
}

tg::ir::FusedStep step(tg::ir::OpKind k, std::vector<int> args, DType d) { return {k, std::move(args), d}; }

/// Random values in (-2, 2) of dtype d (f32 through a cast); zeros of random sign where the last
/// three coordinates are all below `zero_block`; +inf at the positions in `inf`.
tg::TensorData values(const tg::Shape& shape, DType d, uint64_t seed, int64_t zero_block = 0,
                      std::vector<int64_t> inf = {}) {
  tg::TensorData f = tg::TensorData::random_uniform(shape, -2.f, 2.f, seed);
  float* v = f.data<float>();
  std::mt19937 rng(static_cast<unsigned>(seed));
  const size_t r = shape.size();
  for (int64_t i = 0; i < f.num_elements() && zero_block > 0 && r >= 3; ++i) {
    const int64_t x = i % shape[r - 1], y = i / shape[r - 1] % shape[r - 2],
                  z = i / (shape[r - 1] * shape[r - 2]) % shape[r - 3];
    if (x < zero_block && y < zero_block && z < zero_block) v[i] = (rng() & 1) ? -0.f : 0.f;
  }
  for (int64_t i : inf) v[i] = INFINITY;
  if (d == DType::f32) return f;
  std::vector<tg::TensorData> in{f};
  std::vector<tg::TensorData> out{tg::TensorData(shape, d, tg::Device::cpu())};
  tg::ir::Node n;
  n.kind = tg::ir::OpKind::cast;
  n.attrs = tg::ir::CastAttrs{d};
  n.outputs = {tg::TensorType{shape, d}};
  tg::backends::KernelContext ctx{n, in, out, tg::Device::cpu()};
  tg::cpu::kernel_table().get(n.kind)(ctx);
  return out[0];
}

std::vector<FusedCase> fused_cases() {
  using tg::ir::OpKind;
  std::vector<FusedCase> cases;
  {
    // relu(laplacian(x * a + b)), reflect, constant weights (zero corners skipped); an inf in x.
    FusedCase c{"fused_relu_laplacian_reflect_f32", {}, {}};
    auto& a = c.attrs;
    a.stencil.strides = {1, 1}, a.stencil.dilations = {1, 1}, a.stencil.explicit_padding = {1, 1, 1, 1};
    a.stencil.boundary_mode = tg::BoundaryMode::reflect;
    a.window = {3, 3};
    a.weights = {0, 1, 0, 1, -4, 1, 0, 1, 0};
    a.num_prologue_inputs = 3;
    a.prologue.shape = {2, 70, 45};
    a.prologue.steps = {step(OpKind::mul, {0, 1}, DType::f32), step(OpKind::add, {3, 2}, DType::f32)};
    a.prologue.outputs = {4};
    a.epilogue.shape = {2, 70, 45};
    a.epilogue.steps = {step(OpKind::maximum, {0, 1}, DType::f32)};
    a.epilogue.outputs = {2};
    c.inputs = {values({2, 70, 45}, DType::f32, 1, 0, {3000}), tg::TensorData::from_vector<float>({1.5f}, {}),
                tg::TensorData::from_vector<float>({-0.25f}, {}), tg::TensorData::from_vector<float>({0.f}, {})};
    cases.push_back(std::move(c));
  }
  {
    // 7-point stencil as a 3x3x3 window (20 zero taps skipped), zero boundary, times a full-size
    // input: zeros of both signs (outputs whose 7 taps read -0 refold every tap), infs at corners.
    FusedCase c{"fused_7point_3d_f32", {}, {}};
    auto& a = c.attrs;
    a.stencil.strides = {1, 1, 1}, a.stencil.dilations = {1, 1, 1};
    a.stencil.explicit_padding = {1, 1, 1, 1, 1, 1};
    a.window = {3, 3, 3};
    a.weights.assign(27, 0.0);
    for (int n : {4, 10, 12, 13, 14, 16, 22}) a.weights[static_cast<size_t>(n)] = n == 13 ? -6.0 : 0.5;
    a.num_prologue_inputs = 1;
    a.prologue.shape = {10, 66, 35};
    a.prologue.outputs = {0};
    a.epilogue.shape = {10, 66, 35};
    a.epilogue.steps = {step(OpKind::mul, {0, 1}, DType::f32)};
    a.epilogue.outputs = {2};
    c.inputs = {values({10, 66, 35}, DType::f32, 2, 10, {35 * 66 * 5 + 35 * 20 + 17}),
                values({10, 66, 35}, DType::f32, 3)};
    cases.push_back(std::move(c));
  }
  {
    // The same without a prologue on rows of whole 16-byte copies (the cp.async ring's vector
    // copies; a non-finite value found in the copies of a plane refolds the tile).
    FusedCase c = cases.back();
    c.name = "fused_7point_3d_f32_ring16";
    c.attrs.prologue.shape = c.attrs.epilogue.shape = {9, 70, 36};
    c.inputs = {values({9, 70, 36}, DType::f32, 12, 10, {36 * 70 * 4 + 36 * 33 + 35, 36 * 70 * 8}),
                values({9, 70, 36}, DType::f32, 13)};
    cases.push_back(std::move(c));
  }
  {
    // The column march with constant weights (the star's 20 zero taps skipped), clamped borders, an
    // epilogue (stores element by element): infs (in the second y tile) and zeros of both signs (a
    // block of them in the first) refold.
    FusedCase c = cases.back();
    c.name = "fused_7point_3d_f32_column";
    c.attrs.stencil.boundary_mode = tg::BoundaryMode::clamp_to_edge;
    c.attrs.prologue.shape = c.attrs.epilogue.shape = {9, 19, 68};
    c.inputs = {values({9, 19, 68}, DType::f32, 14, 10, {68 * 19 * 4 + 68 * 18 + 35, 68 * 19 * 8 + 68 * 17 + 3}),
                values({9, 19, 68}, DType::f32, 15)};
    cases.push_back(std::move(c));
  }
  {
    // The same with the outputs stored one plane late (no early checks) in 128 x 8 tiles (4 x 2 a
    // thread), the default before session 23.
    FusedCase c = cases.back();
    c.name = "fused_7point_3d_f32_column_late";
    cases.push_back(std::move(c));
  }
  {
    // argmax over cast(x) * s in f16 (run-time weights), the index cast to f32 plus a full-size
    // f32 input: X (f32) differs from T (f16), O (f32) from Y (int).
    FusedCase c{"fused_argmax_f16_cast_epilogue", {}, {}};
    auto& a = c.attrs;
    a.stencil.reduction = tg::StencilReduction::argmax;
    a.stencil.strides = {1, 2}, a.stencil.dilations = {2, 1}, a.stencil.explicit_padding = {2, 2, 1, 1};
    a.stencil.boundary_mode = tg::BoundaryMode::constant;
    a.stencil.padding_constant = 0.5;
    a.window = {3, 3};
    a.num_prologue_inputs = 2;
    a.prologue.shape = {3, 40, 50};
    a.prologue.steps = {step(OpKind::cast, {0}, DType::f16), step(OpKind::mul, {2, 1}, DType::f16)};
    a.prologue.outputs = {3};
    a.epilogue.shape = {3, 40, 25};
    a.epilogue.steps = {step(OpKind::cast, {0}, DType::f32), step(OpKind::add, {2, 1}, DType::f32)};
    a.epilogue.outputs = {3};
    c.inputs = {values({3, 40, 50}, DType::f32, 4), values({}, DType::f16, 5), values({3, 3}, DType::f16, 6),
                values({3, 40, 25}, DType::f32, 7)};
    cases.push_back(std::move(c));
  }
  return cases;
}

/// The cp.async ring of `stages` planes for a case the planner gives the register path (tiles of
/// several z outputs; TG_STENCIL_TILE="...,stages,2" on a GPU): 16-byte copies where rows allow.
void force_ring(TiledStencilSpec& s, const TiledStencilSizes& z, int stages) {
  s.stages = stages;
  s.vector = z.in[3] % static_cast<int64_t>(16 / tg::dtype_size(s.dtype)) == 0;
}

/// The column march's early checks (TiledStencilSpec::col_flags 16, the default) for cases named
/// "_early", in 128 x 16 tiles for "_ry4" (4 x 4 a thread, the default) and "_by8" (4 x 2, 256
/// threads), 2 planes in flight in 128 x 8 tiles for "_d2".
void early_column(const std::string& name, TiledStencilSpec& s) {
  if (name.find("_early") == std::string::npos) return;
  s.col_flags |= 16;
  if (name.find("_ry4") != std::string::npos) s.col_by = 4, s.col_ry = 4;
  if (name.find("_by8") != std::string::npos) s.col_by = 8, s.col_ry = 2;
  if (name.find("_d2") != std::string::npos) s.col_inflight = 2, s.col_ry = 2;
}

/// Writes case i's kernel, data and harness into dir; false when the planner refused it.
bool write_fused(const std::string& dir, size_t i, const FusedCase& c) {
  tg::ir::Node n;
  n.kind = tg::ir::OpKind::fused_stencil;
  n.attrs = c.attrs;
  std::vector<tg::TensorType> types;
  for (const tg::TensorData& t : c.inputs) types.push_back(t.type());
  n.outputs = tg::ops::infer_types(n, types);
  std::vector<tg::TensorData> out{tg::TensorData(n.outputs[0].shape, n.outputs[0].dtype, tg::Device::cpu())};
  tg::backends::KernelContext ctx{n, c.inputs, out, tg::Device::cpu()};
  tg::backends::run_fused_stencil_stepwise(ctx, tg::cpu::kernel_table());
  TiledStencilSpec s;
  TiledStencilSizes z;
  bool empty = false;
  if (!tg::cuda::plan_fused_stencil(c.attrs, types, n.outputs[0], "fused_stencil", s, z, empty) || empty) {
    return false;
  }
  if (c.name.find("ring") != std::string::npos) force_ring(s, z, 4);
  const bool column = c.name.find("_column") != std::string::npos;
  if (!column) s.column = false;  // the other cases keep the tiles they were written for
  if (column && !s.column) return false;
  if (s.march || s.column) s.zchunk = 4;  // several runs of z outputs a plane, the last one shorter
  if (c.name.find("_late") != std::string::npos) s.col_flags = 0, s.col_ry = 2, s.col_min_blocks = 5;
  const tg::cuda::TiledStencilLaunch l = tg::cuda::tiled_stencil_launch(s, z, 132);
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(l.total_tiles, 3));
  const std::string id = std::to_string(i);
  std::ofstream(dir + "/k" + id + ".cu") << tg::cuda::tiled_stencil_source(s);
  for (size_t m = 0; m < c.inputs.size(); ++m) write(dir + "/d" + id + "_" + std::to_string(m) + ".bin", c.inputs[m]);
  write(dir + "/e" + id + ".bin", out[0]);
  const int w_input = c.attrs.weights.empty() ? c.attrs.num_prologue_inputs : -1;
  std::ofstream h(dir + "/h" + id + ".cpp");
  h << harness_head(i, "fused_stencil_harness.h", z, l)
    << "  a.boundary = " << static_cast<long long>(z.boundary_bits) << "LL;\n"
    << "  std::printf(\"" << c.name << ": tile " << s.bx << "x" << s.by << ", ry " << s.ry << ", rz " << s.rz
    << ", stages " << s.stages << (s.vector ? " x16B" : "") << (s.march ? ", march " : "")
    << (s.march ? std::to_string(l.zc) : "") << column_text(s) << ", " << l.total_tiles << " tiles on "
    << blocks << " blocks\\n\");\n"
    << "  return tg_emu_fused::run<tg_st_cfg>(a, " << blocks << ", " << l.threads << ", \"" << c.name << "\", \""
    << dir << "/d" << id << "\", " << c.inputs.size() << ", " << w_input << ", \"" << dir << "/e" << id
    << ".bin\") != 0;\n}\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tg_stencil_emu OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  // sum 0, product 1, min 2, max 3, argmin 4, argmax 5; zero 0, constant 1, reflect 2,
  // symmetric 3, clamp 4, periodic 5.
  const std::vector<Case> cases = {
      {"laplacian_reflect_f32", DType::f32, 0, 2, 2, {3, 3}, {1, 1}, {1, 1}, 2, {70, 45}, {1, 1}},
      // rows of whole 16-byte copies: the cp.async ring's vector copies (column shift 3, then 2)
      // ... with zero weights, signed zeros and infs (run-time zero-tap skipping and its refolds)
      {"laplacian_reflect_f32_ring16_skip", DType::f32, 0, 2, 2, {3, 3}, {1, 1}, {1, 1}, 2, {140, 72}, {1, 1}, true},
      {"z3_sum_periodic_f32_ring16_skip", DType::f32, 0, 5, 3, {3, 3, 5}, {1, 1, 1}, {1, 1, 1}, 1, {12, 40, 68},
       {1, 1, 2}, true},
      {"z3_sum_zero_f64_ring_skip", DType::f64, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {10, 30, 35}, {1, 1, 1},
       true},
      // NaNs among the values: min/max folds without NaN checks refold (unit weights: max pooling)
      {"max_clamp_f64_ring16", DType::f64, 3, 4, 2, {3, 3}, {1, 1}, {1, 1}, 1, {150, 66}, {1, 1}, true},
      {"maxpool_constant_f32_unit", DType::f32, 3, 1, 2, {3, 3}, {1, 1}, {1, 1}, 2, {140, 72}, {1, 1}, true},
      {"z3_max_clamp_f32_march_unit", DType::f32, 3, 4, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {12, 40, 36},
       {1, 1, 1}, true},
      // min/max with unit weights fold rows first (st_fold_plane): strided and dilated rows (no
      // shared pairs), integers, and a 3-D window in tiles of 4 z outputs (first plane of each)
      {"min_symmetric_f32_unit_strided", DType::f32, 2, 3, 2, {3, 3}, {2, 1}, {1, 1}, 1, {150, 40}, {1, 1}, true},
      {"min_reflect_i32_unit_dilated", DType::i32, 2, 2, 2, {3, 2}, {1, 1}, {2, 1}, 2, {80, 44}, {2, 0}},
      {"z3_max_zero_f32_unit_nomarch", DType::f32, 3, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {14, 40, 36},
       {1, 1, 1}, true},
      {"z3_sum_zero_f32_blocked", DType::f32, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {18, 66, 35}, {1, 1, 1}},
      // the plan of the 512^3 7-point row with run-time weights: a march of 16-byte copies placed
      // once a tile (border rows and columns, constant boundary planes), every tap folded
      {"z3_sum_constant_f32_march16", DType::f32, 0, 1, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, {11, 40, 76},
       {1, 1, 1}},
      // marching along z is the plan for these 3-D windows; the tiles of 4 z outputs stay covered
      {"z3_sum_zero_f32_blocked_nomarch", DType::f32, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {18, 66, 35},
       {1, 1, 1}},
      {"z3_argmax_reflect_f32_march_strided", DType::f32, 5, 2, 3, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, 1, {11, 40, 36},
       {1, 1, 2}},
      {"z4_min_clamp_f64_march", DType::f64, 2, 4, 3, {4, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, {9, 20, 24}, {2, 1, 1}},
      {"z3_max_periodic_f64_strided", DType::f64, 3, 5, 3, {2, 3, 2}, {2, 1, 3}, {2, 1, 2}, 1, {40, 70, 50}, {1, 2, 1}},
      {"d4_argmin_symmetric_bf16", DType::bf16, 4, 3, 4, {2, 2, 1, 3}, {1, 1, 1, 1}, {1, 1, 1, 2}, 2, {3, 17, 9, 12},
       {0, 1, 0, 2}},
      {"k1_argmax_constant_i32", DType::i32, 5, 1, 1, {5}, {2}, {3}, 3, {600}, {4}},
      {"lrn_window_clamp_f16", DType::f16, 1, 4, 3, {5, 1, 1}, {1, 1, 1}, {1, 1, 1}, 2, {20, 6, 40}, {2, 0, 0}},
      {"min_reflect_i8_dilated", DType::i8, 2, 2, 2, {3, 2}, {1, 2}, {3, 1}, 1, {80, 70}, {2, 0}},
      // the column march (3x3x3 sums of f32, device/stencil_column.cuh): run-time weights of the
      // 7-point star (taps left out: infs and NaNs refold the block's outputs, zero results refold
      // at once) and of any other pattern (every tap), partial tiles in x and y, runs of 5 z outputs
      // (the last shorter), batches, boundary copies element by element or filled
      {"z3_sum_zero_f32_column_star", DType::f32, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, {9, 20, 72}, {1, 1, 1},
       true},
      {"z3_sum_constant_f32_column_star", DType::f32, 0, 1, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {7, 17, 68},
       {1, 1, 1}, true},
      {"z3_sum_reflect_f32_column", DType::f32, 0, 2, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {8, 18, 72}, {1, 1, 1},
       true},
      {"z3_sum_periodic_f32_column_star", DType::f32, 0, 5, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {6, 16, 64},
       {1, 1, 1}},
      // ... with every hint (TiledStencilSpec::col_flags 15: streaming stores, L2 hints, x
      // neighbours through warp shuffles) and the outputs stored one plane late (no early checks),
      // in 128 x 8 tiles (a warp a row of threads) and in 64 x 16 tiles (a warp two rows of
      // threads: lane 16 starts a row)
      {"z3_sum_zero_f32_column_star_colflags", DType::f32, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, {9, 20, 72},
       {1, 1, 1}, true},
      {"z3_sum_reflect_f32_column_colflags_bx16", DType::f32, 0, 2, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1,
       {8, 18, 72}, {1, 1, 1}, true},
      {"z3_sum_clamp_f32_column_star_colflags_bx16", DType::f32, 0, 4, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1,
       {7, 35, 68}, {1, 1, 1}, true},
      // ... with the early checks (col_flags 16, the default: a plane's checks before its barrier,
      // outputs refolded and stored at once, a ring of D + 3 planes): 128 x 16 tiles of 4 x 4 a
      // thread (the default), of 4 x 2 (256 threads), and every option in 128 x 8 tiles with 2
      // planes in flight
      {"z3_sum_zero_f32_column_star_early_ry4", DType::f32, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2,
       {9, 40, 72}, {1, 1, 1}, true},
      {"z3_sum_reflect_f32_column_early_by8", DType::f32, 0, 2, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1,
       {8, 35, 72}, {1, 1, 1}, true},
      {"z3_sum_clamp_f32_column_star_colflags_early_d2", DType::f32, 0, 4, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1,
       {7, 20, 68}, {1, 1, 1}, true},
  };
  int written = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    TiledStencilSpec s;
    s.dtype = c.dtype;
    s.reduction = c.reduction;
    s.mode = c.mode;
    s.unit_weights = c.name.find("_unit") != std::string::npos;  // no weights operand (max pooling)
    TiledStencilSizes z;
    z.batch = c.batch;
    for (int d = 0; d < c.k; ++d) {
      const size_t j = static_cast<size_t>(4 - c.k + d), e = static_cast<size_t>(d);
      s.win[j] = c.win[e];
      s.stride[j] = c.stride[e];
      s.dilation[j] = c.dilation[e];
      z.in[j] = c.in[e];
      z.before[j] = c.before[e];
      const int64_t extent = static_cast<int64_t>(c.win[e] - 1) * c.dilation[e] + 1;
      z.out[j] = (c.in[e] + 2 * c.before[e] - extent) / c.stride[e] + 1;
    }
    const bool nomarch = c.name.find("nomarch") != std::string::npos;
    if (nomarch) setenv("TG_STENCIL_TILE", ",,,,,,,1", 1);  // marching off (TG_STENCIL_TILE's march field)
    const bool planned = tg::cuda::plan_tiled_stencil(s, c.k, z);
    if (nomarch) unsetenv("TG_STENCIL_TILE");
    const bool marching = c.name.find("_march") != std::string::npos;
    const bool column = c.name.find("_column") != std::string::npos;
    if (!column) s.column = false;  // the other cases keep the tiles they were written for
    if (!planned || (nomarch && s.march) || (marching && !s.march) || (column && !s.column)) {
      std::fprintf(stderr, "%s: the planner refused the case (or marched against the case's name)\n", c.name.c_str());
      return 1;
    }
    if (s.march || s.column) s.zchunk = 5;  // several runs of z outputs a plane, the last one shorter
    // every hint, outputs stored one plane late (no early checks), 128 x 8 tiles
    if (c.name.find("_colflags") != std::string::npos) s.col_flags = 15, s.col_ry = 2;
    if (c.name.find("_bx16") != std::string::npos) s.col_bx = 16, s.col_by = 8;
    early_column(c.name, s);
    // run-time zero-tap skipping (TG_STENCIL_TILE's skip field)
    if (c.special && c.reduction == 0 && !column) s.zero_skip = true;
    if (c.name.find("ring") != std::string::npos && s.stages == 1) force_ring(s, z, 4);
    const tg::cuda::TiledStencilLaunch l = tg::cuda::tiled_stencil_launch(s, z, 132);
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(l.total_tiles, 3));
    std::ofstream(dir + "/k" + std::to_string(i) + ".cu") << tg::cuda::tiled_stencil_source(s);
    const bool f16 = c.dtype == DType::f16 || c.dtype == DType::bf16;
    const char* ctype = f16 ? "float" : c.dtype == DType::f64 ? "double" : c.dtype == DType::f32 ? "float"
                                    : c.dtype == DType::i8   ? "signed char" : "int";
    std::ofstream h(dir + "/h" + std::to_string(i) + ".cpp");
    h << harness_head(i, "stencil_harness.h", z, l)
      << "  const " << ctype << " b = (" << ctype << ")1.5;\n  std::memcpy(&a.boundary, &b, sizeof b);\n"
      << "  std::printf(\"" << c.name << ": tile " << s.bx << "x" << s.by << ", ry " << s.ry << ", rz " << s.rz
      << ", stages " << s.stages << (s.vector ? " x16B" : "") << (s.zero_skip ? ", zero skip" : "")
      << (s.march ? ", march " : "") << (s.march ? std::to_string(l.zc) : "") << column_text(s) << ", "
      << l.total_tiles << " tiles on " << blocks << " blocks\\n\");\n"
      << "  return tg_emu_stencil::run<tg_st_cfg>(a, " << blocks << ", " << l.threads << ", \"" << c.name << "\", "
      << i + 1 << ", " << (c.special ? "true" : "false") << ", "
      << (c.name.find("_star") != std::string::npos ? "true" : "false") << ") != 0;\n}\n";
    ++written;
  }
  const std::vector<FusedCase> fused = fused_cases();
  for (size_t i = 0; i < fused.size(); ++i) {
    if (!write_fused(dir, cases.size() + i, fused[i])) {
      std::fprintf(stderr, "%s: the planner refused the case\n", fused[i].name.c_str());
      return 1;
    }
    ++written;
  }
  std::printf("%d harnesses written to %s\n", written, dir.c_str());
  return 0;
}
