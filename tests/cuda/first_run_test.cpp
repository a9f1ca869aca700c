// First-run kernels (docs/design/0011-first-run-kernels.md) on the GPU: TensorGraph's own GEMM
// and implicit-GEMM conv2d against float64 references and against the library kernels (cuDNN,
// cuBLASLt, through a compiled executable) on ResNet-50's and BERT-base's shapes; and a loaded
// saved executable in a fresh process whose first run uses them (no NVRTC: the file holds them),
// whose later runs give the saved executable's bits. Skipped without a GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "test_util.h"
#include "cuda/require_gpu.h"
#include "tg/tg.h"

#ifdef TG_HAVE_CUDA
#include <cuda_runtime.h>

#include "backends/cuda/first_run.h"
#include "ops/conv_geometry.h"
#endif

namespace tg {
namespace {

namespace fs = std::filesystem;

// Values of t (any float dtype, on the CPU) as doubles.
std::vector<double> values(const TensorData& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == DType::f32) {
      v[i] = t.data<float>()[i];
    } else {
      const uint16_t h = static_cast<const uint16_t*>(t.raw_data())[i];
      v[i] = t.dtype() == DType::f16 ? f16_t::to_float(h) : std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
    }
  }
  return v;
}

// An operand as the kernels multiply it: rounded to bf16/f16 at those precisions.
double rounded(double v, ComputePrecision p) {
  if (p == ComputePrecision::bf16) return static_cast<float>(bf16_t(static_cast<float>(v)));
  if (p == ComputePrecision::f16) return static_cast<float>(f16_t(static_cast<float>(v)));
  return v;
}

// max |got - ref| / max |ref|.
double rel_error(const std::vector<double>& got, const std::vector<double>& ref) {
  double e = 0.0, m = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    e = std::max(e, std::fabs(got[i] - ref[i]));
    m = std::max(m, std::fabs(ref[i]));
  }
  return e / std::max(m, 1e-30);
}

#ifdef TG_HAVE_CUDA

struct ConvCase {
  const char* name;
  Shape x, w;  // nhwc / hwio or nchw / oihw per `nchw`
  int64_t stride, pad, groups;
  bool nchw;
  DType dt;
  ComputePrecision precision;
};

struct MatmulCase {
  const char* name;
  Shape a, b;
  bool ta, tb;
  DType dt;
  ComputePrecision precision;
};

// The first-run kernel's result of conv2d(x, w) (launched directly on device copies).
TensorData first_run_conv(const TensorData& x, const TensorData& w, const Conv2dDesc& d, const Shape& y_shape,
                          ComputePrecision p) {
  const ops::ConvGeometry geo = ops::conv_geometry(x.shape(), w.shape(), d);
  cuda::first_run::Round r{};
  EXPECT_TRUE(cuda::first_run::rounding_of(x.dtype(), p, &r));
  TensorData dx = x.to(Device::cuda(0)), dw = w.to(Device::cuda(0));
  TensorData dy = TensorData::full(y_shape, x.dtype(), 7.0).to(Device::cuda(0));
  cuda::first_run::ConvArgs args = cuda::first_run::conv_args(geo, d.data_layout, d.weights_layout);
  const size_t ws_bytes = cuda::first_run::plan(args);
  TensorData ws = TensorData::zeros({static_cast<int64_t>(ws_bytes / 4 + 1)}).to(Device::cuda(0));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cuda::first_run::launch_conv2d(0, x.dtype(), r, dx.storage_ptr(), dw.storage_ptr(), dy.storage_ptr(), args,
                                 ws.storage_ptr(), nullptr, "test");
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return dy.to(Device::cpu());
}

