// Progress display of fit / evaluate (src/nn/progress.h).
#include "nn/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tg::nn::detail {

Progress::Progress(std::FILE* out, int verbose, int64_t total_steps, std::string title,
                   std::optional<bool> tty)
    : out_(out ? out : stdout), verbose_(verbose), total_(total_steps), title_(std::move(title)),
      start_(Clock::now()) {
  tty_ = tty.has_value() ? *tty : isatty(fileno(out_)) != 0;
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string Progress::duration(double s, bool precise) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 10 && precise) return fmt::format("{:.2f}s", s);
  if (s < 60) return fmt::format("{:.0f}s", s);
  auto total = static_cast<int64_t>(std::llround(s));
  if (total < 3600) return fmt::format("{}m {:02}s", total / 60, total % 60);
  return fmt::format("{}h {:02}m", total / 3600, (total % 3600) / 60);
}

std::string Progress::format_logs(const Logs& logs) {
  static const std::vector<std::string> kFirst = {"loss", "accuracy", "val_loss", "val_accuracy"};
  std::string out;
  auto add = [&](const std::string& k, double v) {
    out += fmt::format("{}{}: {:.4f}", out.empty() ? "" : " - ", k, v);
  };
  for (const auto& k : kFirst) {
    if (auto it = logs.find(k); it != logs.end()) add(k, it->second);
  }
  for (const auto& [k, v] : logs) {
    if (std::find(kFirst.begin(), kFirst.end(), k) == kFirst.end()) add(k, v);
  }
  return out;
}

std::string Progress::bar(int64_t step, int64_t total, int width) {
  if (total <= 0) step = total = 1;
  auto done = static_cast<int>(static_cast<double>(width) * static_cast<double>(step) /
                               static_cast<double>(total));
  done = std::clamp(done, 0, width);
  std::string s;  // built piece by piece, as in line()
  s.reserve(static_cast<size_t>(width) + 2);
  s += '[';
  s.append(static_cast<size_t>(done), '=');
  if (done < width) {
    s += '>';
    s.append(static_cast<size_t>(width - done - 1), '.');
  }
  s += ']';
  return s;
}

std::string Progress::line(int64_t step, int64_t samples, const Logs& logs, bool final) const {
  const double t = elapsed();
  std::string s = title_.empty() ? "" : title_ + " ";
  s += fmt::format("{}/{}", step, total_);
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) about " " + string.
  if (tty_ && verbose_ == 1) (s += ' ') += bar(step, total_);
  if (final) {
    (s += " - ") += duration(t, true);
  } else if (step > 0) {
    (s += " - ETA ") += duration(t / static_cast<double>(step) * static_cast<double>(total_ - step));
  }
  std::string l = format_logs(logs);
  if (!l.empty()) (s += " - ") += l;
  if (t > 0 && samples > 0) s += fmt::format(" - {:.0f} samples/s", static_cast<double>(samples) / t);
  return s;
}

void Progress::emit(const std::string& text, bool newline) {
  if (tty_ && verbose_ == 1) {
    // Redraw in place; pad with blanks over a longer previous line.
    std::string padded = text;
    if (padded.size() < last_width_) padded += std::string(last_width_ - padded.size(), ' ');
    last_width_ = text.size();
    std::fprintf(out_, "\r%s%s", padded.c_str(), newline ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

void Progress::update(int64_t step, int64_t samples, const Logs& logs) {
  if (verbose_ != 1) return;
  const double t = elapsed();
  if (tty_) {
    if (step < total_ && last_draw_ >= 0 && t - last_draw_ < 0.1) return;
  } else {
    if (step >= total_ || lines_ >= kMaxLines || t - std::max(last_draw_, 0.0) < kLineInterval) return;
    ++lines_;
  }
  last_draw_ = t;
  emit(line(step, samples, logs, false), false);
}

void Progress::finish(int64_t samples, const Logs& logs) {
  if (verbose_ == 0) return;
  emit(line(total_, samples, logs, true), true);
}

}  // namespace tg::nn::detail
