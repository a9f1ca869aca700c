#include "runtime/profiler.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/env.h"

namespace tg::runtime {

Profiler& Profiler::get() {
  static Profiler p;
  return p;
}

void Profiler::add(const std::string& device, const std::string& row, double seconds, double bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Row& r = rows_[{device, row}];
  r.calls++;
  r.seconds += seconds;
  r.bytes += bytes;
}

Profiler::~Profiler() {
  if (rows_.empty()) return;
  std::map<std::string, double> total;
  for (const auto& [k, r] : rows_) total[k.first] += r.seconds;
  std::vector<std::pair<double, std::pair<std::string, std::string>>> order;
  for (const auto& [k, r] : rows_) order.push_back({r.seconds, k});
  std::sort(order.rbegin(), order.rend());
  std::fprintf(stderr, "[tg profile] %-8s %-26s %9s %12s %7s %10s\n", "device", "op", "calls", "total ms", "share",
               "GB/s");
  for (const auto& [secs, k] : order) {
    const Row& r = rows_[k];
    std::fprintf(stderr, "[tg profile] %-8s %-26s %9lld %12.3f %6.1f%% %10.1f\n", k.first.c_str(), k.second.c_str(),
                 static_cast<long long>(r.calls), 1e3 * r.seconds,
                 100.0 * r.seconds / std::max(total[k.first], 1e-12), r.bytes / std::max(r.seconds, 1e-12) / 1e9);
  }
}

std::string profile_row(const ir::Node& node, std::span<const TensorData> inputs, std::span<const TensorData> outs) {
  std::string row(ir::op_name(node.kind));
  if (!env::profile_shapes()) return row;
  for (size_t i = 0; i < inputs.size(); ++i) row += (i ? ", " : " ") + inputs[i].type().to_string();
  for (size_t i = 0; i < outs.size(); ++i) row += (i ? ", " : " -> ") + outs[i].type().to_string();
  return row;
}

}  // namespace tg::runtime
