// tg_fused_rows_emu: writes, for row programs (fused_elementwise nodes with row-reduction steps,
// ir/fused_rows.h) of a printed executable (Executable::to_string() of a CPU compile with
// TG_FUSION=1), the CUDA source the CUDA backend generates for them (k<id>.cu) and a host harness
// (h<id>.cpp) that runs it under tools/kernel_emu/shim.h with the backend's own plan (threads a
// row, rows a block, merged leading dims) on random inputs and compares every output element with
// a sequential evaluation of the same program: the steps in their storage types through the same
// expressions, the row reductions accumulated in float64 one element after the other.
//   usage: tg_fused_rows_emu IR_FILE OUT_DIR NODE_ID...   (then tools/kernel_emu/run.sh OUT_DIR)
//          tg_fused_rows_emu --selftest OUT_DIR           (the cases run by the KernelEmu test)
// The input tensors take the shapes printed in the IR; keep them small (a thread per CUDA thread).
// This tool compiles fused_rows.cpp into itself to reach the backend's planning functions.
#include "../../src/backends/cuda/fused_rows.cpp"  // NOLINT(bugprone-suspicious-include)

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "ir_text.h"

namespace {

using namespace tg;
using namespace tg::cuda;
using namespace tg_emu_ir;

std::string array4(const long long* a) { return fmt::format("{{{},{},{},{}}}", a[0], a[1], a[2], a[3]); }

/// The harness: random inputs (floats in (0.5, 2), integers 0 or 1), the planned launch, the
/// sequential evaluation per row and the comparison.
std::string harness(const std::string& id, const ir::FusedAttrs& a, const std::vector<DType>& in,
                    const std::vector<DType>& outs, const std::vector<bool>& full, const std::vector<TensorData>& inputs,
                    const RowPlan& pl) {
  const size_t n_in = in.size();
  std::string h = fmt::format("#include \"k{}.cu\"\n#include <random>\nint main() {{\n", id);
  h += "  std::mt19937 rng(7);\n  std::uniform_real_distribution<float> U(0.5f, 2.f);\n";
  for (size_t m = 0; m < n_in; ++m) {
    const std::string draw = is_floating(in[m]) ? "U(rng)" : "static_cast<float>(rng() % 2)";
    h += fmt::format("  std::vector<{0}> x{1}({2});\n  for (auto& v : x{1}) v = tg_dev::st<{0}>({3});\n",
                     device_type(in[m]), m, inputs[m].num_elements(), draw);
  }
  const long long total = pl.dims.rows * pl.n;
  for (size_t k = 0; k < outs.size(); ++k) h += fmt::format("  std::vector<{}> y{}({});\n", device_type(outs[k]), k, total);
  for (size_t m = 0; m < n_in; ++m) {
    if (pl.kinds[m] != 's') h += fmt::format("  tg_rw_st s{}{{{}}};\n", m, array4(pl.strides[m].k));
  }
  h += fmt::format("  tg_rw_dims d{{{}, {}, {}}};\n", array4(pl.dims.k), pl.dims.rows, pl.dims.n);
  std::string args;
  for (size_t k = 0; k < outs.size(); ++k) args += fmt::format("y{}.data(), ", k);
  for (size_t m = 0; m < n_in; ++m) args += fmt::format("x{}.data(), ", m);
  for (size_t m = 0; m < n_in; ++m) {
    if (pl.kinds[m] != 's') args += fmt::format("s{}, ", m);
  }
  const long long blocks = (pl.dims.rows + pl.rpb - 1) / pl.rpb;
  h += fmt::format("  tg_emu::launch(dim3({}), dim3({}), [&] {{ tg_rows({}d, nullptr); }});\n", blocks, pl.tpr * pl.rpb,
                   args);
  // Sequential evaluation, row by row.
  h += fmt::format("  const long long N = {};\n  int bad = 0;\n", pl.n);
  h += fmt::format("  for (long long row = 0; row < {}; ++row) {{\n", pl.dims.rows);
  for (size_t m = 0; m < n_in; ++m) {
    if (pl.kinds[m] != 's') h += fmt::format("    long long b{} = 0;\n", m);
  }
  h += "    { long long t = row, c;\n";
  for (int j = pl.nk - 1; j >= 0; --j) {
    h += j > 0 ? fmt::format("      c = t % d.k[{0}]; t /= d.k[{0}];\n", j) : "      c = t;\n";
    for (size_t m = 0; m < n_in; ++m) {
      if (pl.kinds[m] != 's') h += fmt::format("      b{0} += c * s{0}.k[{1}];\n", m, j);
    }
  }
  h += "      (void)c; }\n";
  std::vector<std::string> name;
  std::vector<DType> dtype(in.begin(), in.end());
  auto at = [&](size_t v) { return full[v] ? name[v] + "[j]" : name[v]; };
  for (size_t m = 0; m < n_in; ++m) {
    name.push_back(fmt::format("v{}", m));
    const char* t = device_type(in[m]);
    if (pl.kinds[m] == 's') h += fmt::format("    const {} v{} = x{}[0];\n", t, m, m);
    else if (!full[m]) h += fmt::format("    const {} v{} = x{}[b{}];\n", t, m, m, m);
    else h += fmt::format("    std::vector<{0}> v{1}(N);\n    for (long long j = 0; j < N; ++j) v{1}[j] = x{1}[b{1} + j];\n", t, m);
  }
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const ir::FusedStep& st = a.steps[s];
    const size_t v = n_in + s;
    const char* t = device_type(st.dtype);
    name.push_back(fmt::format("t{}", v));
    dtype.push_back(st.dtype);
    if (is_reduction(st.kind)) {
      const bool sum = st.kind == ir::OpKind::reduce_sum;
      h += fmt::format("    double a{} = {};\n", v, sum ? "0" : "-INFINITY");
      h += fmt::format("    for (long long j = 0; j < N; ++j) {{ const double b = tg_dev::cv({}); ", at(static_cast<size_t>(st.args[0])));
      h += sum ? fmt::format("a{} += b; }}\n", v) : fmt::format("a{0} = (b > a{0} || b != b) ? b : a{0}; }}\n", v);
      h += fmt::format("    const {0} t{1} = tg_dev::st<{0}>(static_cast<{2}>(a{1}));\n", t, v, compute_name(st.dtype));
      continue;
    }
    std::vector<DType> arg_types;
    std::vector<std::string> args2;
    for (int x : st.args) {
      arg_types.push_back(dtype.at(static_cast<size_t>(x)));
      args2.push_back(at(static_cast<size_t>(x)));
    }
    bool flag = false;
    const std::string e = elementwise_expression(st.kind, arg_types, st.dtype, args2, ir::op_name(st.kind), &flag);
    if (full[v]) h += fmt::format("    std::vector<{0}> t{1}(N);\n    for (long long j = 0; j < N; ++j) t{1}[j] = {2};\n", t, v, e);
    else h += fmt::format("    const {} t{} = {};\n", t, v, e);
  }
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const double tol = outs[k] == DType::f16 || outs[k] == DType::bf16 ? 1e-2 : 1e-5;
    h += fmt::format(
        "    for (long long j = 0; j < N; ++j) {{\n"
        "      const double got = tg_dev::cv(y{0}[row * N + j]), want = tg_dev::cv({1});\n"
        "      if (!(std::fabs(got - want) <= {2} * (1 + std::fabs(want))) && !(got != got && want != want)) {{\n"
        "        if (++bad <= 5) std::printf(\"output {0}[%lld, %lld]: got %.9g, want %.9g\\n\", row, j, got, want);\n"
        "      }}\n    }}\n",
        k, at(static_cast<size_t>(a.outputs[k])), tol);
  }
  h += "  }\n";
  h += fmt::format("  std::printf(\"k{}: %s (rows {} of {}, {} threads a row, {} rows a block, {} elements a thread)\\n\", "
                   "bad ? \"MISMATCH\" : \"ok\");\n",
                   id, pl.dims.rows, pl.n, pl.tpr, pl.rpb, pl.e);
  h += "  return bad ? 1 : 0;\n}\n";
  return h;
}

