// core/env.h: the integer TG_* variables read as whole numbers in their ranges; a value that is not
// a whole number gives the default (it was read as 0, i.e. the range's low end), one outside the
// range (beyond int64 included) raises invalid_argument naming the variable, value and range.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/env.h"
#include "test_util.h"

namespace tg {
namespace {

// Sets `name` to `value` for the scope, restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// One setting of a variable and what its reader gives: `want`, or an invalid_argument error whose
// message holds `error`.
struct IntegerCase {
  const char* name;
  const char* value;
  std::function<long long()> read;
  std::optional<long long> want;
  const char* error;
};

long long delay_or_minus_one() { return env::prepare_delay_ms().value_or(-1); }

void check_cases(const std::vector<IntegerCase>& cases) {
  for (const IntegerCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    ScopedEnv e(c.name, c.value);
    if (c.error != nullptr) {
      EXPECT_TG_ERROR(c.read(), ErrorCode::invalid_argument, c.error);
    } else {
      EXPECT_EQ(c.read(), *c.want);
    }
  }
}

TEST(Env, IntegerVariablesAreWholeNumbersInTheirRanges) {
  check_cases({
      // not a whole number: the default, not 1
      {"TG_SPECIALIZATIONS", "abc", env::specialization_cache_size, 16, nullptr},
      {"TG_SPECIALIZATIONS", "7x", env::specialization_cache_size, 16, nullptr},
      {"TG_SPECIALIZATIONS", "7", env::specialization_cache_size, 7, nullptr},
      // out of range: raised, not clamped to 4096 without a word
      {"TG_SPECIALIZATIONS", "100000", env::specialization_cache_size, std::nullopt,
       "TG_SPECIALIZATIONS=100000 is outside the range [1, 4096]"},
      {"TG_SPECIALIZATIONS", "0", env::specialization_cache_size, std::nullopt, "[1, 4096]"},
      {"TG_SPECIALIZATIONS", "4096", env::specialization_cache_size, 4096, nullptr},
      {"TG_LOOP_UNROLL", "0", env::loop_unroll, std::nullopt,
       "TG_LOOP_UNROLL=0 is outside the range [1, 32]"},
      // beyond int64: out of range too, not "not a whole number"
      {"TG_LOOP_UNROLL", "99999999999999999999999", env::loop_unroll, std::nullopt,
       "TG_LOOP_UNROLL=99999999999999999999999 is outside the range [1, 32]"},
      {"TG_UNROLL_LIMIT", "-99999999999999999999999", env::unroll_limit, std::nullopt,
       "is outside the range [0, 9223372036854775807]"},
      {"TG_CONDITION_STREAMS", "-3", env::condition_streams, std::nullopt,
       "TG_CONDITION_STREAMS=-3 is outside the range [0, 8]"},
      {"TG_CONDITION_STREAMS", "8", env::condition_streams, 8, nullptr},
      {"TG_UNROLL_LIMIT", "", env::unroll_limit, 8192, nullptr},
      {"TG_UPLOAD_STREAMS", "4", env::upload_streams, 4, nullptr},
      {"TG_UPLOAD_STREAMS", "two", env::upload_streams, 1, nullptr},
      {"TG_UPLOAD_STREAMS", "17", env::upload_streams, std::nullopt,
       "TG_UPLOAD_STREAMS=17 is outside the range [1, 16]"},
  });
}

// TG_PREPARE_THREADS and TG_PREPARE_DELAY_MS (the CUDA backend's preparation of stored choices)
// through the same reader: they were atoi'd ("abc" was 0 threads, clamped to 1 without a word; a
// negative delay became 0). An unset or non-numeric delay is "none" (-1 here).
TEST(Env, PrepareThreadsAndDelayAreWholeNumbersInTheirRanges) {
  EXPECT_EQ(env::prepare_threads(), 4);
  EXPECT_EQ(env::prepare_delay_ms(), std::nullopt);
  check_cases({
      // atoi read it as 0, clamped to 1
      {"TG_PREPARE_THREADS", "abc", env::prepare_threads, 4, nullptr},
      {"TG_PREPARE_THREADS", "16", env::prepare_threads, 16, nullptr},
      {"TG_PREPARE_THREADS", "0", env::prepare_threads, std::nullopt,
       "TG_PREPARE_THREADS=0 is outside the range [1, 16]"},
      {"TG_PREPARE_THREADS", "17", env::prepare_threads, std::nullopt, "[1, 16]"},
      {"TG_PREPARE_DELAY_MS", "0", delay_or_minus_one, 0, nullptr},
      {"TG_PREPARE_DELAY_MS", "3000", delay_or_minus_one, 3000, nullptr},
      {"TG_PREPARE_DELAY_MS", "", delay_or_minus_one, -1, nullptr},
      {"TG_PREPARE_DELAY_MS", "15O", delay_or_minus_one, -1, nullptr},  // a letter O
      {"TG_PREPARE_DELAY_MS", "-5", delay_or_minus_one, std::nullopt,
       "TG_PREPARE_DELAY_MS=-5 is outside the range [0, 2147483647]"},
      {"TG_PREPARE_DELAY_MS", "3000000000", delay_or_minus_one, std::nullopt, "[0, 2147483647]"},
  });
}

// compile's rewrite switches (on unless "0"), TG_MATMUL_WEIGHTS_TN (only "1") and TG_DUMP_GRAPH:
// each switch unset, then set to a value, and what its reader gives each time.
TEST(Env, CompileRewriteSwitches) {
  struct Switch {
    const char* name;
    bool (*read)();
    bool unset;
    const char* value;
    bool set;
  };
  const Switch switches[] = {
      {"TG_PROJECT_HEADS", env::project_heads, true, "0", false},
      {"TG_MATMUL_FOLDS", env::matmul_folds, true, "0", false},
      {"TG_MERGE_PROJECTIONS", env::merge_projections, true, "0", false},
      {"TG_MERGE_SIBLINGS", env::merge_siblings, true, "yes", true},
      {"TG_MATMUL_WEIGHTS_TN", env::matmul_weights_tn, false, "1", true},
  };
  for (const Switch& w : switches) {
    SCOPED_TRACE(w.name);
    EXPECT_EQ(w.read(), w.unset);
    ScopedEnv set(w.name, w.value);
    EXPECT_EQ(w.read(), w.set);
  }
  EXPECT_EQ(env::dump_graph_path(), "");
  ScopedEnv dump("TG_DUMP_GRAPH", "/tmp/g.txt");
  EXPECT_EQ(env::dump_graph_path(), "/tmp/g.txt");
}

// The CUDA backend's other variables, read here now as they were there.
TEST(Env, CudaBackendVariablesReadAsBefore) {
  EXPECT_EQ(env::first_run_kernels_override(), std::nullopt);
  EXPECT_TRUE(env::trust_stored_algos());
  EXPECT_TRUE(env::prepare_choices());
  EXPECT_FALSE(env::prefetch_constants());
  EXPECT_FALSE(env::cudnn_plan_json());
  EXPECT_FALSE(env::staging_early());
  EXPECT_EQ(env::stream_upload(), "1");
  EXPECT_EQ(env::preload_modules(), "0");
  EXPECT_EQ(env::upload_streams(), 1);
  {
    ScopedEnv a("TG_FIRST_RUN_KERNELS", "1"), b("TG_TRUST_STORED_ALGOS", "0"),
        c("TG_PREPARE_CHOICES", "0"), d("TG_PREFETCH_CONSTANTS", "1"),
        e("TG_CUDNN_PLAN_JSON", "1"), f("TG_STAGING_EARLY", "1"), g("TG_STREAM_UPLOAD", "pinned"),
        h("TG_PRELOAD_MODULES", "early"), i("TG_UPLOAD_STREAMS", "99");
    EXPECT_EQ(env::first_run_kernels_override(), true);
    EXPECT_FALSE(env::trust_stored_algos());
    EXPECT_FALSE(env::prepare_choices());
    EXPECT_TRUE(env::prefetch_constants());
    EXPECT_TRUE(env::cudnn_plan_json());
    EXPECT_TRUE(env::staging_early());
    EXPECT_EQ(env::stream_upload(), "pinned");
    EXPECT_EQ(env::preload_modules(), "early");
    EXPECT_THROW(env::upload_streams(), Error);  // outside 1..16: raised (was clamped to 16 without a word)
  }
  {
    ScopedEnv a("TG_FIRST_RUN_KERNELS", "0"), b("TG_TRUST_STORED_ALGOS", "1"),
        c("TG_PREFETCH_CONSTANTS", "yes");
    EXPECT_EQ(env::first_run_kernels_override(), false);
    EXPECT_TRUE(env::trust_stored_algos());
    EXPECT_FALSE(env::prefetch_constants());
  }
}

}  // namespace
}  // namespace tg
