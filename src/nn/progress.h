// The progress display of Model::fit / evaluate: a bar redrawn in place on a terminal, plain
// log lines otherwise.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "tg/model.h"

namespace tg::nn::detail {

/// One epoch's (or one evaluation's) progress. verbose 0 prints nothing; 1 draws a bar redrawn
/// in place ("\r") at most 10 times a second when the output is a terminal, else prints a plain
/// line at most every kLineInterval seconds and at most kMaxLines times before the final line;
/// 2 prints the final line only. The final line ends with the elapsed time and throughput.
class Progress {
 public:
  static constexpr double kLineInterval = 15.0;
  static constexpr int kMaxLines = 3;

  /// `tty` overrides the isatty(out) test (for tests). out == nullptr means stdout.
  Progress(std::FILE* out, int verbose, int64_t total_steps, std::string title,
           std::optional<bool> tty = std::nullopt);
  /// After step `step` (1-based) with `samples` examples seen so far.
  void update(int64_t step, int64_t samples, const Logs& logs);
  /// The last line, with final logs (validation included).
  void finish(int64_t samples, const Logs& logs);

  /// "12s", "3m 05s", "1h 02m", "0.42s" (under 10 s with two decimals on request).
  static std::string duration(double seconds, bool precise = false);
  /// "loss: 0.4123 - accuracy: 0.8712 - val_loss: ..." (loss and accuracy first).
  static std::string format_logs(const Logs& logs);
  /// "[=========>..........]" of `width` inner characters for step of total.
  static std::string bar(int64_t step, int64_t total, int width = 30);

 private:
  using Clock = std::chrono::steady_clock;
  double elapsed() const;
  std::string line(int64_t step, int64_t samples, const Logs& logs, bool final) const;
  void emit(const std::string& text, bool newline);

  std::FILE* out_;
  int verbose_;
  int64_t total_;
  std::string title_;
  bool tty_;
  Clock::time_point start_;
  double last_draw_ = -1;
  int lines_ = 0;
  size_t last_width_ = 0;
};

}  // namespace tg::nn::detail