TEST(CudaFirstRunKernels, ConvolutionsMatchFloat64AndTheLibraryOnResNet50Shapes) {
  REQUIRE_GPU();
  const ConvCase cases[] = {
      {"stem 7x7/2 tf32", {1, 3, 224, 224}, {64, 3, 7, 7}, 2, 3, 1, true, DType::f32, ComputePrecision::tf32},
      {"3x3 64 @56 tf32", {1, 56, 56, 64}, {3, 3, 64, 64}, 1, 1, 1, false, DType::f32, ComputePrecision::tf32},
      {"1x1 256->128 @56 f32", {1, 56, 56, 256}, {1, 1, 256, 128}, 1, 0, 1, false, DType::f32, ComputePrecision::f32},
      {"3x3/2 128 @56 tf32", {1, 128, 56, 56}, {128, 128, 3, 3}, 2, 1, 1, true, DType::f32, ComputePrecision::tf32},
      {"1x1/2 1024->2048 @14 tf32", {1, 14, 14, 1024}, {1, 1, 1024, 2048}, 2, 0, 1, false, DType::f32,
       ComputePrecision::tf32},
      {"3x3 512 @7 bf16", {1, 7, 7, 512}, {3, 3, 512, 512}, 1, 1, 1, false, DType::f32, ComputePrecision::bf16},
      {"3x3 64 @28 f16 storage, groups 4", {2, 28, 28, 64}, {3, 3, 16, 64}, 1, 1, 4, false, DType::f16,
       ComputePrecision::f32},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    Conv2dDesc d;
    d.strides = {c.stride, c.stride};
    d.padding = Padding::explicit_padding;
    d.explicit_padding = {c.pad, c.pad, c.pad, c.pad};
    d.groups = c.groups;
    d.data_layout = c.nchw ? Layout::nchw : Layout::nhwc;
    d.weights_layout = c.nchw ? Layout::oihw : Layout::hwio;
    const TensorData x = TensorData::random_uniform(c.x, -1.f, 1.f, 11, c.dt);
    const TensorData w = TensorData::random_uniform(c.w, -0.1f, 0.1f, 12, c.dt);
    // The library's result: an executable of the one convolution.
    Graph g;
    Tensor xp = g.placeholder(c.x, c.dt, "x");
    Tensor y = conv2d(xp, g.constant(w), d);
    CompileOptions o;
    o.precision = c.precision;
    Executable exe = g.compile(Device::cuda(0), {{xp, {c.x, c.dt}}}, {y}, {}, o);
    const TensorData lib = exe.run({x.to(Device::cuda(0))})[0].to(Device::cpu());
    const TensorData own = first_run_conv(x, w, d, lib.shape(), c.precision);
    // float64 reference over the op's definition (logical indices, geometry as the op resolves it).
    const ops::ConvGeometry geo = ops::conv_geometry(c.x, c.w, d);
    const auto xs = ops::data_strides(geo.x, d.data_layout), ys = ops::data_strides(geo.y, d.data_layout);
    const auto ws = ops::weight_strides(geo.w, d.weights_layout);
    const std::vector<double> xv = values(x), wv = values(w);
    std::vector<double> ref(static_cast<size_t>(lib.num_elements()));
    const int64_t cg = geo.x.c / geo.groups, og = geo.w.o / geo.groups;
    for (int64_t n = 0; n < geo.y.n; ++n)
      for (int64_t o = 0; o < geo.y.c; ++o)
        for (int64_t oh = 0; oh < geo.y.h; ++oh)
          for (int64_t ow = 0; ow < geo.y.w; ++ow) {
            double s = 0.0;
            for (int64_t r = 0; r < geo.w.kh; ++r) {
              const int64_t ih = oh * geo.stride_h - geo.pad_top + r * geo.dilation_h;
              if (ih < 0 || ih >= geo.x.h) continue;
              for (int64_t q = 0; q < geo.w.kw; ++q) {
                const int64_t iw = ow * geo.stride_w - geo.pad_left + q * geo.dilation_w;
                if (iw < 0 || iw >= geo.x.w) continue;
                for (int64_t i = 0; i < cg; ++i) {
                  s += rounded(xv[n * xs[0] + (o / og * cg + i) * xs[1] + ih * xs[2] + iw * xs[3]], c.precision) *
                       rounded(wv[o * ws[0] + i * ws[1] + r * ws[2] + q * ws[3]], c.precision);
                }
              }
            }
            ref[n * ys[0] + o * ys[1] + oh * ys[2] + ow * ys[3]] = s;
          }
    const double e_own = rel_error(values(own), ref), e_lib = rel_error(values(lib), ref);
    const double e_between = rel_error(values(own), values(lib));
    std::printf("[first-run] conv2d %s: own %.3g, library %.3g, own vs library %.3g (max error / max |y|)\n", c.name,
                e_own, e_lib, e_between);
    const double tol = c.dt == DType::f16 ? 2e-3 : 2e-6;  // f16 output: one rounding (2^-11 relative)
    EXPECT_LE(e_own, tol);
    EXPECT_LE(e_between, c.precision == ComputePrecision::f32 && c.dt == DType::f32 ? 1e-5 : 1e-2);
  }
}

