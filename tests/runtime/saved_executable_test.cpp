// Executable::save / load (.tgx, docs/design/0008): lossless round trips (bit-identical results,
// the same printed graph), no pass pipeline on load, variables embedded or bound by name, the
// recompile when the file's architecture differs, CPU <-> CUDA, and one test per bad-file class
// asserting that the message names the file and the section.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "passes/fusion_test_util.h"
#include "runtime/tgx_format.h"
#include "test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using testing::expect_close;

std::vector<Device> devices() {
  std::vector<Device> d{Device::cpu()};
  if (Device::cuda_device_count() > 0) d.push_back(Device::cuda(0));
  return d;
}

void expect_bit_identical(const TensorData& a, const TensorData& b) {
  TensorData ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  ASSERT_EQ(ha.type(), hb.type());
  EXPECT_EQ(std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()), 0) << ha.to_string() << " vs " << hb.to_string();
}

std::string error_of(const std::function<void()>& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

// y = relu(x @ w + b) summed over rows, and a second target x * 2: x [2,3], w [3,2] (a variable).
struct Mlp {
  Graph g;
  Tensor x, w, y, z;
  Mlp() {
    x = g.placeholder({2, 3}, DType::f32, "x");
    w = g.variable(TensorData::from_vector<float>({1, -1, 2, 0.5f, -3, 1}, {3, 2}), "w");
    Tensor b = g.constant(TensorData::from_vector<float>({0.25f, -0.5f}, {2}));
    y = reduce_sum(relu(matmul(x, w) + b), {.axes = {0}});
    z = x * 2.f;
  }
  static TensorData input() { return TensorData::from_vector<float>({1, 2, 3, -1, 0.5f, 2}, {2, 3}); }
};

// The hand-computed y of Mlp::input(): rows x@w = [1+4-9, -1+1+3] = [-4, 3], [-1+1-6, 1+0.25+2] = [-6, 3.25];
// + b: [-3.75, 2.5], [-5.75, 2.75]; relu and sum over rows: [0, 5.25].
const std::vector<double> kMlpY = {0, 5.25};

TEST(SavedExecutable, RoundTripRunsWithoutThePassPipelineAndBitIdentical) {
  for (Device d : devices()) {
    SCOPED_TRACE(d.to_string());
    Mlp m;
    Executable exe = m.g.compile(d, {{m.x, {{2, 3}, DType::f32}}}, {m.y, m.z});
    std::vector<TensorData> before = exe.run({Mlp::input()});
    expect_close(before[0].to(Device::cpu()), kMlpY, {2}, 1e-6);
    const fs::path path = fs::temp_directory_path() / ("tg_saved_mlp_" + d.to_string() + ".tgx");
    exe.save(path.string());

    const RuntimeStats s0 = runtime_stats();
    Executable loaded = Executable::load(path.string(), d);
    const RuntimeStats s1 = runtime_stats();
    EXPECT_EQ(s1.compiles, s0.compiles);  // the stored optimized graph, no pass pipeline
    EXPECT_EQ(s1.executable_loads, s0.executable_loads + 1);
    EXPECT_EQ(s1.executable_load_recompiles, s0.executable_load_recompiles);
    EXPECT_EQ(loaded.to_string(), exe.to_string());
    EXPECT_EQ(loaded.input_types(), exe.input_types());
    EXPECT_EQ(loaded.output_types(), exe.output_types());
    EXPECT_EQ(loaded.arena_bytes() > 0, exe.arena_bytes() > 0);
    std::vector<TensorData> after = loaded.run({Mlp::input()});
    const RuntimeStats s2 = runtime_stats();
    EXPECT_EQ(s2.compiles, s0.compiles);
    EXPECT_EQ(s2.kernel_compiles, s0.kernel_compiles);  // on CUDA: the stored kernels, no NVRTC
    ASSERT_EQ(after.size(), 2u);
    for (size_t i = 0; i < after.size(); ++i) expect_bit_identical(after[i], before[i]);
    fs::remove(path);
  }
}

// Many attribute structs and regions: the loaded graph prints the same (attributes included) and
// computes the same bits.
TEST(SavedExecutable, AttributesAndRegionsSurvive) {
  for (Device d : devices()) {
    SCOPED_TRACE(d.to_string());
    Graph g;
    Tensor x = g.placeholder({1, 6, 6, 2}, DType::f32, "x");
    Tensor idx = g.placeholder({3}, DType::i32, "idx");
    Tensor n = g.placeholder({}, DType::i32, "n");
    Tensor w = g.constant(TensorData::random_normal({3, 3, 2, 4}, 0.f, 0.5f, 7));
    Tensor c = conv2d(x, w, {.strides = {1, 1}, .padding = Padding::same});
    Tensor p = max_pool2d(c, {.kernel_size = {2, 2}, .strides = {2, 2}});
    Tensor s = slice(p, {.begin = {0, 0, 1, 0}, .end = {1, 3, 3, 4}});
    Tensor t = transpose(pad(s, {.before = {0, 1, 0, 0}, .after = {0, 0, 1, 0}, .mode = PadMode::reflect}), {0, 3, 1, 2});
    Tensor r = reshape(t, {4, -1});
    Tensor gth = gather(r, idx, {.axis = 0});
    Tensor am = cast(argmax(gth, {.axis = 1}), DType::f32);
    Tensor cat = concat({reduce_max(gth, {.axes = {1}}), am}, 0);
    std::vector<Tensor> loop = for_loop(n, {cat}, [&](Tensor i, std::span<const Tensor> a) {
      return std::vector<Tensor>{a[0] * 0.5f + cast(i, DType::f32)};
    });
    std::vector<Tensor> br = if_else(less(reduce_sum(loop[0]), g.constant(0.0, DType::f32)),
                                     [&] { return std::vector<Tensor>{loop[0] - 1.f}; },
                                     [&] { return std::vector<Tensor>{exp(-abs(loop[0]))}; });
    Executable exe = g.compile(d, {{x, {{1, 6, 6, 2}, DType::f32}}, {idx, {{3}, DType::i32}}, {n, {{}, DType::i32}}},
                               {br[0], c});
    std::vector<TensorData> in = {TensorData::random_uniform({1, 6, 6, 2}, -1, 1, 3),
                                  TensorData::from_vector<int32_t>({2, 0, -1}, {3}), TensorData::scalar<int32_t>(3)};
    std::vector<TensorData> want = exe.run(in);
    Executable loaded = Executable::load_from_bytes(exe.save_to_bytes(), d);
    EXPECT_EQ(loaded.to_string(), exe.to_string());
    std::vector<TensorData> got = loaded.run(in);
    for (size_t i = 0; i < got.size(); ++i) expect_bit_identical(got[i], want[i]);
  }
}

TEST(SavedExecutable, VariablesEmbeddedOrBoundByName) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2}, {2}), "v");
  Operation step = assign_variable(v, v + x);
  Executable exe = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}}, {v}, {step});
  const std::vector<uint8_t> embedded = exe.save_to_bytes();
  const std::vector<uint8_t> referenced = exe.save_to_bytes({.embed_variables = false});
  EXPECT_LT(referenced.size(), embedded.size());

  // Embedded: the loaded executable's variables are its own.
  Executable own = Executable::load_from_bytes(embedded, Device::cpu());
  TensorData inc = TensorData::from_vector<float>({10, 20}, {2});
  testing::expect_equal(own.run({inc})[0], {1, 2}, {2});
  testing::expect_equal(own.run({inc})[0], {11, 22}, {2});
  testing::expect_equal(g.variable_value(v), {1, 2}, {2});  // the graph's are untouched

  // Referenced: loading needs a graph to bind them to, then runs update that graph's variable.
  ErrorCode code{};
  const std::string msg = error_of([&] { Executable::load_from_bytes(referenced, Device::cpu(), {}, "ref.tgx"); }, &code);
  EXPECT_EQ(code, ErrorCode::not_found);
  EXPECT_NE(msg.find("ref.tgx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LoadOptions::variables"), std::string::npos) << msg;
  Executable bound = Executable::load_from_bytes(referenced, Device::cpu(), {.variables = &g});
  bound.run({inc});
  testing::expect_equal(g.variable_value(v), {11, 22}, {2});

  // A graph whose variable has another type is refused, naming it.
  Graph other;
  other.variable(TensorData::from_vector<float>({1, 2, 3}, {3}), "v");
  const std::string mismatch = error_of([&] { Executable::load_from_bytes(referenced, Device::cpu(), {.variables = &other}, "ref.tgx"); }, &code);
  EXPECT_EQ(code, ErrorCode::shape_mismatch);  // as include/tg/graph.h says: missing -> not_found
  Graph none;
  error_of([&] { Executable::load_from_bytes(referenced, Device::cpu(), {.variables = &none}, "ref.tgx"); }, &code);
  EXPECT_EQ(code, ErrorCode::not_found);
  EXPECT_NE(mismatch.find("'v' is f32[2] in the file, f32[3] in the graph"), std::string::npos) << mismatch;
}

