// Recorded runs (CUDA graph capture and replay, docs/design/0005 and 0010) tested on the CPU: a
// backend that records a run the way CUDA graph capture does (each kernel and copy queued with
// the addresses it was given, nothing run while recording; kernels that only hand out a view or
// a stored value run then, as they queue no work) and replays the queue. Program::run's recorded
// path then runs without a GPU: the recording, replays that write results straight into the
// buffers handed to the caller, feeds read in place, and the recordings again when a feed moves
// or the caller still holds a result.
#include <functional>

#include "backends/backend.h"
#include "runtime/compile.h"
#include "runtime/program.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_equal;

// A recorded run: the queued work in order.
struct QueuedRun final : backends::RecordedRun {
  std::vector<std::function<void()>> steps;
};

// What a kernel replayed outside its run gets: fresh workspace, no device checks (the CPU
// kernels raise their errors themselves).
class ReplayServices final : public backends::RunServices {
 public:
  void* stream() override { return nullptr; }
  void* workspace(size_t bytes) override {
    blocks_.push_back(backends::backend_for(Device::cpu()).allocate(bytes));
    return blocks_.back().get();
  }
  backends::DeviceErrorSlot device_error(backends::DeviceErrorFormatter) override {
    ADD_FAILURE() << "a replayed CPU kernel asked for a device error slot";
    return {};
  }
  const backends::DeviceErrorRecord* write_guard() override { return nullptr; }

 private:
  std::vector<std::shared_ptr<void>> blocks_;
};

// The CPU backend with recording. A recorded step keeps raw addresses, as a CUDA graph does: it
// holds no reference to the memory it writes (so the runtime sees when the caller released a
// result buffer).
class RecordingCpu final : public backends::Backend {
 public:
  RecordingCpu() {
    const backends::KernelTable& cpu = base().kernels();
    for (size_t k = 0; k < cpu.kernels.size(); ++k) {
      if (cpu.kernels[k] != nullptr) table_.kernels[k] = &RecordingCpu::kernel;
    }
  }
  Device device() const override { return Device::cpu(); }
  const backends::KernelTable& kernels() const override { return table_; }
  bool fuses_elementwise() const override { return base().fuses_elementwise(); }
  bool writes_in_place(const ir::Node& n, int input, const TensorType& type) const override {
    return base().writes_in_place(n, input, type);
  }
  std::shared_ptr<void> allocate(size_t bytes) const override { return base().allocate(bytes); }
  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, void*) const override {
    later([=] { base().copy(dst, dst_device, src, src_device, bytes, nullptr); });
  }
  void fill_zero(void* dst, size_t bytes, void*) const override {
    later([=] { base().fill_zero(dst, bytes, nullptr); });
  }
  void commit(std::span<const backends::CommitCopy> copies, const backends::DeviceErrorRecord* record,
              void*) const override {
    std::vector<backends::CommitCopy> c(copies.begin(), copies.end());
    later([c, record] { base().commit(c, record, nullptr); });
  }
  backends::DeviceErrorRecord read_error(const backends::DeviceErrorRecord* record, void* stream) const override {
    return base().read_error(record, stream);
  }
  bool can_record() const override { return true; }
  std::unique_ptr<backends::RecordedRun> record(const std::function<void(void*)>& enqueue) const override {
    auto run = std::make_unique<QueuedRun>();
    recording() = run.get();
    try {
      enqueue(nullptr);
    } catch (...) {
      recording() = nullptr;
      throw;
    }
    recording() = nullptr;
    return run;
  }
  void replay(const backends::RecordedRun& run, void*) const override {
    for (const auto& step : static_cast<const QueuedRun&>(run).steps) step();
  }

 private:
  static const backends::Backend& base() { return backends::backend_for(Device::cpu()); }
  static QueuedRun*& recording() {
    thread_local QueuedRun* run = nullptr;
    return run;
  }
  static void later(std::function<void()> step) {
    if (recording() != nullptr) {
      recording()->steps.push_back(std::move(step));
    } else {
      step();
    }
  }
  static TensorData unowned(const TensorData& t) {
    return TensorData::from_external(const_cast<void*>(t.storage_ptr()), t.shape(), t.dtype(), t.device(), nullptr);
  }
  static void kernel(backends::KernelContext& ctx) {
    const backends::Kernel real = base().kernels().get(ctx.node.kind);
    bool placed = !ctx.outputs.empty();
    for (const TensorData& o : ctx.outputs) placed = placed && !o.empty();
    if (recording() == nullptr || !placed) {
      real(ctx);  // a run that walks, or a view or stored value (no work to queue)
      return;
    }
    std::vector<TensorData> inputs, outputs;
    for (const TensorData& t : ctx.inputs) inputs.push_back(unowned(t));
    for (const TensorData& t : ctx.outputs) outputs.push_back(unowned(t));
    recording()->steps.push_back([real, node = &ctx.node, inputs, outputs, precision = ctx.precision] {
      ReplayServices services;
      std::vector<TensorData> outs = outputs;
      backends::KernelContext c{*node, inputs, outs, Device::cpu(), precision, &services};
      real(c);
      for (size_t i = 0; i < outs.size(); ++i) {
        EXPECT_EQ(outs[i].storage_ptr(), outputs[i].storage_ptr()) << "a replayed kernel wrote elsewhere";
      }
    });
  }

  backends::KernelTable table_;
};

