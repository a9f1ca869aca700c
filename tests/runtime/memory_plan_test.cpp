// The static memory plan (src/runtime/memory_plan.h): offsets from lifetimes, reuse, in-place
// outputs, and the values that must live to the end of a run.
#include "ir/graph.h"
#include "runtime/memory_plan.h"
#include "test_util.h"

namespace tg {
namespace {

using runtime::MemoryPlan;

constexpr int64_t kN = 1024;            // f32 elements: 4096 bytes, a multiple of the alignment
constexpr int64_t kBytes = kN * 4;

struct Planned {
  MemoryPlan plan;
  std::vector<int> schedule;
};

// Plans the whole graph (node order) for `targets` with `feeds`.
Planned plan_of(const Graph& g, const std::vector<Tensor>& feeds, const std::vector<Tensor>& targets,
                runtime::MemoryPlanOptions options = {}) {
  Planned p;
  const ir::Graph& ir = *g.impl();
  for (const ir::Node& n : ir.nodes()) p.schedule.push_back(n.id);
  std::vector<int> feed_ids;
  for (const Tensor& f : feeds) feed_ids.push_back(f.node_id());
  std::vector<ir::ValueRef> target_refs;
  for (const Tensor& t : targets) target_refs.push_back({t.node_id(), t.index()});
  p.plan = runtime::plan_memory(ir, p.schedule, feed_ids, target_refs, options);
  return p;
}

int64_t offset(const Planned& p, const Tensor& t) { return p.plan.offset[t.node_id()][t.index()]; }

TEST(MemoryPlan, AChainReusesTwoSlots) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor a = exp(x), b = sin(a), c = neg(b), d = sqrt(c);
  Planned p = plan_of(g, {x}, {d});
  // a..d each live from their step to the next: two slots alternate.
  EXPECT_EQ(p.plan.planned_bytes, 4 * kBytes);
  EXPECT_EQ(p.plan.arena_bytes, 2 * kBytes);
  EXPECT_EQ(offset(p, a), offset(p, c));
  EXPECT_EQ(offset(p, b), offset(p, d));
  EXPECT_NE(offset(p, a), offset(p, b));
  EXPECT_EQ(p.plan.offset[x.node_id()][0], MemoryPlan::kUnplanned);  // feeds are read in place
  ASSERT_EQ(p.plan.target_offset.size(), 1u);
  EXPECT_EQ(p.plan.target_offset[0], offset(p, d));
  EXPECT_EQ(p.plan.in_place, 0);
}

TEST(MemoryPlan, InPlaceOutputsTakeTheirDeadInputsMemory) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor a = exp(x), b = sin(a), c = neg(b), d = sqrt(c);
  runtime::MemoryPlanOptions options;
  options.in_place = [](const ir::Node& n, int, const TensorType&) { return n.kind != ir::OpKind::exp; };
  Planned p = plan_of(g, {x}, {d}, options);
  // b over a, c over b, d over c: one slot (a can't take x: feeds belong to the caller).
  EXPECT_EQ(p.plan.in_place, 3);
  EXPECT_EQ(p.plan.arena_bytes, kBytes);
  EXPECT_EQ(offset(p, a), offset(p, d));
}

TEST(MemoryPlan, InPlaceNeverOverwritesAValueReadLater) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor a = exp(x);
  Tensor b = sin(a);
  Tensor c = a + b;  // reads a after b was made: b cannot take a's memory
  runtime::MemoryPlanOptions options;
  options.in_place = [](const ir::Node&, int, const TensorType&) { return true; };
  Planned p = plan_of(g, {x}, {c}, options);
  EXPECT_NE(offset(p, a), offset(p, b));
  EXPECT_EQ(p.plan.in_place, 1);  // c takes a's (or b's) memory: both die at c
  EXPECT_EQ(p.plan.arena_bytes, 2 * kBytes);
}

TEST(MemoryPlan, TargetsAndAssignedValuesLiveToTheEnd) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor v = g.variable(TensorData::zeros({kN}), "v");
  Tensor t1 = exp(x);     // a target: read after the run
  Tensor s = sin(t1);
  Tensor u = neg(s);      // assigned to v: the commit reads it at the end
  Operation set = assign_variable(v, u);
  Tensor w = sqrt(s);
  Tensor t2 = cos(w);
  Planned p = plan_of(g, {x}, {t1, t2});
  const std::vector<int64_t> live = {offset(p, t1), offset(p, u), offset(p, t2)};
  EXPECT_NE(live[0], live[1]);
  EXPECT_NE(live[0], live[2]);
  EXPECT_NE(live[1], live[2]);
  // The assignment reads u in place (a view of it); the variable itself is not in the arena.
  EXPECT_EQ(p.plan.offset[set.node_id()][0], MemoryPlan::kUnplanned);
  EXPECT_EQ(p.plan.offset[v.node_id()][0], MemoryPlan::kUnplanned);
  EXPECT_EQ(p.plan.target_offset[0], offset(p, t1));
  EXPECT_EQ(p.plan.target_offset[1], offset(p, t2));
}