// Rewrites header field `key`'s value (same length) and repairs the checksums.
std::vector<uint8_t> patch_header(std::vector<uint8_t> bytes, const std::string& key, const std::string& value) {
  const std::string needle = "\n" + key + "=";
  std::string text(bytes.begin(), bytes.end());
  size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos);
  at += needle.size();
  const size_t end = text.find('\n', at);
  EXPECT_EQ(end - at, value.size()) << "patch keeps the length";
  std::memcpy(bytes.data() + at, value.data(), value.size());
  runtime::tgx::repair_checksums(bytes, "patched");
  return bytes;
}

std::string header_value(const std::vector<uint8_t>& bytes, const std::string& key) {
  const std::string text(bytes.begin(), bytes.end());
  const size_t at = text.find("\n" + key + "=") + key.size() + 2;
  return text.substr(at, text.find('\n', at) - at);
}

TEST(SavedExecutable, AnotherArchitectureRecompilesFromTheStoredGraphWithOneLogLine) {
  for (Device d : devices()) {
    SCOPED_TRACE(d.to_string());
    Mlp m;
    Executable exe = m.g.compile(d, {{m.x, {{2, 3}, DType::f32}}}, {m.y, m.z});
    std::vector<TensorData> want = exe.run({Mlp::input()});
    std::vector<uint8_t> bytes = exe.save_to_bytes();
    std::string arch = header_value(bytes, "arch");  // "host" on the CPU, "sm_90" on an H200
    std::string other = arch;
    other.back() = other.back() == '0' ? '1' : '0';
    bytes = patch_header(bytes, "arch", other);
    const RuntimeStats s0 = runtime_stats();
    ::testing::internal::CaptureStderr();
    Executable loaded = Executable::load_from_bytes(bytes, d, {}, "patched.tgx");
    const std::string log = ::testing::internal::GetCapturedStderr();
    const RuntimeStats s1 = runtime_stats();
    EXPECT_EQ(s1.compiles, s0.compiles + 1);
    EXPECT_EQ(s1.executable_load_recompiles, s0.executable_load_recompiles + 1);
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_NE(log.find("patched.tgx: recompiling the saved executable from its graph: arch is " + other +
                       " in the file, " + arch + " here"),
              std::string::npos)
        << log;
    std::vector<TensorData> got = loaded.run({Mlp::input()});
    for (size_t i = 0; i < got.size(); ++i) expect_bit_identical(got[i], want[i]);
  }
}