/// Writes k<name>.cu and h<name>.cpp for node %<id> of the printed executable `lines`.
void write_node(const std::vector<std::string>& lines, const std::string& id, const std::string& out_dir,
                const std::string& name) {
  const auto types = node_types(lines);
  auto line = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind("%" + id + " = ", 0) == 0; });
  if (line == lines.end() || line->find("= fused_elementwise(") == std::string::npos) {
    fail(ErrorCode::not_found, "tg_fused_rows_emu", "%{} is not a fused_elementwise node", id);
  }
  const ir::FusedAttrs a = fused_attrs(*line);
  if (!ir::has_row_reductions(a)) fail(ErrorCode::not_found, "tg_fused_rows_emu", "%{} has no row reductions", id);
  std::vector<DType> in;
  std::vector<Shape> shapes;
  std::vector<TensorData> inputs;
  for (const TensorType& t : input_types(*line, "fused_elementwise", types)) {
    in.push_back(t.dtype);
    shapes.push_back(t.shape);
    inputs.push_back(TensorData::zeros(t.shape, t.dtype));
  }
  const std::vector<bool> full = ir::row_value_varies(a, shapes);
  std::vector<DType> outs;
  for (int v : a.outputs) outs.push_back(static_cast<size_t>(v) < in.size() ? in[static_cast<size_t>(v)] : a.steps[static_cast<size_t>(v) - in.size()].dtype);
  const RowPlan pl = plan_rows(a, inputs, "fused_elementwise");
  std::ofstream(out_dir + "/k" + name + ".cu") << rows_source(a, in, outs, full, pl, "fused_elementwise");
  std::ofstream(out_dir + "/h" + name + ".cpp") << harness(name, a, in, outs, full, inputs, pl);
}