TEST(CudaFirstRunKernels, MatmulsMatchFloat64AndTheLibraryOnBertAndResNetShapes) {
  REQUIRE_GPU();
  const MatmulCase cases[] = {
      {"BERT QKV 128x768x768 f16", {128, 768}, {768, 768}, false, false, DType::f16, ComputePrecision::f32},
      {"BERT FFN up 128x768x3072 f16", {128, 768}, {768, 3072}, false, false, DType::f16, ComputePrecision::f32},
      {"BERT FFN down 128x3072x768 f16, b transposed", {128, 3072}, {768, 3072}, false, true, DType::f16,
       ComputePrecision::f32},
      {"BERT scores [12,128,64]x[12,128,64]^T f16", {12, 128, 64}, {12, 128, 64}, false, true, DType::f16,
       ComputePrecision::f32},
      {"BERT context [12,128,128]x[12,128,64] bf16", {12, 128, 128}, {12, 128, 64}, false, false, DType::bf16,
       ComputePrecision::f32},
      {"ResNet fc 1x2048x1000 tf32", {1, 2048}, {2048, 1000}, false, false, DType::f32, ComputePrecision::tf32},
      {"broadcast [2,3,40,50]x[50,30] a transposed, f32->f16", {2, 3, 50, 40}, {50, 30}, true, false, DType::f32,
       ComputePrecision::f16},
  };
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(c.name);
    const TensorData a = TensorData::random_uniform(c.a, -1.f, 1.f, 21, c.dt);
    const TensorData b = TensorData::random_uniform(c.b, -0.1f, 0.1f, 22, c.dt);
    Graph g;
    Tensor ap = g.placeholder(c.a, c.dt, "a");
    Tensor y = matmul(ap, g.constant(b), {c.ta, c.tb});
    CompileOptions o;
    o.precision = c.precision;
    Executable exe = g.compile(Device::cuda(0), {{ap, {c.a, c.dt}}}, {y}, {}, o);
    const TensorData lib = exe.run({a.to(Device::cuda(0))})[0].to(Device::cpu());
    // Operands as matrices: A [batch.., m, k], B [k, n] or [batch.., ...].
    const size_t ra = c.a.size(), rb = c.b.size();
    const int64_t m = c.ta ? c.a[ra - 1] : c.a[ra - 2], k = c.ta ? c.a[ra - 2] : c.a[ra - 1];
    const int64_t n = c.tb ? c.b[rb - 2] : c.b[rb - 1];
    const int64_t batch = a.num_elements() / (m * k), b_batch = b.num_elements() / (k * n);
    cuda::first_run::GemmArgs ga{};
    ga.m = m, ga.n = n, ga.k = k, ga.lda = c.a[ra - 1], ga.ldb = c.b[rb - 1], ga.ta = c.ta, ga.tb = c.tb;
    if (batch > 1) {
      ga.batch_rank = 1;
      ga.batch_dims[0] = batch, ga.batch_sa[0] = m * k, ga.batch_sb[0] = b_batch > 1 ? k * n : 0;
    }
    cuda::first_run::Round r{};
    ASSERT_TRUE(cuda::first_run::rounding_of(c.dt, c.precision, &r));
    TensorData da = a.to(Device::cuda(0)), db = b.to(Device::cuda(0));
    TensorData dc = TensorData::full(lib.shape(), c.dt, 7.0).to(Device::cuda(0));
    const size_t ws_bytes = cuda::first_run::plan(ga, batch);
    TensorData ws = TensorData::zeros({static_cast<int64_t>(ws_bytes / 4 + 1)}).to(Device::cuda(0));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cuda::first_run::launch_matmul(0, c.dt, r, da.storage_ptr(), db.storage_ptr(), dc.storage_ptr(), ga, batch,
                                   ws.storage_ptr(), nullptr, "test");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const TensorData own = dc.to(Device::cpu());
    const std::vector<double> av = values(a), bv = values(b);
    std::vector<double> ref(static_cast<size_t>(batch * m * n));
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0.0;
          for (int64_t q = 0; q < k; ++q) {
            const double x = av[t * m * k + (c.ta ? q * m + i : i * k + q)];
            const double yv = bv[(b_batch > 1 ? t * k * n : 0) + (c.tb ? j * k + q : q * n + j)];
            s += rounded(x, c.precision) * rounded(yv, c.precision);
          }
          ref[t * m * n + i * n + j] = s;
        }
    const double e_own = rel_error(values(own), ref), e_lib = rel_error(values(lib), ref);
    const double e_between = rel_error(values(own), values(lib));
    std::printf("[first-run] matmul %s: own %.3g, library %.3g, own vs library %.3g (max error / max |y|)\n", c.name,
                e_own, e_lib, e_between);
    const double tol = c.dt == DType::f32 ? 2e-6 : c.dt == DType::f16 ? 2e-3 : 1e-2;  // one output rounding
    EXPECT_LE(e_own, tol);
    EXPECT_LE(e_between, 1e-2);
  }
}