TEST(SavedExecutable, CpuExecutableLoadsOnCudaAndBack) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here";
  Mlp m;
  Executable cpu = m.g.compile(Device::cpu(), {{m.x, {{2, 3}, DType::f32}}}, {m.y, m.z});
  Executable on_cuda = Executable::load_from_bytes(cpu.save_to_bytes(), Device::cuda(0));
  EXPECT_TRUE(on_cuda.device().is_cuda());
  std::vector<TensorData> r = on_cuda.run({Mlp::input()});
  expect_close(r[0].to(Device::cpu()), kMlpY, {2}, 1e-6);
  Executable back = Executable::load_from_bytes(on_cuda.save_to_bytes(), Device::cpu());
  EXPECT_TRUE(back.device().is_cpu());
  expect_close(back.run({Mlp::input()})[0], kMlpY, {2}, 1e-6);
}

// ---- bad files: each class raises tg::Error naming the file and the section -------------------

std::vector<uint8_t> mlp_bytes(Device d = Device::cpu()) {
  Mlp m;
  Executable exe = m.g.compile(d, {{m.x, {{2, 3}, DType::f32}}}, {m.y, m.z});
  exe.run({Mlp::input()});
  return exe.save_to_bytes();
}

// The offset of section `name`'s payload.
runtime::tgx::Section section(const std::vector<uint8_t>& bytes, const std::string& name) {
  for (const auto& s : runtime::tgx::read_layout(bytes, "t").sections) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no section " << name;
  return {};
}

