// Every bad invocation of issue 20, run as a process: each exits with status 2 (a usage error:
// the message names the flag or file and the fix, then the usage follows) or 1 (a failed
// command), and no message shows a C++ name (::, ImportOptions, TensorType, std::) or a run of
// more than 20 digits.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

#include "onnx/model_builder.h"
#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/onnx.h"
#include "tools/cli_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using namespace tg::onnx::testing;
using testing::CliResult;
using testing::quote;
using testing::run_tg;
using testing::tg_binary;

struct BadInvocation {
  std::string args;
  int status;
  std::vector<std::string> says;  // substrings of stderr: the flag or file, and the fix
};

// Runs `c` and checks its status, its message and that it speaks the user's language.
void check(const BadInvocation& c) {
  SCOPED_TRACE("tg " + c.args);
  CliResult r = run_tg(c.args);
  EXPECT_EQ(r.status, c.status) << r.out << r.err;
  for (const std::string& s : c.says) EXPECT_NE(r.err.find(s), std::string::npos) << "lacks: " << s << "\n" << r.err;
  if (c.status == 2) EXPECT_NE(r.err.find("Usage: tg"), std::string::npos) << r.err;
  const std::string all = r.out + r.err;
  EXPECT_FALSE(std::regex_search(all, std::regex(R"(::|ImportOptions|TensorType|std::)"))) << all;
  EXPECT_FALSE(std::regex_search(all, std::regex(R"(\d{21})"))) << all;
}

class TgCliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(tg_binary())) FAIL() << "tg binary not found at " << tg_binary();
  }
  testing::TempDir dir_;
};

TEST_F(TgCliErrors, CommandsOptionsAndValues) {
  const std::vector<BadInvocation> cases = {
      {"", 2, {"tg: give a command: train, eval"}},
      {"trian", 2, {"tg: unknown command 'trian'; did you mean 'train'?"}},
      {"--foo", 2, {"tg: unknown option '--foo'", "'tg --help' lists the options"}},
      {"--epochs 3 train", 2, {"--epochs is an option of 'tg train'; give it after the command, e.g. tg train --epochs 3"}},
      {"train --bogus", 2, {"tg train: unknown option '--bogus'", "'tg train --help' lists the options"}},
      {"train --epoch 3", 2, {"unknown option '--epoch'; did you mean '--epochs'?"}},
      {"train --epochs 0", 2, {"tg train: --epochs must be >= 1, got 0"}},
      {"train --epochs 1.5", 2, {"--epochs must be a whole number >= 1, got 1.5"}},
      {"train --epochs", 2, {"--epochs needs a value"}},
      {"train --lr -1", 2, {"--lr must be > 0, got -1"}},
      {"train --lr abc", 2, {"--lr: 'abc' is not a number; give a number > 0"}},
      {"train --batch-size abc", 2, {"--batch-size: 'abc' is not a number; give a whole number >= 1"}},
      {"train --batch-size 99999999999999999999999999", 2, {"--batch-size: '99999999999999999999...' is too large"}},
      {"train --verbose 5", 2, {"--verbose must be 0, 1 or 2, got 5"}},
      {"train --device gpu", 2, {"--device: 'gpu' is not a device; did you mean 'cuda'?", "cuda:N"}},
      {"train --device tpu", 2, {"--device: 'tpu' is not a device", "(use cpu, cuda"}},
      {"train --model resnet", 2, {"--model: 'resnet' is not a model of the zoo", "(choose one of mlp, lenet5, mnist_cnn"}},
      {"train --layout hwio", 2, {"--layout: 'hwio' is not an image layout", "nhwc, nchw"}},
      {"train --dataset cifar10", 2, {"--dataset cifar10 needs --data-dir DIR"}},
      {"train --data-dir /nonexistent-mnist", 2, {"--data-dir: no such directory '/nonexistent-mnist'"}},
      {"train --devices 0", 2, {"tg train: --devices must be >= 1, got 0"}},
      {"train --limit 0", 2, {"--limit 0 leaves no examples: give -1 (all) or a count >= 1"}},
      {"train --save ''", 2, {"--save: an empty path"}},
      {"train extra", 2, {"unexpected argument 'extra' ('tg train' takes options only)"}},
      {"eval", 2, {"--load is required"}},
      {"eval --load /nonexistent/x.safetensors", 2, {"--load: no such file '/nonexistent/x.safetensors'"}},
      // Where the results go is checked before training, not after it.
      {"train --dataset synthetic --save " + quote(dir_.path()), 2,
       {"--save " + dir_.path() + ": is a directory"}},
      {"train --dataset synthetic --save /nonexistent-dir/m.safetensors", 2,
       {"--save /nonexistent-dir/m.safetensors: the directory '/nonexistent-dir' does not exist"}},
      {"train --dataset synthetic --log-dir /dev/null/logs", 2, {"--log-dir /dev/null/logs: '/dev/null' is a file"}},
      // Every batch smaller than the devices: nothing would train.
      {"train --dataset synthetic --synthetic-examples 8 --devices 16 --device cpu", 2,
       {"--devices 16: the batches have 8 examples", "fewer than the devices"}},
  };
  for (const BadInvocation& c : cases) check(c);
}