/// --selftest: LayerNorm of a residual sum over rows of 100 (f32: a warp a row, 4 rows a block),
/// 1000 (bf16: 256 threads a row, shared-memory partials) and 3000 (f16: 1024 threads a row), and
/// BERT's masked softmax (i64 key mask, rows of 37), compiled for the CPU with fusion on.
void selftest(const std::string& out_dir) {
  struct Case {
    std::string name;
    Shape shape;
    DType dtype;
    bool softmax;
  };
  const Case cases[] = {{"ln100_f32", {3, 4, 100}, DType::f32, false},
                        {"ln1000_bf16", {3, 1000}, DType::bf16, false},
                        {"ln3000_f16", {2, 3000}, DType::f16, false},
                        {"softmax37_f32", {2, 3, 4, 37}, DType::f32, true}};
  setenv("TG_FUSION", "1", 1);
  for (const Case& c : cases) {
    Graph g;
    Tensor x = g.placeholder(c.shape, c.dtype, "x");
    std::vector<std::pair<Tensor, TensorType>> feeds{{x, {c.shape, c.dtype}}};
    Tensor y;
    const int64_t n = c.shape.back();
    if (c.softmax) {
      const Shape mask_shape{c.shape[0], 1, 1, n};
      Tensor m = g.placeholder(mask_shape, DType::i64, "mask");
      feeds.push_back({m, {mask_shape, DType::i64}});
      y = softmax(x * 0.125 + (1.0 - cast(m, c.dtype)) * -10000.0, -1);
    } else {
      Tensor r = g.placeholder(c.shape, c.dtype, "r");
      Tensor gamma = g.placeholder({n}, c.dtype, "gamma"), beta = g.placeholder({n}, c.dtype, "beta");
      feeds.push_back({r, {c.shape, c.dtype}});
      feeds.push_back({gamma, {{n}, c.dtype}});
      feeds.push_back({beta, {{n}, c.dtype}});
      y = layer_norm(x + r, gamma, beta);
    }
    const std::vector<std::string> lines = split(g.compile(Device::cpu(), feeds, {y}).to_string(), "\n");
    int count = 0;
    for (const std::string& l : lines) {
      if (l.find(" = fused_elementwise(") == std::string::npos || l.find("reduce_") == std::string::npos) continue;
      const std::string id = l.substr(1, l.find(' ') - 1);
      write_node(lines, id, out_dir, c.name + "_" + id);
      ++count;
    }
    if (count != 1) fail(ErrorCode::internal, "tg_fused_rows_emu", "{} row programs in the {} graph, expected 1", count, c.name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return tg_emu_ir::program_main(argc, argv, "tg_fused_rows_emu", write_node, selftest);
}