void expect_load_error(const std::vector<uint8_t>& bytes, ErrorCode want, const std::vector<std::string>& parts) {
  ErrorCode code{};
  const std::string msg = error_of([&] { Executable::load_from_bytes(bytes, Device::cpu(), {}, "bad.tgx"); }, &code);
  ASSERT_FALSE(msg.empty()) << "loaded without an error";
  EXPECT_EQ(code, want) << msg;
  EXPECT_NE(msg.find("bad.tgx"), std::string::npos) << msg;
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(SavedExecutableBadFile, Truncated) {
  std::vector<uint8_t> b = mlp_bytes();
  b.resize(b.size() - 5);  // the last section
  expect_load_error(b, ErrorCode::io_error, {"truncated in section 'algorithms'"});
  b.resize(section(mlp_bytes(), "kernels").offset + 2);
  expect_load_error(b, ErrorCode::io_error, {"truncated in section 'kernels'"});
  b.resize(section(mlp_bytes(), "graph").offset + 10);
  expect_load_error(b, ErrorCode::io_error, {"truncated in section 'graph'"});
  expect_load_error({'T', 'G'}, ErrorCode::io_error, {"truncated in section 'file header'"});
}

TEST(SavedExecutableBadFile, CorruptByte) {
  std::vector<uint8_t> b = mlp_bytes();
  const auto g = section(b, "graph");
  b[g.offset + g.length / 2] ^= 0x40;
  expect_load_error(b, ErrorCode::io_error, {"checksum mismatch in section 'graph'"});
}

TEST(SavedExecutableBadFile, WrongMagic) {
  std::vector<uint8_t> b = mlp_bytes();
  b[1] = 'X';
  expect_load_error(b, ErrorCode::io_error, {"wrong magic in section 'file header'"});
}

TEST(SavedExecutableBadFile, FutureVersion) {
  std::vector<uint8_t> b = mlp_bytes();
  b[4] = 4;
  expect_load_error(b, ErrorCode::unsupported, {"section 'file header': format version 4"});
  b[4] = 0;  // never written by any version: a damaged file (io_error), not a newer one
  expect_load_error(b, ErrorCode::io_error, {"section 'file header': format version 0", "the file is corrupt"});
}

TEST(SavedExecutable, FormatVersion1FilesStillLoad) {
  // Format 1 differs only in its checksum (FNV-1a 64 instead of CRC-32; files with symbols are
  // format 3, static executables stay format 2): a file rewritten as format 1 loads, and its
  // CRC-32 checksums no longer match once it says format 1.
  std::vector<uint8_t> b = mlp_bytes();
  ASSERT_EQ(b[4], 2);
  b[4] = 1;
  expect_load_error(b, ErrorCode::io_error, {"checksum mismatch in section 'header'"});
  runtime::tgx::repair_checksums(b, "v1");
  Mlp m;
  const std::vector<TensorData> want =
      m.g.compile(Device::cpu(), {{m.x, {{2, 3}, DType::f32}}}, {m.y, m.z}).run({Mlp::input()});
  const std::vector<TensorData> got = Executable::load_from_bytes(b, Device::cpu()).run({Mlp::input()});
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) expect_bit_identical(got[k], want[k]);
}

