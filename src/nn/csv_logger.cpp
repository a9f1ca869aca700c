// CSVLogger: the epoch logs of fit as a CSV file (and optionally JSON), include/tg/model.h.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error_util.h"
#include "tg/model.h"

namespace tg::nn {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

// "" -> NaN, else the number ("nan", "inf" included); tg::Error(io_error) for anything else.
double parse_cell(const std::string& cell, const std::string& path) {
  if (cell.empty()) return kNaN;
  try {
    size_t used = 0;
    double v = std::stod(cell, &used);
    if (used == cell.size()) return v;
  } catch (const std::exception&) {
  }
  fail(ErrorCode::io_error, "CSVLogger", "'{}' is not a CSV file of epoch logs (cell '{}' is not a "
       "number); pass another path or append = false", path, cell);
}

// The columns for the first epoch's logs: loss, accuracy, val_loss, val_accuracy, then the other
// keys in name order (Logs is sorted by name).
std::vector<std::string> columns_for(const Logs& logs) {
  static const std::vector<std::string> kFirst = {"loss", "accuracy", "val_loss", "val_accuracy"};
  std::vector<std::string> columns = {"epoch"};
  for (const std::string& k : kFirst) {
    if (logs.count(k)) columns.push_back(k);
  }
  for (const auto& [k, v] : logs) {
    if (std::find(kFirst.begin(), kFirst.end(), k) == kFirst.end() && k != "epoch" && k != "seconds") {
      columns.push_back(k);
    }
  }
  columns.push_back("seconds");
  return columns;
}

}  // namespace

CSVLogger::CSVLogger(std::string path, CSVLoggerOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  if (path_.empty()) fail(ErrorCode::invalid_argument, "CSVLogger", "the path is empty");
  std::error_code ec;
  if (options_.append && std::filesystem::file_size(path_, ec) > 0 && !ec) {
    std::ifstream in(path_);
    std::string line;
    if (std::getline(in, line)) columns_ = split_csv_line(line);
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      std::vector<double> row;
      for (const std::string& cell : split_csv_line(line)) row.push_back(parse_cell(cell, path_));
      row.resize(columns_.size(), kNaN);
      rows_.push_back(std::move(row));
    }
    std::ofstream out(path_, std::ios::app);
    if (!out) fail(ErrorCode::io_error, "CSVLogger", "cannot write '{}'", path_);
    return;
  }
  std::ofstream out(path_, std::ios::trunc);
  if (!out) {
    fail(ErrorCode::io_error, "CSVLogger", "cannot write '{}' (does its directory exist?)", path_);
  }
}

void CSVLogger::on_epoch_begin(Model&, int64_t) { epoch_start_ = now_seconds(); }

void CSVLogger::on_epoch_end(Model& model, int64_t epoch, const Logs& logs) {
  const double seconds = epoch_start_ >= 0 ? now_seconds() - epoch_start_ : kNaN;
  epoch_start_ = -1;
  if (model.communicator().rank() != 0) return;  // data parallelism: rank 0 writes the log
  std::ofstream out(path_, std::ios::app);
  if (!out) fail(ErrorCode::io_error, "CSVLogger", "cannot write '{}'", path_);
  if (columns_.empty()) {
    columns_ = columns_for(logs);
    out << fmt::format("{}\n", fmt::join(columns_, ","));
  }
  std::vector<double> row;
  std::string line;
  for (size_t i = 0; i < columns_.size(); ++i) {
    const std::string& c = columns_[i];
    double v = kNaN;
    if (c == "epoch") {
      v = static_cast<double>(epoch + 1);
    } else if (c == "seconds") {
      v = seconds;
    } else if (auto it = logs.find(c); it != logs.end()) {
      v = it->second;
    }
    row.push_back(v);
    if (i > 0) line += ',';
    // An absent key leaves the cell empty; NaN values print as "nan".
    if (c == "epoch" || c == "seconds" || logs.count(c)) line += fmt::format("{}", v);
  }
  out << line << '\n';
  out.flush();
  if (!out) fail(ErrorCode::io_error, "CSVLogger", "cannot write '{}'", path_);
  rows_.push_back(std::move(row));
  if (!options_.json_path.empty()) write_json();
}

void CSVLogger::write_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t c = 0; c < columns_.size(); ++c) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const std::vector<double>& row : rows_) {
      const double v = row[c];
      if (!std::isfinite(v)) {
        values.push_back(nullptr);
      } else if (columns_[c] == "epoch") {
        values.push_back(static_cast<int64_t>(v));
      } else {
        values.push_back(v);
      }
    }
    j[columns_[c]] = std::move(values);
  }
  // Written next to the target and renamed over it, so a reader never sees half a file.
  const std::string tmp = options_.json_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    if (!out) fail(ErrorCode::io_error, "CSVLogger", "cannot write '{}'", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, options_.json_path, ec);
  if (ec) {
    fail(ErrorCode::io_error, "CSVLogger", "cannot write '{}': {}", options_.json_path, ec.message());
  }
}

}  // namespace tg::nn