// An ONNX model file of `m` in the test's directory.
std::string write_model(const fs::path& dir, const std::string& name, const Model& m) {
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << m.bytes();
  return p.string();
}

std::string write_pb(const fs::path& dir, const std::string& name, const Msg& tensor) {
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << tensor.str();
  return p.string();
}

// y = Relu(x + w), x: f32[2,3].
Model add_relu() {
  Model m;
  m.inputs = {value_info("x", kFloat, {2, 3})};
  m.outputs = {value_info("y", kFloat, {2, 3})};
  m.initializers = {float_tensor("w", {3}, {1, -2, 3})};
  m.nodes = {node("Add", {"x", "w"}, {"s"}, "add0"), node("Relu", {"s"}, {"y"}, "relu0")};
  return m;
}

// A Loop whose trip count is the graph input n (i64 scalar) doubling x (f32[2]) with a scan
// output: the scan's length depends on n's value, so the import needs it (like test_loop11).
Model loop_model() {
  Model m;
  m.opset = 13;
  m.inputs = {value_info("n", kInt64, {}), value_info("x", kFloat, {2})};
  m.outputs = {value_info("y", kFloat, {2}), value_info("ys", kFloat, {-1, 2})};
  Msg body = attr_graph("body",
                        {node("Identity", {"cond_in"}, {"cond_out"}), node("Add", {"v", "v"}, {"v2"}),
                         node("Identity", {"v2"}, {"scan"})},
                        {value_info("cond_out", kBool, {}), value_info("v2", kFloat, {2}),
                         value_info("scan", kFloat, {2})},
                        {value_info("i", kInt64, {}), value_info("cond_in", kBool, {}),
                         value_info("v", kFloat, {2})});
  m.nodes = {node("Loop", {"n", "", "x"}, {"y", "ys"}, "loop0", {body})};
  return m;
}

Msg int64_scalar(const std::string& name, int64_t v) {
  return Msg().varint(2, kInt64).bytes(8, name).bytes(9, std::string(reinterpret_cast<const char*>(&v), 8));
}

