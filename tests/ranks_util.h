// Test helper: simulated ranks of an in_process communicator group (include/tg/collective.h), one
// thread per rank, as used by the collective op tests and the data-parallel fit tests.
#pragma once
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "tg/collective.h"

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

}  // namespace tg::testing