TEST(SavedExecutableBadFile, ChecksumMismatch) {
  std::vector<uint8_t> b = mlp_bytes();
  const auto v = section(b, "variable_data");
  b[v.offset - 1] ^= 0x01;  // the stored checksum's last byte
  expect_load_error(b, ErrorCode::io_error, {"checksum mismatch in section 'variable_data'"});
}

// Bytes that pass the checksum but do not parse (a file written by something else, or a
// checksum collision): malformed sections and unknown op names.
TEST(SavedExecutableBadFile, MalformedSectionsBehindValidChecksums) {
  std::vector<uint8_t> b = mlp_bytes();
  const auto p = section(b, "program");
  std::vector<uint8_t> bad = b;
  bad[p.offset] = 0xff;  // feed count 255: more than the section holds
  runtime::tgx::repair_checksums(bad, "t");
  expect_load_error(bad, ErrorCode::io_error, {"section 'program' malformed"});

  std::string text(b.begin(), b.end());
  const auto g = section(b, "graph");
  const size_t at = text.find("matmul", g.offset);
  ASSERT_NE(at, std::string::npos);
  bad = b;
  bad[at + 5] = 'x';
  runtime::tgx::repair_checksums(bad, "t");
  expect_load_error(bad, ErrorCode::unsupported, {"section 'graph': op 'matmux' is not known to this build"});

  bad = b;  // relu's select: its input edge pointing at a later node
  size_t q = text.find("select", g.offset);  // relu = select(x <= 0, 0, x): not fused on the CPU
  ASSERT_NE(q, std::string::npos);
  q += 6;
  uint32_t name_len = 0;
  std::memcpy(&name_len, &b[q], 4);
  q += 4 + name_len;               // the node's name
  q += 4 + 4;                      // attrs "none"
  ASSERT_EQ(text.substr(q - 4, 4), "none");
  q += 4;                          // input count, then input 0's node (i64)
  bad[q] = 0x7f;
  runtime::tgx::repair_checksums(bad, "t");
  expect_load_error(bad, ErrorCode::io_error, {"section 'graph' malformed"});
}