TEST_F(TgCliErrors, RunNamesTheFileAndTheInput) {
  if (!onnx::available()) GTEST_SKIP() << "no ONNX importer in this build";
  const fs::path d = dir_.path();
  const std::string model = write_model(d, "model.onnx", add_relu());
  const std::string wrong = write_pb(d, "wrong.pb", float_tensor("x", {1, 1, 3, 3}, std::vector<float>(9, 1.f)));
  const std::string good = write_pb(d, "x.pb", float_tensor("x", {2, 3}, {1, 1, 1, -5, 5, -5}));
  const std::string loop = write_model(d, "loop.onnx", loop_model());
  Model unknown = add_relu();
  unknown.nodes[1] = node("FancyRelu", {"s"}, {"y"}, "fancy");
  const std::string bad_op = write_model(d, "fancy.onnx", unknown);
  Model written_twice = add_relu();  // Relu writes 's' again: not single assignment
  written_twice.nodes[1] = node("Relu", {"s"}, {"s"}, "relu0");
  written_twice.nodes.push_back(node("Identity", {"s"}, {"y"}, "id0"));
  const std::string twice = write_model(d, "twice.onnx", written_twice);
  std::ofstream(d / "corrupt.onnx") << "not a model";
  {
    // A .npy file whose header's shape is not numbers.
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n";
    std::ofstream npy(d / "bad.npy", std::ios::binary);
    npy.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size()), 0};
    npy.write(len, 2);
    npy << header;
  }
  const std::vector<BadInvocation> cases = {
      {"run " + quote(model) + " " + quote(wrong), 2,
       {"input file '" + wrong + "' holds f32[1,1,3,3], but " + model + " declares input 'x' as f32[2,3]"}},
      {"run " + quote(model) + " --random --shape x=1,1,abc", 2,
       {"--shape x=1,1,abc: 'abc' is not a dimension; give whole numbers >= 1", "e.g. --shape x=1,3,224,224"}},
      {"run " + quote(model) + " --random --shape y=2,3", 2, {"--shape y=2,3: ", "has no input or dim named 'y' (its inputs: 'x')"}},
      {"run " + quote(model) + " --random --shape x=2", 2, {"--shape x=2: the model declares input 'x' as f32[2,3]"}},
      // A shape given twice: a usage error (the last one won silently).
      {"run " + quote(model) + " --random --shape x=2,3 --shape x=2,3", 2,
       {"--shape x=2,3: 'x' is given twice (first by --shape x=2,3); give each once"}},
      {"run " + quote(model) + " " + quote(good) + " " + quote(good), 2,
       {"2 input files given for " + model + ", which has 1 input ('x')"}},
      // An input given twice: a usage error naming it (the last file won silently).
      {"run " + quote(model) + " " + quote("x=" + good) + " " + quote("x=" + wrong), 2,
       {"x=" + wrong + ": input 'x' is given twice (first by x=" + good + ")"}},
      {"run " + quote(model) + " " + quote(good) + " " + quote("x=" + good), 2,
       {"input 'x' is given twice (first by " + good + ")"}},
      {"run " + quote(model), 2, {"no value for input 'x' (f32[2,3])", "or --random"}},
      {"run " + quote(loop), 2, {"no value for input 'n' (i64[])", "give a file for each input in order"}},
      {"run " + quote((d / "missing.onnx").string()), 2, {"tg run: no such model file"}},
      {"run /dev/null", 2, {"tg run: '/dev/null' is not a regular file (a model file must be one)"}},
      {"run " + quote(bad_op) + " " + quote(good), 1,
       {"tg: error (unsupported): [tg run] importing " + bad_op + " failed: ", "node 'fancy' (FancyRelu"}},
      {"run " + quote((d / "corrupt.onnx").string()), 1, {"[tg run] cannot read the model", "not a valid ONNX"}},
      {"run " + quote(model) + " " + quote((d / "bad.npy").string()), 1,
       {"bad.npy: the .npy header's shape (2, x) is not a list of sizes"}},
      {"run " + quote(model) + " " + quote(d.string()), 2, {"input file '" + d.string() + "' (for input 'x'): a directory"}},
      {"run " + quote(model) + " " + quote(good) + " -o " + quote(good), 2, {"--output-dir " + good + ": '" + good + "' is a file"}},
      {"run " + quote(twice) + " " + quote(good), 1,
       {"node 1 (Relu 'relu0') writes value 's', which node 0 (Add 'add0') already defines"}},
  };
  for (const BadInvocation& c : cases) check(c);
}