TEST(MemoryPlan, AnAssignmentOfAVariableGetsItsOwnSlot) {
  Graph g;
  Tensor v = g.variable(TensorData::zeros({kN}), "v");
  Tensor w = g.variable(TensorData::full({kN}, DType::f32, 1.0), "w");
  Operation swap_v = assign_variable(v, w);
  Operation swap_w = assign_variable(w, v);
  Planned p = plan_of(g, {}, {});
  // Each assignment copies the other's start value aside: the commit never reads a buffer that
  // another assignment of the run writes.
  const int64_t a = p.plan.offset[swap_v.node_id()][0], b = p.plan.offset[swap_w.node_id()][0];
  EXPECT_NE(a, MemoryPlan::kUnplanned);
  EXPECT_NE(b, MemoryPlan::kUnplanned);
  EXPECT_NE(a, b);
}

TEST(MemoryPlan, AViewKeepsItsSourceAlive) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor a = exp(x);
  Tensor r = reshape(a, {32, 32});  // shares a's memory
  Tensor b = sin(x);
  Tensor c = cos(b);
  Tensor d = reshape(r, {kN}) + c;  // reads the view last
  Planned p = plan_of(g, {x}, {d});
  EXPECT_EQ(p.plan.offset[r.node_id()][0], MemoryPlan::kUnplanned);
  // a lives until d: b and c may not take its memory.
  EXPECT_NE(offset(p, a), offset(p, b));
  EXPECT_NE(offset(p, a), offset(p, c));
}

TEST(MemoryPlan, InputSlotsForBackendsThatRecordRuns) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor y = g.placeholder({kN}, DType::f32, "y");
  Tensor a = x * y;
  runtime::MemoryPlanOptions options;
  options.input_slots = true;
  Planned p = plan_of(g, {x, y}, {a}, options);
  ASSERT_EQ(p.plan.input_offset.size(), 2u);
  EXPECT_NE(p.plan.input_offset[0], MemoryPlan::kUnplanned);
  EXPECT_NE(p.plan.input_offset[0], p.plan.input_offset[1]);
  EXPECT_NE(p.plan.input_offset[0], offset(p, a));
  EXPECT_EQ(p.plan.arena_bytes, 3 * kBytes);
}

// The run copies a feed into its slot before the first step, so a placeholder scheduled late (a
// model's labels after its layers) must not share memory with values computed before it.
TEST(MemoryPlan, InputSlotsLiveFromTheStartOfTheRun) {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor a = exp(x), b = sin(a);       // computed before the labels' placeholder
  Tensor labels = g.placeholder({kN}, DType::f32, "labels");
  Tensor loss = b * labels;
  runtime::MemoryPlanOptions options;
  options.input_slots = true;
  Planned p = plan_of(g, {x, labels}, {loss}, options);
  const int64_t slot = p.plan.input_offset[1];
  ASSERT_NE(slot, MemoryPlan::kUnplanned);
  EXPECT_NE(slot, offset(p, a));
  EXPECT_NE(slot, offset(p, b));
  EXPECT_NE(slot, p.plan.input_offset[0]);
}

// A slice of one contiguous block at a 256-byte multiple is a view: no slot of its own, its
// source lives while it is read; a target that starts inside its root gets a slot (the run copies
// it there), one at the root's start is read in place.
TEST(MemoryPlan, ASliceOfABlockIsAViewAndTargetsInsideARootGetASlot) {
  Graph g;
  Tensor x = g.placeholder({3, kN}, DType::f32, "x");
  Tensor a = exp(x);
  Tensor s0 = slice(a, {.begin = {0}, .end = {1}, .axes = {0}});
  Tensor s2 = slice(a, {.begin = {2}, .end = {3}, .axes = {0}});
  Tensor odd = slice(a, {.begin = {0, 1}, .end = {1, kN}, .axes = {0, 1}});  // two axes: copied
  Tensor y = g.placeholder({kN}, DType::f32, "y");
  Tensor b = sin(y);
  Tensor c = reshape(s2, {kN}) + b;  // reads the view after b is made
  Planned p = plan_of(g, {x, y}, {s0, s2, odd, c});
  EXPECT_EQ(p.plan.offset[s0.node_id()][0], MemoryPlan::kUnplanned);
  EXPECT_EQ(p.plan.offset[s2.node_id()][0], MemoryPlan::kUnplanned);
  EXPECT_NE(offset(p, odd), MemoryPlan::kUnplanned);
  EXPECT_NE(offset(p, a), offset(p, b));  // a lives while its views are read
  EXPECT_EQ(p.plan.target_offset[0], offset(p, a));  // at the root's start
  const int64_t slot = p.plan.target_offset[1];
  ASSERT_NE(slot, MemoryPlan::kUnplanned);
  EXPECT_TRUE(slot + kBytes <= offset(p, a) || offset(p, a) + 3 * kBytes <= slot) << slot;
}


