// tg_gemm_emu: writes the first-run GEMM and conv2d kernels (backends/cuda/first_run.h,
// device/gemm.cuh) of a set of self-test cases as host programs, each checked under shim.h against
// a float64 evaluation of the op (gemm_harness.h).
//   usage: tg_gemm_emu OUT_DIR   (then tools/kernel_emu/run.sh OUT_DIR)
// Matmul cases: several tiles in M and N with partial edge tiles, K not a multiple of the tile's
// 16, transposed operands, broadcast and strided batch dims, f32 (also rounded to bf16 and f16 as
// precision bf16/f16 asks), f16 and bf16. Conv2d cases go through ops::conv_geometry (the op's own
// padding resolution) and first_run::conv_args: NHWC/HWIO and NCHW/OIHW, strides, same and
// asymmetric explicit padding, dilation, groups and depthwise, batch 2, several N tiles.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/cuda/first_run.h"

namespace {

using tg::DType;
using tg::cuda::first_run::Round;

const char* type_name(DType dt) {
  return dt == DType::f16 ? "tg_dev::f16" : dt == DType::bf16 ? "tg_dev::bf16" : "float";
}

template <size_t N>
std::string list(const long long (&v)[N]) {
  std::string s;
  for (size_t i = 0; i < N; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

int written = 0;

void write_case(const std::string& dir, const std::string& source, const std::string& body) {
  const int i = written++;
  std::ofstream(dir + "/k" + std::to_string(i) + ".cu") << source;
  std::ofstream(dir + "/h" + std::to_string(i) + ".cpp")
      << "#include \"k" << i << ".cu\"\n#include \"" << TG_SOURCE_DIR << "/tools/kernel_emu/gemm_harness.h\"\n"
      << "int main() {\n" << body << "}\n";
}

struct Batch {
  long long dims[4] = {1, 1, 1, 1}, sa[4] = {}, sb[4] = {};
  int rank = 0;
};

// C [batches, m, n] = A B with A [m, k] (stored [k, m] when ta), B [k, n] ([n, k] when tb), each
// contiguous per matrix; batch strides as given (0: broadcast).
void matmul_case(const std::string& dir, const char* name, DType dt, Round r, long long m, long long n, long long k,
                 bool ta, bool tb, Batch bt) {
  tg::cuda::first_run::GemmArgs g{};
  g.m = m, g.n = n, g.k = k, g.ta = ta, g.tb = tb;
  g.lda = ta ? m : k;
  g.ldb = tb ? k : n;
  g.batch_rank = bt.rank;
  long long batches = 1, na = m * k, nb = k * n;
  for (int d = 0; d < bt.rank; ++d) {
    g.batch_dims[d] = bt.dims[d], g.batch_sa[d] = bt.sa[d], g.batch_sb[d] = bt.sb[d];
    batches *= bt.dims[d];
    na += (bt.dims[d] - 1) * bt.sa[d];
    nb += (bt.dims[d] - 1) * bt.sb[d];
  }
  const size_t ws = tg::cuda::first_run::plan(g, batches);
  std::ostringstream h;
  h << "  tg_dev::GemmArgs g{" << g.m << "," << g.n << "," << g.k << "," << g.lda << "," << g.ldb << "," << g.ta << ","
    << g.tb << "," << g.batch_rank << "," << g.tiles_m << "," << g.tiles_n << "," << g.splits << "," << g.k_chunk
    << ",{" << list(g.batch_dims) << "},{" << list(g.batch_sa) << "},{" << list(g.batch_sb) << "}};\n"
    << "  return tg_gemm_emu::run_matmul<" << type_name(dt) << ", " << static_cast<int>(r) << ">(\"matmul " << name
    << " (" << g.splits << " splits)\", g, " << batches << ", " << tg::cuda::first_run::blocks(g, batches) << ", "
    << tg::cuda::first_run::reduce_blocks(g, batches) << ", " << ws / 4 << ", " << na << ", " << nb
    << ", tg_first_run_matmul, tg_first_run_matmul_reduce);\n";
  write_case(dir, tg::cuda::first_run::matmul_source(dt, r), h.str());
}

void conv_case(const std::string& dir, const char* name, DType dt, Round r, tg::Layout data, tg::Layout weights,
               tg::Shape x, tg::Shape w, tg::Conv2dDesc d) {
  d.data_layout = data;
  d.weights_layout = weights;
  const tg::ops::ConvGeometry geo = tg::ops::conv_geometry(x, w, d);
  tg::cuda::first_run::ConvArgs g = tg::cuda::first_run::conv_args(geo, data, weights);
  const size_t ws = tg::cuda::first_run::plan(g);
  std::ostringstream h;
  h << "  tg_dev::ConvArgs g{" << g.n << "," << g.c << "," << g.h << "," << g.w << "," << g.o << "," << g.kh << ","
    << g.kw << "," << g.oh << "," << g.ow << "," << g.groups << "," << g.stride_h << "," << g.stride_w << ","
    << g.pad_top << "," << g.pad_left << "," << g.dil_h << "," << g.dil_w << ",{" << list(g.xs) << "},{"
    << list(g.ws) << "},{" << list(g.ys) << "}," << g.tiles_m << "," << g.tiles_n << "," << g.splits << ","
    << g.k_chunk << "};\n"
    << "  return tg_gemm_emu::run_conv2d<" << type_name(dt) << ", " << static_cast<int>(r) << ">(\"conv2d " << name
    << " (" << g.splits << " splits)\", g, " << tg::cuda::first_run::blocks(g) << ", "
    << tg::cuda::first_run::reduce_blocks(g) << ", " << ws / 4 << ", tg_first_run_conv2d, tg_first_run_conv2d_reduce);\n";
  write_case(dir, tg::cuda::first_run::conv2d_source(dt, r), h.str());
}

tg::Conv2dDesc desc(std::vector<int64_t> strides, std::vector<int64_t> dilations, tg::Padding p,
                    std::vector<int64_t> pads, int64_t groups) {
  tg::Conv2dDesc d;
  d.strides = std::move(strides);
  d.dilations = std::move(dilations);
  d.padding = p;
  d.explicit_padding = std::move(pads);
  d.groups = groups;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tg_gemm_emu OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  using tg::Layout;
  using tg::Padding;
  // Matmuls.
  matmul_case(dir, "f32 70x50x37", DType::f32, Round::none, 70, 50, 37, false, false, {});
  Batch b1;  // [2 (A broadcast), 3] batches
  b1.rank = 2;
  b1.dims[0] = 2, b1.dims[1] = 3;
  b1.sa[0] = 0, b1.sa[1] = 33 * 20;
  b1.sb[0] = 3 * 20 * 65, b1.sb[1] = 20 * 65;
  matmul_case(dir, "f32->bf16 ta tb batch [2,3] A broadcast", DType::f32, Round::bf16, 33, 65, 20, true, true, b1);
  Batch b2;  // 2 batches sharing B
  b2.rank = 1;
  b2.dims[0] = 2, b2.sa[0] = 17 * 130, b2.sb[0] = 0;
  matmul_case(dir, "f16 17x9x130 batch 2 B broadcast", DType::f16, Round::none, 17, 9, 130, false, false, b2);
  matmul_case(dir, "bf16 64x64x16 tb", DType::bf16, Round::none, 64, 64, 16, false, true, {});
  matmul_case(dir, "f32->f16 5x130x3 ta", DType::f32, Round::f16, 5, 130, 3, true, false, {});
  matmul_case(dir, "f32 3x7x600 (split K)", DType::f32, Round::none, 3, 7, 600, false, false, {});
  Batch b3;  // 2 batches, split K
  b3.rank = 1;
  b3.dims[0] = 2, b3.sa[0] = 5 * 300, b3.sb[0] = 300 * 66;
  matmul_case(dir, "f16 5x66x300 tb batch 2 (split K)", DType::f16, Round::none, 5, 66, 300, false, true, b3);
  // Convolutions.
  conv_case(dir, "f32 nhwc/hwio 3x3 same", DType::f32, Round::none, Layout::nhwc, Layout::hwio, {1, 9, 10, 5},
            {3, 3, 5, 7}, desc({1, 1}, {1, 1}, Padding::same, {0, 0, 0, 0}, 1));
  conv_case(dir, "f32 nchw/oihw stride 2 dilation 2 groups 2 pads (0,1,2,0)", DType::f32, Round::none, Layout::nchw,
            Layout::oihw, {1, 4, 11, 9}, {6, 2, 3, 2}, desc({2, 1}, {2, 2}, Padding::explicit_padding, {0, 1, 2, 0}, 2));
  conv_case(dir, "f16 nhwc depthwise 3x3 stride 2", DType::f16, Round::none, Layout::nhwc, Layout::hwio, {1, 8, 7, 3},
            {3, 3, 1, 3}, desc({2, 2}, {1, 1}, Padding::same, {0, 0, 0, 0}, 3));
  conv_case(dir, "bf16 nhwc 1x1 batch 2, 70 outputs", DType::bf16, Round::none, Layout::nhwc, Layout::oihw,
            {2, 3, 4, 16}, {70, 16, 1, 1}, desc({1, 1}, {1, 1}, Padding::valid, {0, 0, 0, 0}, 1));
  conv_case(dir, "f32->bf16 nchw 7x7 stride 2 pad 3", DType::f32, Round::bf16, Layout::nchw, Layout::oihw,
            {1, 3, 11, 11}, {8, 3, 7, 7}, desc({2, 2}, {1, 1}, Padding::explicit_padding, {3, 3, 3, 3}, 1));
  conv_case(dir, "f32 nhwc 3x3 64 channels groups 2 (split K)", DType::f32, Round::none, Layout::nhwc, Layout::hwio,
            {1, 3, 3, 64}, {3, 3, 32, 10}, desc({1, 1}, {1, 1}, Padding::same, {0, 0, 0, 0}, 2));
  conv_case(dir, "f32 nhwc/ohwi 3x3 stride 2 groups 2", DType::f32, Round::none, Layout::nhwc, Layout::ohwi,
            {1, 7, 8, 6}, {4, 3, 3, 3}, desc({2, 2}, {1, 1}, Padding::same, {0, 0, 0, 0}, 2));
  std::printf("wrote %d first-run kernels to %s\n", written, dir.c_str());
  return 0;
}
