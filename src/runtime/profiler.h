// TG_PROFILE: time per op kind and device over every run after an executable's first, printed to
// stderr at exit (core/env.h).
#pragma once
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "ir/graph.h"
#include "tg/tensor_data.h"

namespace tg::runtime {

class Profiler {
 public:
  static Profiler& get();
  void add(const std::string& device, const std::string& row, double seconds, double bytes);
  ~Profiler();

 private:
  struct Row {
    int64_t calls = 0;
    double seconds = 0;
    double bytes = 0;  ///< input + output bytes
  };
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Row> rows_;
};

/// The profile row of a node: its op kind; with TG_PROFILE=shapes also its operand types.
std::string profile_row(const ir::Node& node, std::span<const TensorData> inputs, std::span<const TensorData> outs);

}  // namespace tg::runtime
