// Saved executables store the library algorithms they chose (docs/design/0008, section
// 'algorithms'): cuDNN engine configurations and cuBLASLt algorithms. A loaded executable on the
// same GPU and library versions, in a fresh process, runs no autotuning and compiles no kernel
// (checked in a child process of this test binary); files without the section still load; a
// malformed or future-version section is an error naming the file and the section.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

#include "runtime/tgx_format.h"
#include "test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;

// y = relu(conv2d(x, w1)) reshaped and multiplied by w2: one convolution (cuDNN) and one GEMM
// (cuBLASLt). x [1, 8, 8, 16] nhwc, w1 [3, 3, 16, 32] hwio (same padding), w2 [2048, 10].
struct ConvNet {
  Graph g;
  Tensor x, y;
  ConvNet() {
    x = g.placeholder({1, 8, 8, 16}, DType::f32, "x");
    Tensor w1 = g.constant(TensorData::random_uniform({3, 3, 16, 32}, -0.2f, 0.2f, 7));
    Tensor w2 = g.constant(TensorData::random_uniform({2048, 10}, -0.05f, 0.05f, 8));
    Conv2dDesc d;
    d.padding = Padding::same;
    y = matmul(reshape(relu(conv2d(x, w1, d)), {1, 2048}), w2);
  }
  static TensorData input() { return TensorData::random_uniform({1, 8, 8, 16}, -1.f, 1.f, 9); }
};

Executable compile_convnet(Device d) {
  ConvNet m;
  CompileOptions o;
  o.precision = ComputePrecision::tf32;  // non-deterministic TF32: cuDNN engines are timed
  return m.g.compile(d, {{m.x, {{1, 8, 8, 16}, DType::f32}}}, {m.y}, {}, o);
}

runtime::tgx::Layout layout_of(const std::vector<uint8_t>& b) { return runtime::tgx::read_layout(b, "t"); }

// The file rebuilt from its sections, `drop` left out and `replace` (name -> payload) swapped in.
std::vector<uint8_t> rebuilt(const std::vector<uint8_t>& b, const std::string& drop,
                             const std::pair<std::string, std::string>& replace = {}) {
  std::vector<std::pair<std::string, std::string>> sections;
  for (const auto& s : layout_of(b).sections) {
    if (s.name == drop) continue;
    std::string payload(reinterpret_cast<const char*>(b.data()) + s.offset, s.length);
    if (s.name == replace.first) payload = replace.second;
    sections.emplace_back(s.name, payload);
  }
  return runtime::tgx::write_file(sections);
}

std::string error_of(const std::vector<uint8_t>& b, ErrorCode* code) {
  try {
    Executable::load_from_bytes(b, Device::cpu(), {}, "bad.tgx");
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  }
  return "";
}

TEST(SavedExecutableAlgorithms, SectionIsOptionalAndChecked) {
  Executable exe = compile_convnet(Device::cpu());
  const std::vector<TensorData> want = exe.run({ConvNet::input()});
  const std::vector<uint8_t> b = exe.save_to_bytes();
  bool found = false;
  for (const auto& s : layout_of(b).sections) found = found || s.name == "algorithms";
  ASSERT_TRUE(found) << "every file written has section 'algorithms'";

  // A file without the section (as written before it existed) loads and gives the same bits.
  const std::vector<TensorData> got =
      Executable::load_from_bytes(rebuilt(b, "algorithms"), Device::cpu()).run({ConvNet::input()});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].type(), want[0].type());
  EXPECT_EQ(std::memcmp(got[0].raw_data(), want[0].raw_data(), want[0].nbytes()), 0);

  // A future layout version of the section: unsupported, naming the file and the section.
  runtime::tgx::Writer future;
  future.u32(2);
  future.u32(0);
  ErrorCode code{};
  std::string msg = error_of(rebuilt(b, "", {"algorithms", future.out()}), &code);
  EXPECT_EQ(code, ErrorCode::unsupported) << msg;
  EXPECT_NE(msg.find("bad.tgx: section 'algorithms': version 2"), std::string::npos) << msg;

  // More choices than the section holds, and a key outside the "algo:" namespace: malformed.
  runtime::tgx::Writer many;
  many.u32(1);
  many.u32(1000);
  msg = error_of(rebuilt(b, "", {"algorithms", many.out()}), &code);
  EXPECT_EQ(code, ErrorCode::io_error) << msg;
  EXPECT_NE(msg.find("bad.tgx: section 'algorithms' malformed"), std::string::npos) << msg;
  runtime::tgx::Writer foreign;
  foreign.u32(1);
  foreign.u32(1);
  foreign.str("sm_90 some kernel");
  foreign.str("graph 1");
  msg = error_of(rebuilt(b, "", {"algorithms", foreign.out()}), &code);
  EXPECT_EQ(code, ErrorCode::io_error) << msg;
  EXPECT_NE(msg.find("bad.tgx: section 'algorithms' malformed: a choice whose key"), std::string::npos) << msg;
}