#endif  // TG_HAVE_CUDA

// y = relu(conv2d(x, w1)) reshaped and multiplied by w2 (as saved_executable_algorithms_test.cpp,
// other sizes, so that no other test's plans are in this process's caches): one convolution and
// one GEMM, TF32.
struct Net {
  Graph g;
  Tensor x, y;
  Net() {
    x = g.placeholder({1, 8, 8, 16}, DType::f32, "x");
    Tensor w1 = g.constant(TensorData::random_uniform({3, 3, 16, 24}, -0.2f, 0.2f, 7));
    Tensor w2 = g.constant(TensorData::random_uniform({1536, 10}, -0.05f, 0.05f, 8));
    Conv2dDesc d;
    d.padding = Padding::same;
    y = matmul(reshape(relu(conv2d(x, w1, d)), {1, 1536}), w2);
  }
  static TensorData input() { return TensorData::random_uniform({1, 8, 8, 16}, -1.f, 1.f, 9); }
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The child: loads $TG_FIRST_RUN_CHILD_FILE on cuda:0 with LoadOptions::first_run_kernels, runs
// three times and writes the first and the third result to $TG_FIRST_RUN_CHILD_OUT.1 / .3, then
// prints the NVRTC compiles it made. With TG_FIRST_RUN_CHILD_EXIT=1 it returns right after the
// load instead (its preparation workers inside cuDNN's and cuBLASLt's initialization).
TEST(CudaFirstRunKernels, ChildRunsThrice) {
  const char* file = std::getenv("TG_FIRST_RUN_CHILD_FILE");
  const char* out = std::getenv("TG_FIRST_RUN_CHILD_OUT");
  if (!file || !out) GTEST_SKIP() << "run by CudaFirstRunKernels.ALoadedExecutablesFirstRunUsesThemThenTheLibrary";
  const RuntimeStats s0 = runtime_stats();
  LoadOptions lo;
  lo.first_run_kernels = true;
  Executable exe = Executable::load(file, Device::cuda(0), lo);
  if (const char* e = std::getenv("TG_FIRST_RUN_CHILD_EXIT"); e && std::string(e) == "1") return;
  for (int i = 1; i <= 3; ++i) {
    const TensorData y = exe.run({Net::input()})[0].to(Device::cpu());
    if (i == 2) continue;
    std::ofstream(std::string(out) + "." + std::to_string(i), std::ios::binary)
        .write(static_cast<const char*>(y.raw_data()), static_cast<std::streamsize>(y.nbytes()));
  }
  const RuntimeStats s1 = runtime_stats();
  std::printf("[child] kernel_compiles=%lld autotune_runs=%lld graph_captures=%lld capture_fallbacks=%lld\n",
              static_cast<long long>(s1.kernel_compiles - s0.kernel_compiles),
              static_cast<long long>(s1.autotune_runs - s0.autotune_runs),
              static_cast<long long>(s1.graph_captures - s0.graph_captures),
              static_cast<long long>(s1.capture_fallbacks - s0.capture_fallbacks));
}

// A .tgx written with TG_FIRST_RUN_KERNELS=1 holds the first-run programs; a fresh process loading
// it with LoadOptions::first_run_kernels (the environment not set; its preparation workers held
// back 3 s, so that no library plan is ready)
// takes them in its first run without NVRTC, within TF32's tolerance of the saved executable's
// result; its recorded run waits for the library plans, so the third run (a replay) gives the
// saved executable's bits.
TEST(CudaFirstRunKernels, ALoadedExecutablesFirstRunUsesThemThenTheLibrary) {
  REQUIRE_GPU();
  const char* before = std::getenv("TG_FIRST_RUN_KERNELS");
  const std::string saved_env = before ? before : "";
  ::setenv("TG_FIRST_RUN_KERNELS", "1", 1);
  Net m;
  CompileOptions o;
  o.precision = ComputePrecision::tf32;
  Executable exe = m.g.compile(Device::cuda(0), {{m.x, {{1, 8, 8, 16}, DType::f32}}}, {m.y}, {}, o);
  const TensorData want = exe.run({Net::input()})[0].to(Device::cpu());
  const fs::path dir = fs::temp_directory_path() / ("tg_first_run_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "net.tgx").string(), out = (dir / "y").string();
  exe.save(file);
  if (before) ::setenv("TG_FIRST_RUN_KERNELS", saved_env.c_str(), 1); else ::unsetenv("TG_FIRST_RUN_KERNELS");
  const auto child = [&](const std::string& env) {
    const std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX -u GTEST_OUTPUT -u TG_FIRST_RUN_KERNELS "
                            "TG_PHASES=1 " + env + " TG_FIRST_RUN_CHILD_FILE='" + file +
                            "' TG_FIRST_RUN_CHILD_OUT='" + out + "' TG_KERNEL_CACHE_DIR='" + (dir / "kc").string() +
                            "' '" + fs::read_symlink("/proc/self/exe").string() +
                            "' --gtest_filter=CudaFirstRunKernels.ChildRunsThrice 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    std::string text;
    char buf[4096];
    while (size_t n = p ? std::fread(buf, 1, sizeof(buf), p) : 0) text.append(buf, n);
    const int status = p ? ::pclose(p) : -1;
    return std::make_pair(status, text);
  };
  // Processes that exit right after the load, their workers started at once (inside the
  // libraries' first-use initialization): the executable's end stops them, no crash at exit.
  for (int i = 0; i < 3; ++i) {
    const auto [status, text] = child("TG_PREPARE_DELAY_MS=0 TG_FIRST_RUN_CHILD_EXIT=1");
    ASSERT_EQ(status, 0) << "exit right after the load, try " << i << "\n" << text;
  }
  const auto [status, text] = child("TG_PREPARE_DELAY_MS=3000");
  ASSERT_EQ(status, 0) << text;
  for (size_t at = text.find("[tg phases]"); at != std::string::npos; at = text.find("[tg phases]", at + 1)) {
    std::cout << "[first-run child] " << text.substr(at, text.find('\n', at) - at) << "\n";
  }
  EXPECT_NE(text.find("first_run_conv2d="), std::string::npos) << text;
  EXPECT_NE(text.find("first_run_matmul="), std::string::npos) << text;
  EXPECT_NE(text.find("kernel_compiles=0"), std::string::npos) << "the file holds the first-run programs\n" << text;
  EXPECT_NE(text.find("autotune_runs=0"), std::string::npos) << text;
  // The second run records the CUDA graph, building the library plans it waits for while recording.
  EXPECT_NE(text.find("graph_captures=1"), std::string::npos) << text;
  EXPECT_NE(text.find("capture_fallbacks=0"), std::string::npos) << text;
  const std::string first = read_all(out + ".1"), third = read_all(out + ".3");
  ASSERT_EQ(first.size(), want.nbytes());
  ASSERT_EQ(third.size(), want.nbytes());
  EXPECT_EQ(std::memcmp(third.data(), want.raw_data(), want.nbytes()), 0) << "the replay uses the library plans";
  const float* w = want.data<float>();
  const auto* f = reinterpret_cast<const float*>(first.data());
  double e = 0.0, mx = 0.0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    e = std::max(e, static_cast<double>(std::fabs(f[i] - w[i])));
    mx = std::max(mx, static_cast<double>(std::fabs(w[i])));
  }
  std::printf("[first-run] first run vs the saved executable (TF32 library): max error / max |y| = %.3g\n", e / mx);
  EXPECT_LE(e / mx, 1e-2) << "within TF32's tolerance";
  EXPECT_GT(mx, 0.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tg
