// The collective ops on a CUDA GPU: the single communicator (a copy), and NCCL with one rank on
// the one GPU (libnccl.so.2 loaded at run time), through walked, recorded and replayed runs of a
// compiled executable; and the error a missing NCCL library gives. TG_TEST_EXPECT_NCCL=1 makes a
// missing NCCL a failure of the NCCL test (=0: the expectation); unset, a missing NCCL skips it.
#include <cstdlib>
#include <filesystem>

#include "test_util.h"
#ifdef TG_HAVE_CUDA  // a build without the CUDA backend (make demo's, then make test) has no CUDA headers
#include "backends/cuda/nccl.h"
#endif

namespace tg {
namespace {

using ::tg::testing::expect_equal;

bool have_gpu() { return Device::cuda_device_count() > 0; }

std::string id_path() {
  return (std::filesystem::temp_directory_path() / ("tg_nccl_test_" + std::to_string(::getpid()) + ".id")).string();
}

// Every collective of `comm` on x = [[0,1,2],[3,4,5]] (f32) and x16 (bf16), run 3 times on
// cuda:0 (walked, recorded into a CUDA graph, replayed): a world of one rank gives x back.
void check_identities_on_gpu(const Communicator& comm) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor x16 = cast(x, DType::bf16);
  std::vector<Tensor> ys = {all_reduce(x, comm),
                            all_reduce(x, comm, {CollectiveReduction::mean}),
                            all_reduce(x, comm, {CollectiveReduction::max}),
                            all_gather(x, comm, {.axis = 1}),
                            reduce_scatter(x, comm, {.axis = 1}),
                            broadcast(x, comm),
                            cast(all_reduce(x16, comm), DType::f32)};
  Executable exe = g.compile(Device::cuda(0), {{x, TensorType{{2, 3}, DType::f32}}}, ys);
  const TensorData in = TensorData::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3}).to(Device::cuda(0));
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    auto out = exe.run({in});
    for (const TensorData& y : out) expect_equal(y.to(Device::cpu()), {0, 1, 2, 3, 4, 5}, {2, 3});
  }
}

TEST(CollectiveCuda, SingleCommunicatorIsACopy) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)";
  check_identities_on_gpu(Communicator());
}

TEST(CollectiveCuda, OneNcclRankOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)";
  const char* expect = std::getenv("TG_TEST_EXPECT_NCCL");
  const std::string path = id_path();
  std::filesystem::remove(path);
  Communicator comm;
  try {
    comm = Communicator::nccl(0, 1, 0, path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("[nccl] cannot load libnccl.so.2"), std::string::npos) << e.what();
    if (expect && std::string(expect) == "1") FAIL() << "NCCL expected: " << e.what();
    if (expect && std::string(expect) == "0") return;  // the clear error was the expectation
    GTEST_SKIP() << e.what();
  }
  if (expect && std::string(expect) == "0") FAIL() << "NCCL loaded although TG_TEST_EXPECT_NCCL=0";
  EXPECT_EQ(comm.backend(), CommBackend::nccl);
  EXPECT_EQ(comm.world_size(), 1);
  EXPECT_TRUE(std::filesystem::exists(path));  // rank 0 wrote the id
  check_identities_on_gpu(comm);
  // An NCCL communicator on the CPU backend is a clear error.
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2}, {2}));
  EXPECT_TG_ERROR(g.run({}, {all_reduce(x, comm)}, {}, Device::cpu()), ErrorCode::unsupported,
                  "[all_reduce] the CPU backend runs in_process communicators; nccl needs a CUDA device");
  std::filesystem::remove(path);
}

#ifdef TG_HAVE_CUDA
TEST(CollectiveCuda, AMissingNcclLibraryIsAClearError) {
  // No GPU needed: only dlopen. (libnccl.so.2 itself is installed where this runs, so a library
  // that is not there stands in for it.)
  EXPECT_TG_ERROR(cuda::load_nccl_library("libnccl-not-installed.so.2"), ErrorCode::unsupported,
                  "[nccl] cannot load libnccl-not-installed.so.2 (libnccl-not-installed.so.2: cannot open shared "
                  "object file: No such file or directory): install NCCL");
}
#endif

TEST(CollectiveCuda, InProcessCommunicatorsRunOnTheCpuOnly) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)";
  auto comms = Communicator::in_process(2);
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  EXPECT_TG_ERROR(g.compile(Device::cuda(0), {{x, TensorType{{2}, DType::f32}}}, {all_reduce(x, comms[0])})
                      .run({TensorData::from_vector<float>({1, 2}, {2}).to(Device::cuda(0))}),
                  ErrorCode::unsupported, "[all_reduce] a CUDA device runs NCCL communicators, not in_process ones");
}

}  // namespace
}  // namespace tg
