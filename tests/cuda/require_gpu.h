// The CUDA tests' first line: skips the test (with a message) where no CUDA GPU is usable (no
// device, or a build without CUDA), so the suite passes on CPU-only machines such as CI's.
#pragma once
#include <gtest/gtest.h>

#include "tg/tg.h"

#define REQUIRE_GPU()                                                                                 \
  if (::tg::Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)"