// The child: loads $TG_TGX_CHILD_FILE on $TG_TGX_CHILD_DEVICE (cuda: cuda:0, else the CPU), runs
// once on ConvNet::input() and writes the result bytes to $TG_TGX_CHILD_OUT, then prints the
// counters the parent checks.
TEST(SavedExecutableAlgorithms, ChildLoadsAndRuns) {
  const char* file = std::getenv("TG_TGX_CHILD_FILE");
  const char* out = std::getenv("TG_TGX_CHILD_OUT");
  if (!file || !out) GTEST_SKIP() << "run by SavedExecutableAlgorithms.LoadedInAFreshProcessRunsNoAutotuning";
  std::printf("[child] started\n");
  const RuntimeStats s0 = runtime_stats();
  const char* dev = std::getenv("TG_TGX_CHILD_DEVICE");
  const Device device = dev && std::strcmp(dev, "cuda") == 0 ? Device::cuda(0) : Device::cpu();
  Executable exe = Executable::load(file, device);
  const TensorData y = exe.run({ConvNet::input()})[0].to(Device::cpu());
  const RuntimeStats s1 = runtime_stats();
  std::ofstream(out, std::ios::binary)
      .write(static_cast<const char*>(y.raw_data()), static_cast<std::streamsize>(y.nbytes()));
  std::printf("[child] autotune_runs=%lld kernel_compiles=%lld kernel_preloads=%lld load_recompiles=%lld\n",
              static_cast<long long>(s1.autotune_runs - s0.autotune_runs),
              static_cast<long long>(s1.kernel_compiles - s0.kernel_compiles),
              static_cast<long long>(s1.kernel_preloads - s0.kernel_preloads),
              static_cast<long long>(s1.executable_load_recompiles - s0.executable_load_recompiles));
}

long long counter(const std::string& text, const std::string& name) {
  const size_t at = text.find(name + "=");
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + name.size() + 1);
}