TEST(SavedExecutableBadFile, BadKernelBinary) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here (kernels are CUDA binaries)";
  std::vector<uint8_t> b = mlp_bytes(Device::cuda(0));
  const auto k = section(b, "kernels");
  ASSERT_GT(k.length, 64u) << "the MLP's CUDA executable has generated kernels";
  // The section: u32 count, then per kernel a key and an image (each a u32 length and bytes).
  auto u32_at = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, &b[at], 4);
    return static_cast<size_t>(v);
  };
  ASSERT_GE(u32_at(k.offset), 1u);
  const size_t key_at = k.offset + 4, key_len = u32_at(key_at);
  const size_t image_at = key_at + 4 + key_len + 4, image_len = u32_at(key_at + 4 + key_len);
  ASSERT_GE(image_len, 16u);
  for (size_t i = 0; i < 16; ++i) b[image_at + i] = 0xee;  // the image's start (ELF or PTX header)
  // Building the file compiled these kernels in this process, and the loader keeps a kernel the
  // process already has under the same key (the file's copy would be the same code). Change the
  // key's last byte so the loader must load the file's (corrupted) image.
  ASSERT_GE(key_len, 1u);
  b[key_at + 4 + key_len - 1] ^= 0x01;
  runtime::tgx::repair_checksums(b, "t");
  ErrorCode code{};
  const std::string msg = error_of([&] { Executable::load_from_bytes(b, Device::cuda(0), {}, "bad.tgx"); }, &code);
  EXPECT_EQ(code, ErrorCode::io_error) << msg;
  EXPECT_NE(msg.find("bad.tgx: section 'kernels'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("refuses its binary"), std::string::npos) << msg;
}

// A deterministic stand-in for the fuzz target in every build: random byte changes with the
// checksums repaired (so the section parsers see them) and cuts; each load either works or
// raises tg::Error, never another exception or a crash (the fuzz target checks with sanitizers).
TEST(SavedExecutableBadFile, RandomCorruptionsAreErrorsNotCrashes) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor w = g.variable(TensorData::from_vector<float>({1, -1, 2, 0.5f, -3, 1}, {3, 2}), "w");
  Tensor n = g.placeholder({}, DType::i32, "n");
  std::vector<Tensor> loop = for_loop(n, {matmul(x, w)}, [&](Tensor i, std::span<const Tensor> a) {
    return std::vector<Tensor>{a[0] * 0.5f + cast(i, DType::f32)};
  });
  Operation step = assign_variable(w, w * 0.5f);
  Executable exe = g.compile(Device::cpu(), {{x, {{2, 3}, DType::f32}}, {n, {{}, DType::i32}}},
                             {reduce_sum(loop[0], {.axes = {0}})}, {step});
  const std::vector<uint8_t> good = exe.save_to_bytes();
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int loaded = 0, errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = good;
    const int flips = 1 + static_cast<int>(next() % 3);
    for (int f = 0; f < flips; ++f) b[next() % b.size()] = static_cast<uint8_t>(next());
    if (iter % 5 == 0) b.resize(next() % b.size());
    try {
      runtime::tgx::repair_checksums(b, "m.tgx");
    } catch (const Error&) {
    }
    try {
      Executable e = Executable::load_from_bytes(b, Device::cpu(), {}, "m.tgx");
      ++loaded;
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("m.tgx"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": not a tg::Error: " << e.what();
    }
  }
  EXPECT_GT(errors, 1000);  // most changes are caught
  std::cout << "[tgx] 3000 corrupted files: " << loaded << " loaded, " << errors << " tg::Error\n";
}

