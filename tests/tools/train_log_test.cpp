// `tg train --epochs 2 --log-dir d`, run as a process: metrics.csv and metrics.json hold two
// epochs of finite losses and accuracies, and curves.png is a valid PNG (decoded by libpng) with
// both curves drawn: enough pixels in the loss colour and in the accuracy colour (tools/tg/plot.h).
#include <png.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "tools/cli_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::quote;
using testing::run_tg;

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;  // row-major, 4 bytes a pixel
};

// Decodes a PNG file with libpng's simplified API into 8-bit RGBA; empty on failure (`error`
// says why: not a PNG, truncated, ...).
Image read_png(const std::string& path, std::string& error) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Image out;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    error = image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGBA;
  out.rgba.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgba.data(), 0, nullptr)) {
    error = image.message;
    png_image_free(&image);
    return {};
  }
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  return out;
}

// Pixels within a small distance of #rrggbb (anti-aliased edges excluded).
int64_t pixels_near(const Image& img, const std::string& hex) {
  const int r = std::stoi(hex.substr(1, 2), nullptr, 16), g = std::stoi(hex.substr(3, 2), nullptr, 16),
            b = std::stoi(hex.substr(5, 2), nullptr, 16);
  int64_t n = 0;
  for (size_t i = 0; i + 3 < img.rgba.size(); i += 4) {
    if (std::abs(img.rgba[i] - r) + std::abs(img.rgba[i + 1] - g) + std::abs(img.rgba[i + 2] - b) <= 30) ++n;
  }
  return n;
}

TEST(TgTrainLog, TwoEpochsGiveTheCsvJsonAndCurves) {
  testing::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "run1";  // created by tg train
  CliResult r = run_tg("train --dataset synthetic --synthetic-examples 256 --model mlp --batch-size 64 "
                       "--epochs 2 --verbose 0 --log-dir " + quote(dir.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // The curves need gnuplot (scripts/bootstrap.sh installs it; a machine without it, such as the
  // lent GPU machine, gets the CSV and JSON and the message checked by TgCliErrors).
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    ASSERT_NE(r.out.find("gnuplot was not found"), std::string::npos) << r.out;
    GTEST_SKIP() << "gnuplot is not installed here: curves.png is not drawn";
  }
  // tg train says where the record is.
  EXPECT_NE(r.out.find("training log: " + (dir / "metrics.csv").string() + " and " +
                       (dir / "metrics.json").string() + " (per epoch); curves: " +
                       (dir / "curves.png").string()),
            std::string::npos)
      << r.out << r.err;

  std::ifstream csv(dir / "metrics.csv");
  std::string header, row;
  ASSERT_TRUE(std::getline(csv, header));
  EXPECT_EQ(header, "epoch,loss,accuracy,seconds");
  for (int epoch = 1; epoch <= 2; ++epoch) {
    ASSERT_TRUE(std::getline(csv, row)) << "epoch " << epoch << " missing";
    std::vector<double> v;
    std::stringstream ss(row);
    for (std::string cell; std::getline(ss, cell, ',');) v.push_back(std::stod(cell));
    ASSERT_EQ(v.size(), 4u) << row;
    EXPECT_EQ(v[0], epoch);
    EXPECT_TRUE(std::isfinite(v[1]) && v[1] > 0 && v[1] < 10) << row;  // cross-entropy of 10 classes
    EXPECT_TRUE(v[2] >= 0 && v[2] <= 1) << row;
    EXPECT_GT(v[3], 0) << row;
  }
  EXPECT_FALSE(std::getline(csv, row)) << "more rows than epochs: " << row;

  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir / "metrics.json"));
  EXPECT_EQ(j["epoch"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(j["loss"].size(), 2u);
  EXPECT_EQ(j["accuracy"].size(), 2u);

  std::string error;
  Image png = read_png((dir / "curves.png").string(), error);
  ASSERT_FALSE(png.rgba.empty()) << "curves.png is not a valid PNG: " << error;
  EXPECT_EQ(png.width, 960);
  EXPECT_EQ(png.height, 400);
  // Each curve joins its two epochs across its panel, about 260 pixels apart: at least 260
  // pixels long, 2 wide, some 400 pixels in its exact colour even when flat (a steep one, more).
  // Its legend sample and point markers alone make about 120.
  const int64_t loss = pixels_near(png, "#1f77b4"), accuracy = pixels_near(png, "#d62728");
  EXPECT_GT(loss, 250) << "loss curve pixels";
  EXPECT_GT(accuracy, 250) << "accuracy curve pixels";
  // Everything else is mostly the white background.
  EXPECT_GT(pixels_near(png, "#ffffff"), int64_t{png.width} * png.height / 2);
}

// One epoch: each curve is one point; the curves are still drawn, without gnuplot's "empty y
// range" warnings on stderr (its autoscaling of a flat series).
TEST(TgTrainLog, OneEpochDrawsCurvesWithoutWarnings) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot is not installed here";
  testing::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "run1";
  CliResult r = run_tg("train --dataset synthetic --synthetic-examples 128 --model mlp --batch-size 64 "
                       "--epochs 1 --verbose 0 --log-dir " + quote(dir.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("Warning"), std::string::npos) << r.err;
  std::string error;
  Image png = read_png((dir / "curves.png").string(), error);
  ASSERT_FALSE(png.rgba.empty()) << "curves.png is not a valid PNG: " << error;
  // The one point of each curve (its marker) and the legend samples are in their colours.
  EXPECT_GT(pixels_near(png, "#1f77b4"), 20) << "loss marker pixels";
  EXPECT_GT(pixels_near(png, "#d62728"), 20) << "accuracy marker pixels";
}

}  // namespace
}  // namespace tg
