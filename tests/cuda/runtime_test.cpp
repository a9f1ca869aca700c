// The CUDA runtime layer: tensors on the device, copies, the caching allocator, out-of-memory
// errors, variables kept on the device across runs. Skipped (with a message) without a GPU.
#include <gtest/gtest.h>

#include <numeric>

#include "test_util.h"
#include "cuda/require_gpu.h"
#include "tg/tg.h"
#ifdef TG_HAVE_CUDA
#include <nvrtc.h>

#include "backends/cuda/nvrtc/compiler.h"
#include "backends/cuda/runtime.h"
#endif

namespace tg {
namespace {

TEST(CudaRuntime, CopiesRoundTripSmallAndLarge) {
  REQUIRE_GPU();
  // 128 Ki floats (512 KiB): straight through cudaMemcpyAsync while the staging buffers do not
  // exist yet (a fresh process), else staged; 256 Ki + 3 floats: over 1 MiB, always staged;
  // 5 Mi floats: more than one staging buffer.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1} << 17, (int64_t{1} << 18) + 3, int64_t{5} << 20}) {
    std::vector<float> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), 0.5f);
    TensorData h = TensorData::from_vector<float>(v, {n});
    TensorData d = h.to(Device::cuda(0));
    EXPECT_EQ(d.device(), Device::cuda(0));
    EXPECT_EQ(d.type(), h.type());
    TensorData d2 = d.clone();  // device-to-device
    EXPECT_EQ(d2.to_vector<float>(), v) << n;
    EXPECT_EQ(d.to_vector<float>(), v) << n;
  }
  TensorData d = TensorData::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}).to(Device::cuda(0));
  EXPECT_EQ(d.element_as_double(4), 5.0);
  EXPECT_EQ(d.to_string(), "i32[2,3] {1, 2, 3, 4, 5, 6}");
  EXPECT_TG_ERROR(d.data<int32_t>(), ErrorCode::unsupported, "not host-accessible");
}

#ifdef TG_HAVE_CUDA
TEST(CudaAllocator, ReleasedBlocksAreReused) {
  REQUIRE_GPU();
  const size_t bytes = (size_t{3} << 20) + 5;  // class: 4 MiB
  // No block of that class cached by earlier tests of the process (one would be handed out first:
  // the test failed after CudaFirstRunKernels.* in one filtered run).
  cuda::device_allocator_trim(0);
  void* first = nullptr;
  {
    auto b = cuda::device_allocate(0, bytes);
    first = b.get();
  }
  auto before = cuda::device_allocator_stats(0);
  auto b = cuda::device_allocate(0, bytes);
  auto after = cuda::device_allocator_stats(0);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(after.cuda_mallocs, before.cuda_mallocs);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use + (size_t{4} << 20));
  EXPECT_GE(after.peak_bytes_in_use, after.bytes_in_use);
}

TEST(CudaAllocator, OutOfMemoryRaisesAndTheProcessGoesOn) {
  REQUIRE_GPU();
  const int64_t huge = int64_t{1} << 38;  // 1 TiB of f32
  try {
    TensorData t({huge}, DType::f32, Device::cuda(0));
    FAIL() << "allocated 1 TiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("asked for 1099511627776 bytes on cuda:0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" free of "), std::string::npos) << e.what();
  }
  TensorData ok = TensorData::from_vector<float>({1, 2}, {2}).to(Device::cuda(0));
  EXPECT_EQ(ok.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(CudaRuntime, ConstantsAreUploadedOnce) {
  REQUIRE_GPU();
  TensorData h = TensorData::from_vector<float>({1, 2, 3}, {3});
  TensorData a = cuda::upload_cached(h, 0), b = cuda::upload_cached(h, 0);
  EXPECT_EQ(a.storage_ptr(), b.storage_ptr());
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}
#endif

TEST(CudaRuntime, VariablesStayOnTheDeviceAcrossRuns) {
  REQUIRE_GPU();
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2}, {2}), "v");
  Tensor one = g.constant(TensorData::from_vector<float>({1, 1}, {2}));
  Operation step = assign_variable(v, add(v, one));
  Executable exe = g.compile(Device::cuda(0), {}, {}, {step});
  exe.run({});
  exe.run({});
  TensorData now = g.variable_value(v);
  EXPECT_EQ(now.device(), Device::cuda(0));
  EXPECT_EQ(now.to_vector<float>(), (std::vector<float>{3, 4}));
  // A CPU executable of the same graph reads the same state.
  Executable cpu = g.compile(Device::cpu(), {}, {v});
  EXPECT_EQ(cpu.run({})[0].to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(CudaRuntime, ExecutableOutputsLiveOnTheDevice) {
  REQUIRE_GPU();
  Graph g;
  Tensor x = g.placeholder({2, 2}, DType::f32, "x");
  Tensor y = reshape(x, {4});
  Executable exe = g.compile(Device::cuda(0), {{x, {{2, 2}, DType::f32}}}, {y});
  auto out = exe.run({TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2})});
  EXPECT_EQ(out[0].device(), Device::cuda(0));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

#ifdef TG_HAVE_CUDA
// Saved executables' kernel images are checked before the driver sees them (with lazy module
// loading the driver accepts a damaged image). A real CUBIN and PTX from NVRTC (no GPU needed).
TEST(CudaKernelImages, DamagedImagesAreRefusedBeforeTheDriverSeesThem) {
  const char* src = "extern \"C\" __global__ void twice(float* p) { p[threadIdx.x] *= 2.f; }";
  nvrtcProgram prog = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&prog, src, "twice.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const char* opts[] = {"--gpu-architecture=sm_90"};
  ASSERT_EQ(nvrtcCompileProgram(prog, 1, opts), NVRTC_SUCCESS);
  size_t n = 0, pn = 0;
  ASSERT_EQ(nvrtcGetCUBINSize(prog, &n), NVRTC_SUCCESS);
  std::string cubin(n, '\0');
  ASSERT_EQ(nvrtcGetCUBIN(prog, cubin.data()), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcGetPTXSize(prog, &pn), NVRTC_SUCCESS);
  std::string ptx(pn, '\0');
  ASSERT_EQ(nvrtcGetPTX(prog, ptx.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&prog);
  using cuda::nvrtc::image_problem;
  EXPECT_EQ(image_problem(cubin), "");
  EXPECT_EQ(image_problem(ptx), "");
  std::string bad = cubin;
  for (int i = 0; i < 16; ++i) bad[static_cast<size_t>(i)] = '\xee';  // what BadKernelBinary does
  EXPECT_EQ(image_problem(bad), "neither a CUBIN (ELF) nor PTX");
  bad = cubin;
  bad[18] = 62;  // EM_X86_64
  bad[19] = 0;
  EXPECT_EQ(image_problem(bad), "an ELF for machine 62, not EM_CUDA (190)");
  EXPECT_EQ(image_problem(cubin.substr(0, 40)), "an ELF image shorter than its header");
  bad = cubin;
  bad[4] = 1;  // ELFCLASS32
  EXPECT_EQ(image_problem(bad), "not a 64-bit little-endian ELF");
  bad = ptx;
  bad[bad.size() / 2] = '\x01';
  EXPECT_EQ(image_problem(bad), "PTX with bytes that are not text");
  EXPECT_EQ(image_problem(""), "neither a CUBIN (ELF) nor PTX");
}
#endif

}  // namespace
}  // namespace tg
