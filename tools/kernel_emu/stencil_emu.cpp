// tg_stencil_emu: writes the generated tiled stencil kernels (backends/cuda/stencil_codegen.h) of a
// set of self-test cases as host programs, each checked under shim.h against a plain evaluation
// of the stencil op's semantics (stencil_harness.h), bit for bit.
//   usage: tg_stencil_emu OUT_DIR   (then tools/kernel_emu/run.sh OUT_DIR)
// The cases use the backend's own planner (tile shape, register blocking along y and z) and
// launch geometry, with fewer blocks than tiles so the grid-stride loop over tiles runs too; they
// cover 1-D to 4-D windows, strides, dilations, every boundary mode and reduction, and f32, f64,
// f16, bf16, i8 and i32.
#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cuda/stencil_codegen.h"

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
};

std::string list(const std::array<int64_t, 4>& v) {
  return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "," + std::to_string(v[3]);
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
      {"z3_sum_zero_f32_blocked", DType::f32, 0, 0, 3, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, {18, 66, 35}, {1, 1, 1}},
      {"z3_max_periodic_f64_strided", DType::f64, 3, 5, 3, {2, 3, 2}, {2, 1, 3}, {2, 1, 2}, 1, {40, 70, 50}, {1, 2, 1}},
      {"d4_argmin_symmetric_bf16", DType::bf16, 4, 3, 4, {2, 2, 1, 3}, {1, 1, 1, 1}, {1, 1, 1, 2}, 2, {3, 17, 9, 12},
       {0, 1, 0, 2}},
      {"k1_argmax_constant_i32", DType::i32, 5, 1, 1, {5}, {2}, {3}, 3, {600}, {4}},
      {"lrn_window_clamp_f16", DType::f16, 1, 4, 3, {5, 1, 1}, {1, 1, 1}, {1, 1, 1}, 2, {20, 6, 40}, {2, 0, 0}},
      {"min_reflect_i8_dilated", DType::i8, 2, 2, 2, {3, 2}, {1, 2}, {3, 1}, 1, {80, 70}, {2, 0}},
  };
  int written = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    TiledStencilSpec s;
    s.dtype = c.dtype;
    s.reduction = c.reduction;
    s.mode = c.mode;
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
    if (!tg::cuda::plan_tiled_stencil(s, c.k, z)) {
      std::fprintf(stderr, "%s: the planner refused the case\n", c.name.c_str());
      return 1;
    }
    const tg::cuda::TiledStencilLaunch l = tg::cuda::tiled_stencil_launch(s, z, 132);
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(l.total_tiles, 3));
    std::ofstream(dir + "/k" + std::to_string(i) + ".cu") << tg::cuda::tiled_stencil_source(s);
    const bool f16 = c.dtype == DType::f16 || c.dtype == DType::bf16;
    const char* ctype = f16 ? "float" : c.dtype == DType::f64 ? "double" : c.dtype == DType::f32 ? "float"
                                    : c.dtype == DType::i8   ? "signed char" : "int";
    std::ofstream h(dir + "/h" + std::to_string(i) + ".cpp");
    h << "#include \"k" << i << ".cu\"\n#include \"" << TG_SOURCE_DIR << "/tools/kernel_emu/stencil_harness.h\"\n"
      << "int main() {\n  tg_dev::StencilArgs a{};\n  a.batch = " << z.batch << ";\n"
      << "  const long long in[4] = {" << list(z.in) << "}, out[4] = {" << list(z.out) << "}, before[4] = {"
      << list(z.before) << "};\n"
      << "  for (int i = 0; i < 4; ++i) { a.in[i] = in[i]; a.out[i] = out[i]; a.before[i] = before[i]; }\n"
      << "  a.tiles[0] = " << l.tiles[0] << "; a.tiles[1] = " << l.tiles[1] << "; a.tiles[2] = " << l.tiles[2]
      << "; a.total_tiles = " << l.total_tiles << ";\n"
      << "  const " << ctype << " b = (" << ctype << ")1.5;\n  std::memcpy(&a.boundary, &b, sizeof b);\n"
      << "  std::printf(\"" << c.name << ": tile " << s.bx << "x" << s.by << ", ry " << s.ry << ", rz " << s.rz
      << ", " << l.total_tiles << " tiles on " << blocks << " blocks\\n\");\n"
      << "  return tg_emu_stencil::run<tg_st_cfg>(a, " << blocks << ", " << l.threads << ", \"" << c.name << "\", "
      << i + 1 << ") != 0;\n}\n";
    ++written;
  }
  std::printf("%d harnesses written to %s\n", written, dir.c_str());
  return 0;
}