constexpr int64_t kN = 4096;

// y = sqrt(exp(-x*x) + 1) * 3 and sq = x*x, run as a program of the recording CPU backend.
struct Recorded {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor sq = x * x;
  Tensor y = sqrt(exp(neg(sq)) + 1.0) * 3.0;
  RecordingCpu backend;
  Executable exe;
  std::unique_ptr<runtime::Program> program;

  // Compiles `targets` for the CPU and lowers that plan again for the recording backend.
  void compile(const std::vector<Tensor>& targets) {
    exe = g.compile(Device::cpu(), {{x, {{kN}, DType::f32}}}, targets);
    program = std::make_unique<runtime::Program>(exe.program()->plan, backend, 0);
  }
  static float at(float base, int64_t i) { return base + 0.001f * static_cast<float>(i % 1000); }
  static void fill(TensorData& t, float base) {
    for (int64_t i = 0; i < kN; ++i) t.data<float>()[i] = at(base, i);
  }
  static TensorData input(float base) {
    TensorData t({kN}, DType::f32, Device::cpu());
    fill(t, base);
    return t;
  }
  std::vector<TensorData> run(const TensorData& feed) const { return program->run({&feed, 1}, RunOptions{}); }
  static void check_y(const TensorData& out, float base) {
    ASSERT_EQ(out.shape(), (Shape{kN}));
    for (int64_t i = 0; i < kN; i += 97) {
      const double v = at(base, i);
      const double want = std::sqrt(std::exp(-v * v) + 1.0) * 3.0;
      ASSERT_NEAR(out.data<float>()[i], want, 1e-5 * want) << "element " << i;
    }
  }
  static void check_sq(const TensorData& out, float base) {
    ASSERT_EQ(out.shape(), (Shape{kN}));
    for (int64_t i = 0; i < kN; i += 89) {
      const float v = at(base, i);
      ASSERT_FLOAT_EQ(out.data<float>()[i], v * v) << "element " << i;
    }
  }
};

