// core/env.h: the integer TG_* variables read as whole numbers in their ranges; a value that is not
// a whole number gives the default (it was read as 0, i.e. the range's low end), one outside the
// range (beyond int64 included) raises invalid_argument naming the variable, value and range.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

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

TEST(Env, IntegerVariablesAreWholeNumbersInTheirRanges) {
  {
    ScopedEnv e("TG_SPECIALIZATIONS", "abc");
    EXPECT_EQ(env::specialization_cache_size(), 16);  // the default, not 1
  }
  {
    ScopedEnv e("TG_SPECIALIZATIONS", "7x");
    EXPECT_EQ(env::specialization_cache_size(), 16);
  }
  {
    ScopedEnv e("TG_SPECIALIZATIONS", "7");
    EXPECT_EQ(env::specialization_cache_size(), 7);
  }
  {  // out of range: raised, not clamped to 4096 without a word
    ScopedEnv e("TG_SPECIALIZATIONS", "100000");
    EXPECT_TG_ERROR(env::specialization_cache_size(), ErrorCode::invalid_argument,
                    "TG_SPECIALIZATIONS=100000 is outside the range [1, 4096]");
  }
  {
    ScopedEnv e("TG_SPECIALIZATIONS", "0");
    EXPECT_TG_ERROR(env::specialization_cache_size(), ErrorCode::invalid_argument, "[1, 4096]");
  }
  {
    ScopedEnv e("TG_SPECIALIZATIONS", "4096");
    EXPECT_EQ(env::specialization_cache_size(), 4096);
  }
  {
    ScopedEnv e("TG_LOOP_UNROLL", "0");
    EXPECT_TG_ERROR(env::loop_unroll(), ErrorCode::invalid_argument,
                    "TG_LOOP_UNROLL=0 is outside the range [1, 32]");
  }
  {  // beyond int64: out of range too, not "not a whole number"
    ScopedEnv e("TG_LOOP_UNROLL", "99999999999999999999999");
    EXPECT_TG_ERROR(env::loop_unroll(), ErrorCode::invalid_argument,
                    "TG_LOOP_UNROLL=99999999999999999999999 is outside the range [1, 32]");
  }
  {
    ScopedEnv e("TG_UNROLL_LIMIT", "-99999999999999999999999");
    EXPECT_TG_ERROR(env::unroll_limit(), ErrorCode::invalid_argument,
                    "is outside the range [0, 9223372036854775807]");
  }
  {
    ScopedEnv e("TG_CONDITION_STREAMS", "-3");
    EXPECT_TG_ERROR(env::condition_streams(), ErrorCode::invalid_argument,
                    "TG_CONDITION_STREAMS=-3 is outside the range [0, 8]");
  }
  {
    ScopedEnv e("TG_CONDITION_STREAMS", "8");
    EXPECT_EQ(env::condition_streams(), 8);
  }
  {
    ScopedEnv e("TG_UNROLL_LIMIT", "");
    EXPECT_EQ(env::unroll_limit(), 8192);
  }
}

// TG_PREPARE_THREADS and TG_PREPARE_DELAY_MS (the CUDA backend's preparation of stored choices)
// through the same reader: they were atoi'd ("abc" was 0 threads, clamped to 1 without a word; a
// negative delay became 0).
TEST(Env, PrepareThreadsAndDelayAreWholeNumbersInTheirRanges) {
  EXPECT_EQ(env::prepare_threads(), 4);
  EXPECT_EQ(env::prepare_delay_ms(), std::nullopt);
  {
    ScopedEnv e("TG_PREPARE_THREADS", "abc");
    EXPECT_EQ(env::prepare_threads(), 4);
  }
  {
    ScopedEnv e("TG_PREPARE_THREADS", "16");
    EXPECT_EQ(env::prepare_threads(), 16);
  }
  {
    ScopedEnv e("TG_PREPARE_THREADS", "0");
    EXPECT_TG_ERROR(env::prepare_threads(), ErrorCode::invalid_argument,
                    "TG_PREPARE_THREADS=0 is outside the range [1, 16]");
  }
  {
    ScopedEnv e("TG_PREPARE_THREADS", "17");
    EXPECT_TG_ERROR(env::prepare_threads(), ErrorCode::invalid_argument, "[1, 16]");
  }
  {
    ScopedEnv e("TG_PREPARE_DELAY_MS", "0");
    EXPECT_EQ(env::prepare_delay_ms(), 0);
  }
  {
    ScopedEnv e("TG_PREPARE_DELAY_MS", "3000");
    EXPECT_EQ(env::prepare_delay_ms(), 3000);
  }
  {
    ScopedEnv e("TG_PREPARE_DELAY_MS", "");
    EXPECT_EQ(env::prepare_delay_ms(), std::nullopt);
  }
  {
    ScopedEnv e("TG_PREPARE_DELAY_MS", "15O");  // a letter O
    EXPECT_EQ(env::prepare_delay_ms(), std::nullopt);
  }
  {
    ScopedEnv e("TG_PREPARE_DELAY_MS", "-5");
    EXPECT_TG_ERROR(env::prepare_delay_ms(), ErrorCode::invalid_argument,
                    "TG_PREPARE_DELAY_MS=-5 is outside the range [0, 2147483647]");
  }
  {
    ScopedEnv e("TG_PREPARE_DELAY_MS", "3000000000");
    EXPECT_TG_ERROR(env::prepare_delay_ms(), ErrorCode::invalid_argument, "[0, 2147483647]");
  }
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
    EXPECT_EQ(env::upload_streams(), 16);  // atoi clamped to 1..16, as before
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
