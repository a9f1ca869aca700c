// The `tg` command, run as a subprocess: help and version, a tiny synthetic training whose last
// line is the test accuracy, a checkpoint round trip through `tg eval`, and run-time errors with
// their exit status 1 (usage errors, status 2: cli_errors_test.cpp).
#include <filesystem>
#include <regex>

#include "test_util.h"
#include "tools/cli_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::last_line;
using testing::run_tg;
using testing::tg_binary;

class TgCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(tg_binary())) FAIL() << "tg binary not found at " << tg_binary() << " (build the tg_cli target, or set TG_CLI)";
  }
};

TEST_F(TgCli, HelpAndVersion) {
  CliResult help = run_tg("--help");
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_NE(help.out.find("train"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("eval"), std::string::npos) << help.out;
  CliResult train_help = run_tg("train --help");
  EXPECT_EQ(train_help.status, 0);
  for (const char* flag : {"--model", "--dataset", "--epochs", "--batch-size", "--optimizer", "--lr",
                           "--device", "--layout", "--seed", "--save", "mnist_cnn"}) {
    EXPECT_NE(train_help.out.find(flag), std::string::npos) << flag;
  }
  CliResult version = run_tg("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_NE(version.out.find("tg (TensorGraph) "), std::string::npos) << version.out;
}

TEST_F(TgCli, TinySyntheticTrainingEndsWithTestAccuracyAndEvalAgrees) {
  testing::TempDir dir;
  const std::string ckpt = dir.file("mlp.safetensors");
  const std::string data = "--dataset synthetic --synthetic-examples 256 --model mlp --batch-size 64";
  CliResult train = run_tg("train " + data + " --epochs 1 --verbose 0 --save '" + ckpt + "'");
  ASSERT_EQ(train.status, 0) << train.out << train.err;
  const std::string line = last_line(train.out);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, std::regex(R"(test accuracy: (\d{1,3}\.\d\d)%)"))) << line;
  const double accuracy = std::stod(m[1]);
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 100.0);
  EXPECT_TRUE(std::regex_search(train.out, std::regex(R"(throughput: \d+\.\d samples/s)"))) << train.out;
  ASSERT_TRUE(fs::exists(ckpt));
  // The saved model evaluated again on the same 64 test examples gives the same accuracy.
  CliResult eval = run_tg("eval " + data + " --load '" + ckpt + "'");
  ASSERT_EQ(eval.status, 0) << eval.out << eval.err;
  EXPECT_EQ(last_line(eval.out), line);
}

TEST_F(TgCli, DataParallelTrainingOnTwoCpuThreadsPrintsOnceAndSavesOnce) {
  testing::TempDir dir;
  const std::string ckpt = dir.file("mlp2.safetensors");
  CliResult train = run_tg("train --dataset synthetic --synthetic-examples 256 --model mlp --batch-size 64 "
                           "--devices 2 --epochs 1 --verbose 2 --save '" + ckpt + "'");
  ASSERT_EQ(train.status, 0) << train.out << train.err;
  EXPECT_EQ(testing::count_occurrences(train.out, "data-parallel over 2 ranks (in_process)"), 1) << train.out;
  EXPECT_EQ(testing::count_occurrences(train.out, "test accuracy: "), 1) << train.out;
  EXPECT_EQ(testing::count_occurrences(train.out, "Epoch 1/1"), 1) << train.out;  // rank 0's progress only
  EXPECT_EQ(testing::count_occurrences(train.out, "saved checkpoint"), 1) << train.out;
  EXPECT_TRUE(fs::exists(ckpt));
}

TEST_F(TgCli, FailedCommandsExitOneWithTheError) {
  CliResult cuda = run_tg("train --device cuda:99");
  EXPECT_EQ(cuda.status, 1);
  EXPECT_NE(cuda.err.find("tg: error (unsupported): [train] --device cuda:99: no such CUDA GPU here"),
            std::string::npos) << cuda.err;
  testing::TempDir dir;  // a directory without MNIST files
  CliResult mnist = run_tg("train --data-dir " + testing::quote(dir.path()));
  EXPECT_EQ(mnist.status, 1);
  EXPECT_NE(mnist.err.find("(not_found): [mnist] neither " + dir.path() + "/train-images-idx3-ubyte.gz"),
            std::string::npos) << mnist.err;
}

}  // namespace
}  // namespace tg