// The first run walks the nodes; the second is recorded and replayed; later ones replay. Every
// replay writes both results straight into the buffers it hands out (the same ones, run after
// run, while the caller releases them) and reads the feed in place: no byte is copied across the
// run's boundary.
TEST(RecordedRuns, ReplaysWriteResultsInPlaceAndReadFeedsInPlace) {
  Recorded r;
  r.compile({r.y, r.sq});
  ASSERT_TRUE(r.program->recordable());
  TensorData feed = Recorded::input(0.0f);
  const RuntimeStats before = runtime_stats();
  const void* y_at = nullptr;
  const void* sq_at = nullptr;
  for (int run = 0; run < 6; ++run) {
    const float base = 0.25f * static_cast<float>(run) - 0.5f;
    Recorded::fill(feed, base);  // new values at the same address
    std::vector<TensorData> out = r.run(feed);
    ASSERT_EQ(out.size(), 2u);
    Recorded::check_y(out[0], base);
    Recorded::check_sq(out[1], base);
    if (run >= 2) {
      EXPECT_EQ(out[0].storage_ptr(), y_at) << "run " << run;
      EXPECT_EQ(out[1].storage_ptr(), sq_at) << "run " << run;
    }
    y_at = out[0].storage_ptr();
    sq_at = out[1].storage_ptr();
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.interpreted_runs - before.interpreted_runs, 1);
  EXPECT_EQ(after.graph_captures - before.graph_captures, 1);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 5);
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 0);
  EXPECT_EQ(after.input_copy_bytes - before.input_copy_bytes, 0);
}

// A result the caller still holds at a replay is never written again: the run records once more
// with that result written to the arena and copied out after each replay from then on (sticky,
// also once the caller lets go). The other result stays in place.
TEST(RecordedRuns, AHeldResultIsRecordedAgainOnceThenCopiedOut) {
  Recorded r;
  r.compile({r.y, r.sq});
  TensorData feed = Recorded::input(0.0f);
  r.run(feed);
  r.run(feed);  // recorded
  Recorded::fill(feed, 1.0f);
  TensorData kept = r.run(feed)[0];  // a replay; the caller keeps y
  const RuntimeStats before = runtime_stats();
  for (int run = 0; run < 3; ++run) {
    const float base = -0.75f + 0.5f * static_cast<float>(run);
    Recorded::fill(feed, base);
    std::vector<TensorData> out = r.run(feed);
    Recorded::check_y(out[0], base);
    Recorded::check_sq(out[1], base);
    if (run < 2) {
      EXPECT_NE(out[0].storage_ptr(), kept.storage_ptr());
      Recorded::check_y(kept, 1.0f);  // never overwritten
    }
    if (run == 1) kept = TensorData();  // released: y stays copied out (sticky)
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.graph_captures - before.graph_captures, 1);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 3);
  EXPECT_EQ(after.interpreted_runs - before.interpreted_runs, 0);
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 3 * kN * 4);  // y, each replay
  EXPECT_EQ(after.input_copy_bytes - before.input_copy_bytes, 0);
}

// A feed that comes at a new address on every run is copied into its input slot before each
// replay (after one recording again); results still come without a copy.
TEST(RecordedRuns, AMovedFeedIsCopiedIntoItsSlot) {
  Recorded r;
  r.compile({r.y, r.sq});
  std::vector<TensorData> feeds = {Recorded::input(0.0f)};  // all kept: each at its own address
  r.run(feeds[0]);
  r.run(feeds[0]);  // recorded, reading this feed in place
  const RuntimeStats before = runtime_stats();
  for (int run = 0; run < 3; ++run) {
    const float base = 0.3f * static_cast<float>(run);
    feeds.push_back(Recorded::input(base));
    std::vector<TensorData> out = r.run(feeds.back());
    Recorded::check_y(out[0], base);
    Recorded::check_sq(out[1], base);
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.graph_captures - before.graph_captures, 1);
  EXPECT_EQ(after.input_copy_bytes - before.input_copy_bytes, 3 * kN * 4);
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 0);
}