// On CUDA: the stored cuDNN/cuBLASLt choices and kernels mean no autotuning and no NVRTC in the
// fresh process. On the CPU (no library choices): the fresh process's bits are the saved one's.
TEST(SavedExecutableAlgorithms, LoadedInAFreshProcessRunsNoAutotuning) {
  const bool cuda = Device::cuda_device_count() > 0;
  Executable exe = compile_convnet(cuda ? Device::cuda(0) : Device::cpu());
  const TensorData want = exe.run({ConvNet::input()})[0].to(Device::cpu());
  const fs::path dir = fs::temp_directory_path() / ("tg_tgx_algos_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "convnet.tgx").string(), out = (dir / "y.bin").string();
  exe.save(file);
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int convs = 0, gemms = 0;
  for (const auto& s : layout_of(b).sections) {
    if (s.name != "algorithms") continue;
    const std::string payload(reinterpret_cast<const char*>(b.data()) + s.offset, s.length);
    for (size_t at = 0; (at = payload.find("algo:cudnn_conv/v1 ", at)) != std::string::npos; ++at) ++convs;
    for (size_t at = 0; (at = payload.find("algo:cublaslt/v1 ", at)) != std::string::npos; ++at) ++gemms;
  }
  if (cuda) {
    EXPECT_GE(convs, 1) << "the convolution's cuDNN choice is stored";
    EXPECT_EQ(gemms, 1) << "the GEMM's cuBLASLt algorithm is stored";
  } else {
    EXPECT_EQ(convs + gemms, 0) << "the CPU backend makes no library choices";
  }

  // A fresh process (this binary, the child test): nothing in its caches but the file. Not
  // sharded (ctest runs this binary in gtest shards: the child would inherit its shard). TG_PHASES=1:
  // the child prints which library paths it took ("[tg phases] name=ms..." at exit).
  const auto run_child = [&](const std::string& tgx) {
    const std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX -u GTEST_OUTPUT TG_PHASES=1 "
                            "TG_TGX_CHILD_DEVICE=" +
                            std::string(cuda ? "cuda" : "cpu") + " TG_TGX_CHILD_FILE='" + tgx + "' TG_TGX_CHILD_OUT='" +
                            out + "' TG_KERNEL_CACHE_DIR='" + (dir / "kc").string() + "' '" +
                            fs::read_symlink("/proc/self/exe").string() +
                            "' --gtest_filter=SavedExecutableAlgorithms.ChildLoadsAndRuns 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    std::string text;
    if (!p) return text;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << text;
    EXPECT_EQ(counter(text, "autotune_runs"), 0) << text;
    EXPECT_EQ(counter(text, "kernel_compiles"), 0) << text;
    EXPECT_EQ(counter(text, "load_recompiles"), 0) << text;
    if (cuda) EXPECT_GE(counter(text, "kernel_preloads"), 1) << text;
    std::ifstream yin(out, std::ios::binary);
    const std::string got((std::istreambuf_iterator<char>(yin)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got.size(), want.nbytes());
    EXPECT_TRUE(got.size() == want.nbytes() && std::memcmp(got.data(), want.raw_data(), want.nbytes()) == 0)
        << "the child's result has other bits (" << tgx << ")";
    fs::remove(out);
    return text;
  };
  const std::string text = run_child(file);
  if (!cuda) {
    fs::remove_all(dir);
    return;
  }
  for (size_t at = text.find("[tg phases]"); at != std::string::npos; at = text.find("[tg phases]", at + 1)) {
    std::cout << "[tgx child] " << text.substr(at, text.find('\n', at) - at) << "\n";  // the paths it took
  }
  // Written by this cuBLASLt (and cuDNN) version: the GEMM's algorithm is used without
  // cublasLtMatmulAlgoCheck (validated by the preparation worker's run), the engine configuration
  // without re-reading its numerical notes.
  EXPECT_NE(text.find("cublaslt_trusted_choice="), std::string::npos) << text;
  EXPECT_EQ(text.find("cublaslt_algo_check="), std::string::npos) << text;
  EXPECT_EQ(text.find("cudnn_arithmetic_check="), std::string::npos) << text;

  // The same file claiming other library versions ("lt=<version>" and " v=<version>" rewritten,
  // same length): every choice is checked as before, and the bits are the same.
  std::string payload;
  std::vector<std::pair<std::string, std::string>> sections;
  for (const auto& s : layout_of(b).sections) {
    sections.emplace_back(s.name, std::string(reinterpret_cast<const char*>(b.data()) + s.offset, s.length));
  }
  int patched = 0;
  for (auto& [name, data] : sections) {
    if (name != "algorithms") continue;
    for (const char* tag : {"lt=", " v="}) {
      for (size_t at = data.find(tag); at != std::string::npos; at = data.find(tag, at + 1)) {
        size_t d = at + std::strlen(tag);
        const size_t start = d;
        while (d < data.size() && data[d] >= '0' && data[d] <= '9') data[d++] = '9';
        if (d > start) ++patched;
      }
    }
  }
  EXPECT_GE(patched, 1) << "the stored GEMM algorithm carries its cuBLASLt version";
  const std::string other = (dir / "other_versions.tgx").string();
  const std::vector<uint8_t> ob = runtime::tgx::write_file(sections);
  std::ofstream(other, std::ios::binary).write(reinterpret_cast<const char*>(ob.data()),
                                               static_cast<std::streamsize>(ob.size()));
  const std::string checked = run_child(other);
  EXPECT_NE(checked.find("cublaslt_algo_check="), std::string::npos) << checked;
  EXPECT_EQ(checked.find("cublaslt_trusted_choice="), std::string::npos) << checked;
  if (text.find("cudnn_plan_from_choice=") != std::string::npos) {
    EXPECT_NE(checked.find("cudnn_arithmetic_check="), std::string::npos) << checked;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tg
