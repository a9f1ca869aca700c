// Test helper: simulated ranks of an in_process communicator group (include/tg/collective.h), one
// thread per rank, as used by the collective op tests and the data-parallel fit tests.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tg/collective.h"
#include "tg/tensor_data.h"

namespace tg::testing {

/// Runs body(rank, comm) on one thread per rank of a new in_process group of `world` ranks and
/// returns each rank's result; after every thread finished, rethrows the error of the lowest rank
/// that raised one.
template <typename R>
std::vector<R> on_ranks(int world, const std::function<R(int, const Communicator&)>& body,
                        InProcessOptions options = {.timeout_seconds = 60}) {
  std::vector<Communicator> comms = Communicator::in_process(world, options);
  std::vector<R> out(static_cast<size_t>(world));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        out[r] = body(r, comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

/// Named f32 tensors (a model's weights) in a fixed order.
using NamedTensors = std::vector<std::pair<std::string, TensorData>>;

/// The largest over the tensors of max_i |a_i - b_i| / max_i |b_i| (names and sizes must agree:
/// gtest failures otherwise). The data-parallel checks' "relative" weight difference.
inline double max_relative(const NamedTensors& a, const NamedTensors& b) {
  double worst = 0;
  EXPECT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    EXPECT_EQ(a[k].first, b[k].first);
    auto va = a[k].second.to_vector<float>(), vb = b[k].second.to_vector<float>();
    EXPECT_EQ(va.size(), vb.size());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
      diff = std::max(diff, std::fabs(double(va[i]) - vb[i]));
      scale = std::max(scale, std::fabs(double(vb[i])));
    }
    worst = std::max(worst, diff == 0 ? 0.0 : diff / std::max(scale, 1e-30));
  }
  return worst;
}

}  // namespace tg::testing