// Results that are not a kernel's own output are still copied out after each replay: a feed, a
// repeated result and a view. Each is its own buffer with the right value.
TEST(RecordedRuns, FeedsRepeatsAndViewsAreCopiedOut) {
  Recorded r;
  r.compile({r.y, r.x, r.y, reshape(r.sq, {64, 64})});
  TensorData feed = Recorded::input(0.0f);
  for (int run = 0; run < 2; ++run) r.run(feed);
  const RuntimeStats before = runtime_stats();
  for (int run = 0; run < 2; ++run) {
    const float base = 0.5f - static_cast<float>(run);
    Recorded::fill(feed, base);
    std::vector<TensorData> out = r.run(feed);
    ASSERT_EQ(out.size(), 4u);
    Recorded::check_y(out[0], base);
    Recorded::check_y(out[2], base);
    Recorded::check_sq(out[3].reshaped({kN}), base);
    EXPECT_EQ(out[1].to_vector<float>(), feed.to_vector<float>());
    EXPECT_NE(out[0].storage_ptr(), out[2].storage_ptr());
    EXPECT_NE(out[1].storage_ptr(), feed.storage_ptr());
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.graph_launches - before.graph_launches, 2);
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 2 * 3 * kN * 4);  // x, the repeat, the view
}

// A result and a slice of it (a view starting inside the result's buffer: a block at a 256-byte
// multiple, ops::slice_view_offset) as targets: one recording, then replays that write the result
// straight into the buffer they hand out, the same one run after run (the caller drops it). Nothing
// of the recording may keep a reference to that buffer (the slice's view, the slice kernel's
// inputs), or the next run takes it as still held by the caller and records again
// (CudaGraphs.ASliceOfAResultDoesNotRecordAgain counted 2 captures on the H200).
TEST(RecordedRuns, ASliceOfAResultDoesNotRecordAgain) {
  Graph g;
  Tensor x = g.placeholder({4, 64}, DType::f32, "x");
  Tensor a = x * 3.0f;
  Tensor rows = slice(a, {.begin = {1}, .end = {3}, .axes = {0}});
  Executable exe = g.compile(Device::cpu(), {{x, {{4, 64}, DType::f32}}}, {a, rows});
  RecordingCpu backend;
  runtime::Program program(exe.program()->plan, backend, 0);
  ASSERT_TRUE(program.recordable());
  TensorData feed({4, 64}, DType::f32, Device::cpu());
  const RuntimeStats before = runtime_stats();
  const void* a_at = nullptr;
  for (int run = 0; run < 6; ++run) {  // walked, recorded, then replays
    for (int64_t i = 0; i < 4 * 64; ++i) feed.data<float>()[i] = 0.5f * static_cast<float>(i + run);
    const std::vector<TensorData> out = program.run({&feed, 1}, RunOptions{});
    ASSERT_EQ(out.size(), 2u);
    for (int64_t i = 0; i < 4 * 64; ++i) ASSERT_EQ(out[0].data<float>()[i], 1.5f * static_cast<float>(i + run));
    for (int64_t i = 0; i < 2 * 64; ++i) ASSERT_EQ(out[1].data<float>()[i], 1.5f * static_cast<float>(64 + i + run));
    if (run >= 2) EXPECT_EQ(out[0].storage_ptr(), a_at) << "run " << run;
    a_at = out[0].storage_ptr();
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.interpreted_runs - before.interpreted_runs, 1);
  EXPECT_EQ(after.graph_captures - before.graph_captures, 1);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 5);
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 6 * 2 * 64 * 4);  // the slice (a view), each run
}

// A result that is also the value assigned to a variable: recorded runs write it straight into
// the variable's buffer (Program::plan_direct_writes), and the result is copied from there.
TEST(RecordedRuns, AResultAssignedToAVariable) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2, 3}, {3}), "v");
  Tensor next = v * 2.0 + 1.0;
  Operation inc = assign_variable(v, next);
  Executable exe = g.compile(Device::cpu(), {}, {next}, {inc});
  RecordingCpu backend;
  runtime::Program program(exe.program()->plan, backend, 0);
  std::vector<double> want = {1, 2, 3};
  const RuntimeStats before = runtime_stats();
  for (int run = 0; run < 4; ++run) {
    for (double& w : want) w = w * 2 + 1;
    std::vector<TensorData> out = program.run({}, RunOptions{});
    expect_equal(out[0], want, {3});
    expect_equal(g.variable_value(v), want, {3});
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.graph_captures - before.graph_captures, 1);
  EXPECT_EQ(after.graph_launches - before.graph_launches, 3);
}

}  // namespace
}  // namespace tg
