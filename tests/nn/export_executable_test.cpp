// Model::export_executable: the inference executable as a .tgx file, loaded in this process and
// run by `tg run` in another (docs/design/0008).
#include <cstring>
#include <filesystem>

#include "npy.h"
#include "test_util.h"
#include "tg/model.h"
#include "tools/cli_util.h"

namespace tg::nn {
namespace {

TEST(ExportExecutable, LoadsAndRunsByTgRunWithThePredictionsBits) {
  tg::testing::TempDir dir;
  Model m = Sequential({3}, {Dense(4, {.activation = Act::relu}), BatchNorm(), Dropout(0.5), Dense(2)}, {.seed = 5});
  const TensorData x = TensorData::from_vector<float>({0.5f, -1, 2, 1, 1, -0.25f}, {2, 3});
  const TensorData want = m.predict(x, 2);
  const std::string file = dir.file("model.tgx");
  m.export_executable(file, 2);

  Executable loaded = Executable::load(file, Device::cpu());
  ASSERT_EQ(loaded.input_types(), (std::vector<TensorType>{{{2, 3}, DType::f32}}));
  const TensorData got = loaded.run({x})[0];
  ASSERT_EQ(got.type(), want.type());
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0) << got.to_string() << " vs " << want.to_string();

  const std::string tg = tg::testing::tg_binary();
  if (!std::filesystem::exists(tg)) GTEST_SKIP() << "no tg binary at " << tg;
  tg::cli::write_npy(dir.file("x.npy"), x);
  tg::testing::CliResult r = tg::testing::run_tg("run " + tg::testing::quote(file) + " " +
                                                 tg::testing::quote(dir.file("x.npy")) + " --device cpu -o " +
                                                 tg::testing::quote(dir.file("out")));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const TensorData ran = tg::cli::read_npy(dir.file("out") + "/output_0.npy");
  ASSERT_EQ(ran.type(), want.type());
  EXPECT_EQ(std::memcmp(ran.raw_data(), want.raw_data(), want.nbytes()), 0) << ran.to_string() << " vs " << want.to_string();

  EXPECT_THROW(m.export_executable(file, 0), Error);
}

}  // namespace
}  // namespace tg::nn