// The model the old `tg run` got wrong: its first import failed (the scan's length needs n) and
// was ignored, so the 2 files were "more input files than the model has inputs".
TEST_F(TgCliErrors, RunFeedsAModelWhoseShapesNeedAnInputValue) {
  if (!onnx::available()) GTEST_SKIP() << "no ONNX importer in this build";
  const fs::path d = dir_.path();
  const std::string loop = write_model(d, "loop.onnx", loop_model());
  const std::string n = write_pb(d, "n.pb", int64_scalar("n", 3));
  const std::string x = write_pb(d, "x.pb", float_tensor("x", {2}, {1, -1}));
  CliResult r = run_tg("run " + quote(loop) + " " + quote(n) + " " + quote(x) + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("y: f32[2]  min -8  max 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ys: f32[3,2]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("written to"), std::string::npos) << "wrote outputs without -o: " << r.out;
}

TEST_F(TgCliErrors, CheckpointOfTheOtherLayout) {
  const std::string ckpt = dir_.file("nhwc.safetensors");
  const std::string data = "--dataset synthetic --synthetic-examples 64 --model lenet5 --batch-size 32";
  CliResult train = run_tg("train " + data + " --epochs 1 --verbose 0 --save " + quote(ckpt));
  ASSERT_EQ(train.status, 0) << train.out << train.err;
  check({"eval " + data + " --layout nchw --load " + quote(ckpt), 2,
         {"--layout nchw does not match the checkpoint " + ckpt + ": it was saved by a --layout nhwc model",
          "Evaluate it with --layout nhwc"}});
  CliResult eval = run_tg("eval " + data + " --layout nhwc --load " + quote(ckpt));
  EXPECT_EQ(eval.status, 0) << eval.err;
}

// --save through a file (afile/x) says the file is not a directory (it said "the directory does
// not exist"), and a directory the user cannot write fails before training (it trained, then the
// save failed). Writability is checked as the user: as root (whom access() lets write anywhere)
// the command runs as nobody through setpriv, and the part is skipped without setpriv.
TEST_F(TgCliErrors, SaveThroughAFileOrIntoAReadOnlyDirectory) {
  const std::string file = dir_.file("afile");
  std::ofstream(file) << "x";
  const std::string train = "train --dataset synthetic --synthetic-examples 64 --model mlp --epochs 1 "
                            "--verbose 0 --device cpu --save ";
  check({train + quote(file + "/x.safetensors"), 2, {"'" + file + "' is a file, not a directory"}});
  check({train + quote(file + "/sub/x.safetensors"), 2, {"'" + file + "' is a file, not a directory"}});

  const std::string ro = dir_.file("ro");
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  std::optional<testing::ScopedEnv> as_nobody;
  if (::geteuid() == 0) {
    if (!fs::exists("/usr/bin/setpriv")) GTEST_SKIP() << "root without setpriv: access() cannot refuse";
    const std::string wrapper = dir_.file("as_nobody.sh");
    std::ofstream(wrapper) << "#!/bin/sh\nexec /usr/bin/setpriv --reuid=65534 --regid=65534 "
                              "--clear-groups '" << tg_binary() << "' \"$@\"\n";
    fs::permissions(wrapper, fs::perms::owner_all);
    as_nobody.emplace("TG_CLI", wrapper.c_str());
    // nobody may be unable to start the binary at all (its libraries under a directory only root
    // reads, as in the GPU machine's unpacked /tmp tree): nothing to check then.
    const CliResult probe = run_tg("--help");
    if (probe.status == 127 || probe.err.find("error while loading shared libraries") != std::string::npos) {
      GTEST_SKIP() << "nobody cannot start " << tg_binary() << ": " << probe.err;
    }
  }
  const std::string in_ro = ro + "/m.safetensors";
  check({train + quote(in_ro), 2, {"--save " + in_ro + ": the directory '" + ro + "' is not writable"}});
  EXPECT_FALSE(fs::exists(in_ro));
  // A device is written in place: /dev/null passes although /dev is not writable to nobody.
  CliResult null = run_tg(train + "/dev/null");
  EXPECT_EQ(null.status, 0) << null.out << null.err;
}

}  // namespace
}  // namespace tg