// A file of ~10 MiB of constants (two of them crossing the loader's 2 MiB read pieces and the
// CUDA upload's 8 MiB staging chunks): Executable::load reads it in parallel pieces, checksums
// each piece as it reads it, and on CUDA uploads the constants in the background
// (Backend::prefetch_constants) or, by default, as it reads them (the graph section's pieces,
// backends/file_upload.h; each of its modes is loaded); the loaded executable's runs (the walked first and, on CUDA, the
// recorded second and a replay) give the saved one's bits. A byte flipped on disk inside a
// constant, or in a later section, is a checksum mismatch naming the file and the section.
// (The background upload is opt-in, TG_PREFETCH_CONSTANTS=1: this test turns it on.)
TEST(SavedExecutable, LargeFileReadInPiecesRoundTripsAndCorruptionIsCaught) {
  const tg::testing::ScopedEnv prefetch("TG_PREFETCH_CONSTANTS", "1");
  for (Device d : devices()) {
    SCOPED_TRACE(d.to_string());
    Graph g;
    Tensor x = g.placeholder({4, 1024}, DType::f32, "x");
    Tensor w1 = g.constant(TensorData::random_uniform({1024, 1024}, -0.05f, 0.05f, 11));  // 4 MiB
    Tensor b = g.constant(TensorData::random_uniform({1024}, -0.5f, 0.5f, 12));
    Tensor w2 = g.constant(TensorData::random_uniform({1024, 1536}, -0.05f, 0.05f, 13));  // 6 MiB
    Tensor y = matmul(relu(matmul(x, w1) + b), w2);
    Executable exe = g.compile(d, {{x, {{4, 1024}, DType::f32}}}, {y});
    const TensorData in = TensorData::random_uniform({4, 1024}, -1.f, 1.f, 14);
    const TensorData want = exe.run({in})[0].to(Device::cpu());
    const fs::path path = fs::temp_directory_path() / ("tg_saved_large_" + d.to_string() + ".tgx");
    exe.save(path.string());
    // On CUDA the graph section also goes to the device while it is read (backends/file_upload.h:
    // from the reader's pageable memory by default, over one or several streams, with or without
    // the staging buffers made meanwhile; registered as pinned in place; through pinned slots; or
    // off), with or without the kernels' modules preloaded by a load thread (module_preload.h).
    struct UploadMode {
      const char* mode;
      const char* streams;
      const char* staging_early;
      const char* preload;
    };
    for (const UploadMode m : {UploadMode{"1", "1", "0", "0"}, UploadMode{"1", "3", "1", "1"},
                               UploadMode{"register", "1", "0", "early"}, UploadMode{"register", "3", "0", "0"},
                               UploadMode{"pinned", "1", "1", "1"}, UploadMode{"0", "1", "0", "0"}}) {
      SCOPED_TRACE(std::string(m.mode) + " streams=" + m.streams + " staging_early=" + m.staging_early +
                   " preload=" + m.preload);
      const tg::testing::ScopedEnv mode("TG_STREAM_UPLOAD", m.mode);
      const tg::testing::ScopedEnv streams("TG_UPLOAD_STREAMS", m.streams);
      const tg::testing::ScopedEnv early("TG_STAGING_EARLY", m.staging_early);
      const tg::testing::ScopedEnv preload("TG_PRELOAD_MODULES", m.preload);
      Executable loaded = Executable::load(path.string(), d);
      for (int run = 1; run <= 3; ++run) {
        SCOPED_TRACE(run);
        expect_bit_identical(loaded.run({in})[0], want);
      }
      if (d.is_cpu()) break;
    }
    std::vector<uint8_t> bytes(fs::file_size(path));
    {
      std::ifstream f(path, std::ios::binary);
      f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    const auto graph = section(bytes, "graph"), kernels = section(bytes, "kernels");
    ASSERT_GT(graph.length, size_t{10} << 20);
    for (const auto& [at, name] : std::vector<std::pair<size_t, std::string>>{
             {graph.offset + (size_t{5} << 20) + 123, "graph"}, {kernels.offset, "kernels"}}) {
      std::vector<uint8_t> bad = bytes;
      bad[at] ^= 0x10;
      const fs::path bad_path = fs::temp_directory_path() / ("tg_saved_large_bad_" + d.to_string() + ".tgx");
      std::ofstream(bad_path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bad.data()), static_cast<std::streamsize>(bad.size()));
      ErrorCode code{};
      const std::string msg = error_of([&] { Executable::load(bad_path.string(), d); }, &code);
      EXPECT_EQ(code, ErrorCode::io_error) << msg;
      EXPECT_NE(msg.find(bad_path.string() + ": checksum mismatch in section '" + name + "'"), std::string::npos) << msg;
      fs::remove(bad_path);
    }
    fs::remove(path);
  }
}

