// tg::nn::CSVLogger (include/tg/model.h): the rows equal fit's History, the JSON file holds the
// same columns, appending resumes a file, errors name the path.
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/files.h"
#include "test_util.h"
#include "tg/model.h"

namespace tg::nn {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<double> numbers_of(const std::string& line) {
  std::vector<double> v;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) v.push_back(std::stod(cell));
  return v;
}

// A learnable task: the label is whether x0 + x1 > 0.
std::pair<TensorData, TensorData> task(int64_t n) {
  TensorData x = TensorData::random_normal({n, 2}, 0.f, 1.f, /*seed=*/5);
  std::vector<int32_t> y;
  for (int64_t i = 0; i < n; ++i) y.push_back(x.data<float>()[2 * i] + x.data<float>()[2 * i + 1] > 0);
  return {x, TensorData::from_vector<int32_t>(y, {n})};
}

Model small_model() {
  return Sequential({2}, {Dense(8, {.activation = Act::relu}), Dense(2)}, {.seed = 3});
}

TEST(CSVLogger, RowsAreTheHistoryAndTheJsonHoldsTheSameColumns) {
  tg::testing::TempDir dir;
  auto [x, y] = task(64);
  Model m = small_model();
  m.compile(Optimizer::adam(0.05));
  auto logger = std::make_shared<CSVLogger>(dir.file("log.csv"),
                                            CSVLoggerOptions{.json_path = dir.file("log.json")});
  History h = m.fit(x, y, {.epochs = 3, .batch_size = 16, .validation_split = 0.25,
                           .callbacks = {logger}, .verbose = 0});
  const std::vector<std::string> expected_columns = {"epoch", "loss", "accuracy", "val_loss",
                                                     "val_accuracy", "seconds"};
  EXPECT_EQ(logger->columns(), expected_columns);
  const std::vector<std::string> lines = lines_of(dir.file("log.csv"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "epoch,loss,accuracy,val_loss,val_accuracy,seconds");
  for (size_t e = 0; e < 3; ++e) {
    const std::vector<double> row = numbers_of(lines[e + 1]);
    ASSERT_EQ(row.size(), 6u) << lines[e + 1];
    EXPECT_EQ(row[0], static_cast<double>(e + 1));  // 1-based, as "Epoch 1/3"
    // The shortest round-trip form: the values read back exactly.
    EXPECT_EQ(row[1], h["loss"][e]);
    EXPECT_EQ(row[2], h["accuracy"][e]);
    EXPECT_EQ(row[3], h["val_loss"][e]);
    EXPECT_EQ(row[4], h["val_accuracy"][e]);
    EXPECT_GT(row[5], 0.0);
    EXPECT_LT(row[5], 60.0);
    EXPECT_EQ(logger->rows()[e], row);
  }
  EXPECT_LT(h["loss"][2], h["loss"][0]);  // it learned
  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir.file("log.json")));
  EXPECT_EQ(j["epoch"], nlohmann::json::array({1, 2, 3}));
  ASSERT_EQ(j["loss"].size(), 3u);
  for (size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(j["loss"][e].get<double>(), h["loss"][e]);
    EXPECT_EQ(j["val_accuracy"][e].get<double>(), h["val_accuracy"][e]);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("log.json.tmp")));
}

TEST(CSVLogger, OneLoggerAcrossFitCallsAndAppendResumes) {
  tg::testing::TempDir dir;
  auto [x, y] = task(32);
  Model m = small_model();
  m.compile(Optimizer::sgd(0.1));
  auto logger = std::make_shared<CSVLogger>(dir.file("log.csv"));
  m.fit(x, y, {.epochs = 1, .batch_size = 32, .callbacks = {logger}, .verbose = 0});
  m.fit(x, y, {.epochs = 2, .batch_size = 32, .callbacks = {logger}, .verbose = 0, .initial_epoch = 1});
  std::vector<std::string> lines = lines_of(dir.file("log.csv"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "epoch,loss,accuracy,seconds");
  EXPECT_EQ(numbers_of(lines[2])[0], 2.0);
  // A new logger with append keeps both rows and adds the third epoch.
  auto resumed = std::make_shared<CSVLogger>(dir.file("log.csv"),
                                             CSVLoggerOptions{.append = true, .json_path = dir.file("j.json")});
  EXPECT_EQ(resumed->rows().size(), 2u);
  m.fit(x, y, {.epochs = 3, .batch_size = 32, .callbacks = {resumed}, .verbose = 0, .initial_epoch = 2});
  lines = lines_of(dir.file("log.csv"));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(numbers_of(lines[3])[0], 3.0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir.file("j.json")));
  EXPECT_EQ(j["epoch"], nlohmann::json::array({1, 2, 3}));
  // Without append, a new logger starts the file afresh.
  CSVLogger fresh(dir.file("log.csv"));
  EXPECT_TRUE(lines_of(dir.file("log.csv")).empty());
}

TEST(CSVLogger, Errors) {
  EXPECT_TG_ERROR(CSVLogger(""), ErrorCode::invalid_argument, "[CSVLogger] the path is empty");
  EXPECT_TG_ERROR(CSVLogger("/nonexistent-dir/log.csv"), ErrorCode::io_error,
                  "[CSVLogger] cannot write '/nonexistent-dir/log.csv'");
  tg::testing::TempDir dir;
  std::ofstream(dir.file("not.csv")) << "epoch,loss\n1,abc\n";
  EXPECT_TG_ERROR(CSVLogger(dir.file("not.csv"), {.append = true}), ErrorCode::io_error,
                  "cell 'abc' is not a number");
}

}  // namespace
}  // namespace tg::nn
