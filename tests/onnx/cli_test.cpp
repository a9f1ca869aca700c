// `tg run` and `tg inspect` on a tiny hand-built model, run as subprocesses of the built `tg`
// binary ($TG_CLI, else <build>/bin/tg); skipped when the binary or the importer is absent.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "onnx/model_builder.h"
#include "runtime/tgx_format.h"
#include "tg/onnx.h"

namespace tg::onnx {
namespace {

namespace fs = std::filesystem;
using namespace tg::onnx::testing;

std::string tg_binary() {
  if (const char* env = std::getenv("TG_CLI")) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : (exe.parent_path().parent_path() / "bin" / "tg").string();
}

struct Result {
  int status = -1;
  std::string out;
};

// Runs `tg <args>` (stderr merged into the output) and returns the exit status and output.
Result run_tg(const std::string& args) {
  Result r;
  std::string command = "'" + tg_binary() + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class OnnxCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
    if (!fs::exists(tg_binary())) GTEST_SKIP() << "no tg binary at " << tg_binary();
    dir_ = fs::temp_directory_path() / ("tg_onnx_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // y = Relu(x + w), x: [2, 3].
    Model m;
    m.inputs = {value_info("x", kFloat, {2, 3})};
    m.outputs = {value_info("y", kFloat, {2, 3})};
    m.initializers = {float_tensor("w", {3}, {1, -2, 3})};
    m.nodes = {node("Add", {"x", "w"}, {"s"}, "add0"), node("Relu", {"s"}, {"y"}, "relu0")};
    std::ofstream(dir_ / "model.onnx", std::ios::binary) << m.bytes();
    std::ofstream(dir_ / "x.pb", std::ios::binary)
        << float_tensor("x", {2, 3}, {1, 1, 1, -5, 5, -5}).str();
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  fs::path dir_;
};

// The float32 values at the end of a .npy file.
std::vector<float> npy_tail(const fs::path& p, size_t n) {
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(n);
  if (bytes.size() >= 4 * n) std::memcpy(v.data(), bytes.data() + bytes.size() - 4 * n, 4 * n);
  return v;
}

TEST_F(OnnxCli, RunWritesOutputs) {
  Result r = run_tg("run " + path("model.onnx") + " " + path("x.pb") + " -o " + path("out"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("y: f32[2,3]"), std::string::npos) << r.out;
  fs::path npy = dir_ / "out" / "y.npy";
  ASSERT_TRUE(fs::exists(npy)) << r.out;
  EXPECT_EQ(npy_tail(npy, 6), (std::vector<float>{2, 0, 4, 0, 3, 0}));
  // The written .npy feeds the model back (as input x: y + w, then Relu).
  r = run_tg("run " + path("model.onnx") + " x=" + (dir_ / "out" / "y.npy").string() +
             " -o " + path("out2"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out2" / "y.npy", 6), (std::vector<float>{3, 0, 7, 1, 1, 3}));
}

// An input an initializer provides (IR < 4 style) takes name=FILE, which replaces its default
// (the feed was "has no input 'w'"); positional files still go to the inputs without defaults,
// and the input file's type is checked against the declaration.
TEST_F(OnnxCli, RunReplacesAnInputsInitializerDefault) {
  Model m;
  m.inputs = {value_info("x", kFloat, {2, 3}), value_info("w", kFloat, {3})};
  m.outputs = {value_info("y", kFloat, {2, 3})};
  m.initializers = {float_tensor("w", {3}, {1, -2, 3})};
  m.nodes = {node("Add", {"x", "w"}, {"s"}, "add0"), node("Relu", {"s"}, {"y"}, "relu0")};
  std::ofstream(dir_ / "defaults.onnx", std::ios::binary) << m.bytes();
  std::ofstream(dir_ / "w.pb", std::ios::binary) << float_tensor("w", {3}, {10, 20, -30}).str();
  std::ofstream(dir_ / "w2.pb", std::ios::binary) << float_tensor("w", {2}, {10, 20}).str();
  Result r = run_tg("run " + path("defaults.onnx") + " " + path("x.pb") + " -o " + path("out") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out" / "y.npy", 6), (std::vector<float>{2, 0, 4, 0, 3, 0}));  // the default
  r = run_tg("run " + path("defaults.onnx") + " " + path("x.pb") + " 'w=" + (dir_ / "w.pb").string() + "'" +
             " -o " + path("out2") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  // relu(x + [10, 20, -30]) for x = [[1, 1, 1], [-5, 5, -5]].
  EXPECT_EQ(npy_tail(dir_ / "out2" / "y.npy", 6), (std::vector<float>{11, 21, 0, 5, 25, 0}));
  r = run_tg("run " + path("defaults.onnx") + " " + path("x.pb") + " 'w=" + (dir_ / "w2.pb").string() + "'" +
             " --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("holds f32[2], but"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("declares input 'w' as f32[3]"), std::string::npos) << r.out;
}

TEST_F(OnnxCli, RunRandomWithRepeat) {
  Result r = run_tg("run " + path("model.onnx") + " --random --repeat 3 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("written to"), std::string::npos) << "outputs written without -o: " << r.out;
  EXPECT_NE(r.out.find("latency over 3 runs: median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p90"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on cpu, precision f32\n"), std::string::npos) << r.out;
  // --precision is for CUDA: on the CPU the line says it is not applied.
  r = run_tg("run " + path("model.onnx") + " --random --precision bf16 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("on cpu, precision bf16 (CUDA only: the CPU computes convolutions and matrix products in "
                       "float32)"),
            std::string::npos)
      << r.out;
}

TEST_F(OnnxCli, RunWithoutInputsIsAUsageError) {
  Result r = run_tg("run " + path("model.onnx"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no value for input 'x'"), std::string::npos) << r.out;
}

// A .tgx under another name is still recognised by its magic ("TGX1"): run and inspect take it;
// compile refuses it (it takes ONNX models) instead of failing to parse it as one.
TEST_F(OnnxCli, ASavedExecutableIsKnownByItsMagicNotItsName) {
  Result r = run_tg("compile " + path("model.onnx") + " -o " + path("m.tgx") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  fs::copy_file(dir_ / "m.tgx", dir_ / "model.bin");
  r = run_tg("run " + path("model.bin") + " " + path("x.pb") + " -o " + path("out") + " --device cpu");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("executable "), std::string::npos) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out" / "output_0.npy", 6), (std::vector<float>{2, 0, 4, 0, 3, 0}));
  r = run_tg("inspect " + path("model.bin"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("format: tgx"), std::string::npos) << r.out;
  r = run_tg("compile " + path("model.bin") + " -o " + path("again.tgx") + " --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("is a saved executable already"), std::string::npos) << r.out;
}

// `tg compile m.onnx -o m.onnx` would replace the model by the .tgx: a usage error, the model kept.
TEST_F(OnnxCli, CompileOntoTheModelItselfIsAUsageError) {
  const auto before = fs::file_size(dir_ / "model.onnx");
  Result r = run_tg("compile " + path("model.onnx") + " -o " + path("model.onnx") + " --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("is the model itself"), std::string::npos) << r.out;
  EXPECT_EQ(fs::file_size(dir_ / "model.onnx"), before);
  r = run_tg("run " + path("model.onnx") + " --random --device cpu");
  EXPECT_EQ(r.status, 0) << r.out;
}

// A .tgx whose header lacks fields `tg run` prints (nodes, arch; the loader needs neither):
// the run prints "?" for them (it stopped on "map::at", naming neither file nor field).
TEST_F(OnnxCli, RunASavedExecutableWhoseHeaderLacksThePrintedFields) {
  Result r = run_tg("compile " + path("model.onnx") + " -o " + path("m.tgx") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(dir_ / "m.tgx", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string text(bytes.begin(), bytes.end());
  for (const char* key : {"\nnodes=", "\narch="}) {
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    bytes[at + 1] = static_cast<uint8_t>('X');  // "Xodes=", ...: another key of the same length
  }
  runtime::tgx::repair_checksums(bytes, "m.tgx");
  std::ofstream(dir_ / "edited.tgx", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  r = run_tg("run " + path("edited.tgx") + " " + path("x.pb") + " -o " + path("out") + " --device cpu");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(? nodes, compiled for cpu ?)"), std::string::npos) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out" / "output_0.npy", 6), (std::vector<float>{2, 0, 4, 0, 3, 0}));
}

TEST_F(OnnxCli, InspectPrintsTheGraphAndDot) {
  Result r = run_tg("inspect " + path("model.onnx") + " --dot " + path("g.dot"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("x: f32[2,3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("opset 17"), std::string::npos) << r.out;
  std::ifstream dot(dir_ / "g.dot");
  std::string text((std::istreambuf_iterator<char>(dot)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("digraph"), std::string::npos);
  r = run_tg("inspect --list-ops");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, supported_ops_markdown());
}

// tg compile -> .tgx -> tg run / tg inspect (saved executables, docs/design/0008).
TEST_F(OnnxCli, CompileThenRunAndInspectTheSavedExecutable) {
  Result r = run_tg("compile " + path("model.onnx") + " -o " + path("m.tgx") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("compiled"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(dir_ / "m.tgx"));
  r = run_tg("run " + path("m.tgx") + " " + path("x.pb") + " -o " + path("out") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("recompiling"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output_0: f32[2,3]"), std::string::npos) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out" / "output_0.npy", 6), (std::vector<float>{2, 0, 4, 0, 3, 0}));
  r = run_tg("run " + path("m.tgx") + " x=" + (dir_ / "out" / "output_0.npy").string() + " --repeat 2 -o " +
             path("out2") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("latency over 2 runs: median"), std::string::npos) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out2" / "output_0.npy", 6), (std::vector<float>{3, 0, 7, 1, 1, 3}));

  r = run_tg("inspect " + path("m.tgx"));
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* line : {"format_version: 2", "device: cpu", "arch: host", "precision: f32", "feeds: x:f32[2,3]",
                           "targets: f32[2,3]", "arena_bytes: ", "variables: 0 embedded", "section graph: "}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " not in:\n" << r.out;
  }
  r = run_tg("inspect " + path("m.tgx") + " --dot " + path("g.dot"));  // --dot is for ONNX models
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--dot draws an ONNX model's graph"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "g.dot"));
}

// tg compile --dynamic: the model's dim_params stay symbols; the .tgx runs at any size of them.
TEST_F(OnnxCli, CompileDynamicRunsEverySizeOfItsSymbols) {
  Model m;  // y = Relu(x + w), x: [batch, 3]
  m.inputs = {value_info_named("x", kFloat, {"batch", "3"})};
  m.outputs = {value_info_named("y", kFloat, {"batch", "3"})};
  m.initializers = {float_tensor("w", {3}, {1, -2, 3})};
  m.nodes = {node("Add", {"x", "w"}, {"s"}, "add0"), node("Relu", {"s"}, {"y"}, "relu0")};
  std::ofstream(dir_ / "dyn.onnx", std::ios::binary) << m.bytes();
  Result r = run_tg("compile " + path("dyn.onnx") + " -o " + path("d.tgx") + " --dynamic --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("feeds: x:f32[batch,3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("symbols: batch"), std::string::npos) << r.out;
  // x.pb is [2, 3]; a [1, 3] input too, from one file.
  r = run_tg("run " + path("d.tgx") + " " + path("x.pb") + " -o " + path("out") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("recompiling"), std::string::npos) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out" / "output_0.npy", 6), (std::vector<float>{2, 0, 4, 0, 3, 0}));
  std::ofstream(dir_ / "x1.pb", std::ios::binary) << float_tensor("x", {1, 3}, {-1, 3, -4}).str();
  r = run_tg("run " + path("d.tgx") + " " + path("x1.pb") + " -o " + path("out1") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(npy_tail(dir_ / "out1" / "output_0.npy", 3), (std::vector<float>{0, 1, 0}));
  r = run_tg("run " + path("d.tgx") + " --random --shape x=5,3 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("output_0: f32[5,3]"), std::string::npos) << r.out;
  // An input named like tf2onnx's ("x:0"): its name, not the ':' inside it, is what --shape takes.
  Model colon = m;
  colon.inputs = {value_info_named("x:0", kFloat, {"batch", "3"})};
  colon.nodes = {node("Add", {"x:0", "w"}, {"s"}, "add0"), node("Relu", {"s"}, {"y"}, "relu0")};
  std::ofstream(dir_ / "colon.onnx", std::ios::binary) << colon.bytes();
  ASSERT_EQ(run_tg("compile " + path("colon.onnx") + " -o " + path("c.tgx") + " --dynamic --device cpu").status, 0);
  r = run_tg("run " + path("c.tgx") + " --random --shape x:0=4,3 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("output_0: f32[4,3]"), std::string::npos) << r.out;
  r = run_tg("run " + path("d.tgx") + " --random --shape x=5,4 --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--shape x=5,4: the model declares input 'x' as f32[batch,3]"), std::string::npos) << r.out;
  // A symbol's name sizes it in every input that has it (the .tgx and the .onnx alike).
  for (const auto& [model, output] : {std::pair<std::string, std::string>{"d.tgx", "output_0"}, {"dyn.onnx", "y"}}) {
    SCOPED_TRACE(model);
    r = run_tg("run " + path(model) + " --random --shape batch=6 --device cpu");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(output + ": f32[6,3]"), std::string::npos) << r.out;
  }
  r = run_tg("run " + path("d.tgx") + " --random --shape batch=6,2 --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--shape batch=6,2: 'batch' is a dim of the inputs: give one size"), std::string::npos)
      << r.out;
}

TEST_F(OnnxCli, SavedExecutableUsageAndFileErrors) {
  ASSERT_EQ(run_tg("compile " + path("model.onnx") + " -o " + path("m.tgx") + " --device cpu").status, 0);
  Result r = run_tg("run " + path("m.tgx") + " --random --precision f16 --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("was compiled with precision f32"), std::string::npos) << r.out;
  r = run_tg("run " + path("m.tgx") + " --shape x=4,3 --random --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--shape x=4,3: the model declares input 'x' as f32[2,3]"), std::string::npos) << r.out;
  r = run_tg("run " + path("m.tgx") + " --device cpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no value for input 'x'"), std::string::npos) << r.out;
  // A flipped byte in the last section: the checksum names it.
  {
    std::fstream f(dir_ / "m.tgx", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = 0;
    f.get(c);
    f.seekp(-1, std::ios::end);
    f.put(static_cast<char>(c ^ 1));
  }
  r = run_tg("run " + path("m.tgx") + " --random --device cpu");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("m.tgx: checksum mismatch in section 'algorithms'"), std::string::npos) << r.out;
  r = run_tg("inspect " + path("m.tgx"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("checksum mismatch in section 'algorithms'"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tg::onnx