TEST(SavedExecutableBadFile, UnwritablePathAndMissingFile) {
  Mlp m;
  Executable exe = m.g.compile(Device::cpu(), {{m.x, {{2, 3}, DType::f32}}}, {m.y});
  ErrorCode code{};
  std::string msg = error_of([&] { exe.save("/nonexistent-dir/x.tgx"); }, &code);
  EXPECT_EQ(code, ErrorCode::io_error);
  EXPECT_NE(msg.find("/nonexistent-dir/x.tgx: cannot open for writing"), std::string::npos) << msg;
  msg = error_of([&] { Executable::load("/nonexistent-dir/x.tgx", Device::cpu()); }, &code);
  EXPECT_EQ(code, ErrorCode::io_error);
  EXPECT_NE(msg.find("/nonexistent-dir/x.tgx: cannot open for reading"), std::string::npos) << msg;
  msg = error_of([&] { Executable().save_to_bytes(); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
}

// A file without one of the sections every load needs: load and read_executable_header (tg inspect)
// both refuse it, naming the file and the section (inspect printed the header of such a file).
TEST(SavedExecutableBadFile, AMissingSectionIsRefusedByLoadAndByTheHeaderReader) {
  const std::vector<uint8_t> good = mlp_bytes();
  const auto layout = runtime::tgx::read_layout(good, "t");
  const fs::path dir = fs::temp_directory_path() / ("tg_missing_section_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const std::string drop : {"program", "graph", "variables", "kernels"}) {
    std::vector<std::pair<std::string, std::string>> kept;
    for (const auto& sec : layout.sections) {
      if (sec.name != drop) kept.emplace_back(sec.name, std::string(good.begin() + sec.offset, good.begin() + sec.offset + sec.length));
    }
    const std::vector<uint8_t> bytes = runtime::tgx::write_file(kept, layout.version);
    expect_load_error(bytes, ErrorCode::io_error, {"section '" + drop + "' is missing"});
    const std::string path = (dir / ("no-" + drop + ".tgx")).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ErrorCode code{};
    const std::string msg = error_of([&] { read_executable_header(path); }, &code);
    EXPECT_EQ(code, ErrorCode::io_error) << msg;
    EXPECT_NE(msg.find(path + ": section '" + drop + "' is missing"), std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

// A save that fails half-way (here the file-size limit: EFBIG, as a full disk gives ENOSPC) leaves
// the file already at the path as it was, and no temporary beside it; the error says why.
TEST(SavedExecutableBadFile, AFailedSaveKeepsTheExistingFile) {
  Mlp m;
  Executable exe = m.g.compile(Device::cpu(), {{m.x, {{2, 3}, DType::f32}}}, {m.y});
  const fs::path dir = fs::temp_directory_path() / ("tg_failed_save_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "x.tgx").string();
  const std::string old_bytes = "an older file that must survive";
  std::ofstream(path, std::ios::binary) << old_bytes;
  const size_t size = exe.save_to_bytes().size();
  ASSERT_GT(size, 200u);
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG
  rlimit small = before;
  small.rlim_cur = 100;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  ErrorCode code{};
  const std::string msg = error_of([&] { exe.save(path); }, &code);
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(code, ErrorCode::io_error) << msg;
  EXPECT_NE(msg.find(path + ": write failed: " + std::strerror(EFBIG)), std::string::npos) << msg;
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), old_bytes);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "no temporary left";
  exe.save(path);  // the limit lifted: replaced whole
  EXPECT_EQ(fs::file_size(path), size);
  const std::vector<float> want = exe.run({Mlp::input()})[0].to_vector<float>();
  EXPECT_EQ(Executable::load(path, Device::cpu()).run({Mlp::input()})[0].to_vector<float>(), want);
  fs::remove_all(dir);
}

TEST(SavedExecutable, SavingToADeviceWritesIntoIt) {
  // /dev/null stays the device: a temporary renamed over it made it a regular file (and every
  // later `> /dev/null` of the machine wrote into that file).
  if (!fs::is_character_file("/dev/null")) GTEST_SKIP() << "no /dev/null device here";
  Mlp m;
  Executable exe = m.g.compile(Device::cpu(), {{m.x, {{2, 3}, DType::f32}}}, {m.y});
  exe.save("/dev/null");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  ErrorCode code{};
  const fs::path dir = fs::temp_directory_path();
  const std::string msg = error_of([&] { exe.save(dir.string()); }, &code);
  EXPECT_EQ(code, ErrorCode::io_error) << msg;
  EXPECT_TRUE(fs::is_directory(dir));
}

}  // namespace
}  // namespace tg