// Offsets add up along a chain of views (a slice of a slice, a reshape of a slice): a target
// inside its root gets a slot apart from the root, also when the chain starts at the root's
// start; and an output computed in place never takes a root it reads through a view that starts
// inside it, even where the backend would (the output, broadcast to the root's size, would
// overwrite the block before reading it).
TEST(MemoryPlan, ViewChainsInsideARootAndInPlaceOutputs) {
  Graph g;
  Tensor x = g.placeholder({4, kN}, DType::f32, "x");
  Tensor a = exp(x);
  Tensor inner = slice(a, {.begin = {0}, .end = {2}, .axes = {0}});            // at 0
  Tensor deep = slice(inner, {.begin = {1}, .end = {2}, .axes = {0}});         // at kBytes
  Tensor far = slice(slice(a, {.begin = {2}, .end = {4}, .axes = {0}}), {.begin = {0}, .end = {1}, .axes = {0}});
  Tensor flat = reshape(far, {kN});                                             // at 2 kBytes
  Planned p = plan_of(g, {x}, {inner, deep, flat});
  const int64_t root = offset(p, a);
  EXPECT_EQ(p.plan.target_offset[0], root);  // at the root's start: read in place
  for (size_t t : {size_t{1}, size_t{2}}) {
    const int64_t slot = p.plan.target_offset[t];
    ASSERT_NE(slot, MemoryPlan::kUnplanned);
    EXPECT_TRUE(slot + kBytes <= root || root + 4 * kBytes <= slot) << t << ": " << slot;
  }
  EXPECT_NE(p.plan.target_offset[1], p.plan.target_offset[2]);

  Graph h;
  Tensor u = h.placeholder({3, kN}, DType::f32, "u");
  Tensor w = h.placeholder({3, kN}, DType::f32, "w");
  Tensor b = exp(u);
  Tensor last = slice(b, {.begin = {2}, .end = {3}, .axes = {0}});  // b's last use: inside b
  Tensor c = last + w;                                             // [3, kN]: b's size
  runtime::MemoryPlanOptions permissive;
  permissive.in_place = [](const ir::Node&, int, const TensorType&) { return true; };
  Planned q = plan_of(h, {u, w}, {c}, permissive);
  EXPECT_EQ(q.plan.in_place, 0);
  EXPECT_NE(offset(q, c), offset(q, b));
}


// An elementwise output computed in place over input a (CUDA's rule: an input of the output's
// shape) must not be when another input of the same node reads part of a's storage at other
// indices (a slice view broadcast: c = a + a[1]; writing c[1] over a[1] races the reads of a[1]
// for c[0]); a + a itself (the same elements at the same index) still is.
TEST(MemoryPlan, NoInPlaceOverARootAnotherInputViewsPartOf) {
  runtime::MemoryPlanOptions cuda_rule;
  cuda_rule.in_place = [](const ir::Node& n, int, const TensorType& t) { return t.shape == n.outputs[0].shape; };
  for (int64_t row : {0, 1}) {
    SCOPED_TRACE(row);
    Graph g;
    Tensor x = g.placeholder({2, kN}, DType::f32, "x");
    Tensor a = exp(x);
    Tensor c = a + slice(a, {.begin = {row}, .end = {row + 1}, .axes = {0}});
    Planned p = plan_of(g, {x}, {c}, cuda_rule);
    EXPECT_EQ(p.plan.in_place, 0);
    EXPECT_NE(offset(p, c), offset(p, a));
  }
  Graph g;
  Tensor x = g.placeholder({2, kN}, DType::f32, "x");
  Tensor a = exp(x);
  Tensor c = a + reshape(reshape(a, {2 * kN}), {2, kN});
  Planned p = plan_of(g, {x}, {c}, cuda_rule);
  EXPECT_EQ(p.plan.in_place, 1);
  EXPECT_EQ(offset(p, c), offset(p, a));
}

TEST(MemoryPlan, ASliceAtAnUnalignedOffsetIsCopied) {
  Graph g;
  Tensor x = g.placeholder({3, 10}, DType::f32, "x");  // rows of 40 bytes
  Tensor s = slice(exp(x), {.begin = {1}, .end = {2}, .axes = {0}});
  Planned p = plan_of(g, {x}, {s + 1.0f});
  EXPECT_NE(offset(p, s), MemoryPlan::kUnplanned);
}

}  // namespace
}  // namespace tg
