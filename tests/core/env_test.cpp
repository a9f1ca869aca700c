// core/env.h: the integer TG_* variables read as whole numbers, clamped to their ranges; a value
// that is not a whole number gives the default (it was read as 0, i.e. the range's low end).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/env.h"

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
  {
    ScopedEnv e("TG_SPECIALIZATIONS", "100000");
    EXPECT_EQ(env::specialization_cache_size(), 4096);
  }
  {
    ScopedEnv e("TG_LOOP_UNROLL", "0");
    EXPECT_EQ(env::loop_unroll(), 1);
  }
  {
    ScopedEnv e("TG_LOOP_UNROLL", "99999999999999999999999");
    EXPECT_EQ(env::loop_unroll(), 32);  // out of range for int64: the default
  }
  {
    ScopedEnv e("TG_CONDITION_STREAMS", "-3");
    EXPECT_EQ(env::condition_streams(), 0);
  }
  {
    ScopedEnv e("TG_UNROLL_LIMIT", "");
    EXPECT_EQ(env::unroll_limit(), 8192);
  }
}

}  // namespace
}  // namespace tg
