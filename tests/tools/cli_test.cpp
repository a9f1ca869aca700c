// The `tg` command, run as a subprocess: help and version, a tiny synthetic training whose last
// line is the test accuracy, a checkpoint round trip through `tg eval`, and usage / run-time
// errors with their exit statuses (2 for a bad flag, 1 for a failed command).
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "data/files.h"
#include "test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;

// The tg binary: $TG_CLI, else <build>/bin/tg next to <build>/tests/tg_tests.
std::string tg_binary() {
  if (const char* env = std::getenv("TG_CLI")) return env;
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bin" / "tg").string();
}

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `tg <args>` through the shell, capturing stdout, stderr and the exit status.
Result run_tg(const std::string& args) {
  testing::TempDir dir;
  const std::string err_file = dir.file("stderr");
  Result r;
  std::string command = "'" + tg_binary() + "' " + args + " 2>'" + err_file + "'";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t at = t.rfind('\n');
  return at == std::string::npos ? t : t.substr(at + 1);
}

class TgCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(tg_binary())) FAIL() << "tg binary not found at " << tg_binary() << " (build the tg_cli target, or set TG_CLI)";
  }
};

TEST_F(TgCli, HelpAndVersion) {
  Result help = run_tg("--help");
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_NE(help.out.find("train"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("eval"), std::string::npos) << help.out;
  Result train_help = run_tg("train --help");
  EXPECT_EQ(train_help.status, 0);
  for (const char* flag : {"--model", "--dataset", "--epochs", "--batch-size", "--optimizer", "--lr",
                           "--device", "--layout", "--seed", "--save", "mnist_cnn"}) {
    EXPECT_NE(train_help.out.find(flag), std::string::npos) << flag;
  }
  Result version = run_tg("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_NE(version.out.find("tg (TensorGraph) "), std::string::npos) << version.out;
}

TEST_F(TgCli, TinySyntheticTrainingEndsWithTestAccuracyAndEvalAgrees) {
  testing::TempDir dir;
  const std::string ckpt = dir.file("mlp.safetensors");
  const std::string data = "--dataset synthetic --synthetic-examples 256 --model mlp --batch-size 64";
  Result train = run_tg("train " + data + " --epochs 1 --verbose 0 --save '" + ckpt + "'");
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
  Result eval = run_tg("eval " + data + " --load '" + ckpt + "'");
  ASSERT_EQ(eval.status, 0) << eval.out << eval.err;
  EXPECT_EQ(last_line(eval.out), line);
}

TEST_F(TgCli, BadFlagsAreUsageErrors) {
  Result none = run_tg("");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("A subcommand is required"), std::string::npos) << none.err;
  Result bogus = run_tg("train --bogus");
  EXPECT_EQ(bogus.status, 2);
  EXPECT_NE(bogus.err.find("--bogus"), std::string::npos) << bogus.err;
  Result epochs = run_tg("train --epochs 0");
  EXPECT_EQ(epochs.status, 2);
  EXPECT_NE(epochs.err.find("--epochs"), std::string::npos) << epochs.err;
  Result model = run_tg("train --model nosuchnet");
  EXPECT_EQ(model.status, 2);
  EXPECT_NE(model.err.find("nosuchnet"), std::string::npos) << model.err;
  Result layout = run_tg("train --layout hwio");
  EXPECT_EQ(layout.status, 2);
  Result load = run_tg("eval --load /nonexistent/x.safetensors");
  EXPECT_EQ(load.status, 2);
  EXPECT_NE(load.err.find("/nonexistent/x.safetensors"), std::string::npos) << load.err;
}

TEST_F(TgCli, FailedCommandsExitOneWithTheError) {
  Result device = run_tg("train --device tpu");
  EXPECT_EQ(device.status, 1);
  EXPECT_NE(device.err.find("tg: error (invalid_argument): [train] --device tpu"), std::string::npos)
      << device.err;
  Result cuda = run_tg("train --device cuda:99");
  EXPECT_EQ(cuda.status, 1);
  EXPECT_NE(cuda.err.find("--device cuda:99: no such CUDA GPU here"), std::string::npos) << cuda.err;
  Result dir = run_tg("train --data-dir /nonexistent-mnist");
  EXPECT_EQ(dir.status, 1);
  EXPECT_NE(dir.err.find("(not_found): [mnist] neither /nonexistent-mnist/train-images-idx3-ubyte.gz"),
            std::string::npos) << dir.err;
  Result cifar = run_tg("train --dataset cifar10");
  EXPECT_EQ(cifar.status, 1);
  EXPECT_NE(cifar.err.find("--dataset cifar10 needs --data-dir"), std::string::npos) << cifar.err;
}

}  // namespace
}  // namespace tg
