// tg_fused_reduce_emu: writes, for fused_reduce nodes of a printed executable (Executable::
// to_string() of a CPU compile with TG_FUSION=1), the CUDA source the CUDA backend generates for
// them (k<id>.cu) and a host harness (h<id>.cpp) that runs it under tools/kernel_emu/shim.h with
// the backend's own launch plan (grid, splits, finish kernel) on random inputs and compares every
// output with a float64 evaluation of the same program, element by element.
//   usage: tg_fused_reduce_emu IR_FILE OUT_DIR NODE_ID...   (then tools/kernel_emu/run.sh OUT_DIR)
//          tg_fused_reduce_emu --selftest OUT_DIR           (the cases run by the KernelEmu test)
// The input tensors take the shapes printed in the IR; keep them small (a thread per CUDA thread).
// To reach the backend's internal planning functions this tool compiles fused_reduce.cpp into
// itself (its anonymous namespace becomes this file's).
#include "../../src/backends/cuda/fused_reduce.cpp"  // NOLINT(bugprone-suspicious-include)

#include <fstream>
#include <cstdlib>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "ir_text.h"

namespace {

using namespace tg;
using namespace tg::cuda;
using namespace tg_emu_ir;

std::string array(const long long* a) { return fmt::format("{{{},{},{},{}}}", a[0], a[1], a[2], a[3]); }

/// The harness: random inputs, the planned launch (main kernel, then the finish kernel when the
/// rows are split), a float64 evaluation of tg_fused over every element, and the comparison.
std::string harness(const std::string& id, const FusedProgramSource& prog, const std::vector<DType>& in,
                    const std::vector<TensorData>& inputs, const Plan& pl, const Launch& l) {
  const size_t n = in.size(), nout = prog.outputs.size();
  std::string h = fmt::format("#include \"k{}.cu\"\n#include <random>\nint main() {{\n", id);
  // Positive values: inputs that stand for variances keep rsqrt finite.
  h += "  std::mt19937 rng(7);\n  std::uniform_real_distribution<float> U(0.5f, 2.f);\n";
  for (size_t m = 0; m < n; ++m) {
    h += fmt::format("  std::vector<{0}> x{1}({2});\n  for (auto& v : x{1}) v = tg_dev::st<{0}>(U(rng));\n",
                     device_type(in[m]), m, inputs[m].num_elements());
  }
  const long long O = pl.dims.O;
  for (size_t k = 0; k < nout; ++k) {
    h += fmt::format("  std::vector<{}> y{}({});\n  std::vector<{}> q{}({});\n", device_type(prog.outputs[k]), k, O,
                     acc_type(prog.outputs[k]), k, O * l.splits);
  }
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] != 's') h += fmt::format("  tg_fr_st s{}{{{},{}}};\n", m, array(pl.strides[m].k), array(pl.strides[m].r));
  }
  h += fmt::format("  tg_fr_dims d{{{},{},{},{}}};\n", array(pl.dims.k), array(pl.dims.r), pl.dims.O, pl.dims.R);
  std::string args;
  for (size_t k = 0; k < nout; ++k) args += fmt::format("y{}.data(), ", k);
  std::string qs;
  for (size_t k = 0; k < nout; ++k) qs += fmt::format("q{}.data(), ", k);
  args += qs;
  for (size_t m = 0; m < n; ++m) args += fmt::format("x{}.data(), ", m);
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] != 's') args += fmt::format("s{}, ", m);
  }
  h += fmt::format("  tg_emu::launch(dim3({}, {}), dim3({}, {}), [&] {{ tg_fr_32({}d, nullptr); }});\n", l.blocks,
                   l.splits, l.block.x, l.block.y, args);
  if (l.splits > 1) {
    std::string fargs;
    for (size_t k = 0; k < nout; ++k) fargs += fmt::format("y{}.data(), ", k);
    h += fmt::format("  tg_emu::launch(dim3({}), dim3(32, {}), [&] {{ tg_fr_finish({}{}{}LL, {}LL); }});\n", (O + 31) / 32,
                     pow2_ceil(l.splits, kFinishThreads / 32), fargs, qs, O, l.splits);
  }
  // float64 reference: every (o, r) through the merged dims' strides.
  for (size_t k = 0; k < nout; ++k) h += fmt::format("  std::vector<double> ref{}({});\n", k, O);
  h += fmt::format("  for (long long o = 0; o < {}; ++o) for (long long r = 0; r < {}; ++r) {{\n", O, pl.dims.R);
  h += "    long long ko[4] = {}, ro[4] = {};\n";
  h += fmt::format("    for (long long t = o, j = {}; j >= 0; --j) {{ ko[j] = t % d.k[j]; t /= d.k[j]; }}\n", pl.nk - 1);
  h += fmt::format("    for (long long t = r, j = {}; j >= 0; --j) {{ ro[j] = t % d.r[j]; t /= d.r[j]; }}\n", pl.nr - 1);
  std::string call = "    const tg_fused_out f = tg_fused(";
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] == 's') {
      call += fmt::format("x{}[0], ", m);
      continue;
    }
    h += fmt::format("    long long a{} = 0;\n    for (int j = 0; j < 4; ++j) a{} += ko[j] * s{}.k[j] + ro[j] * s{}.r[j];\n",
                     m, m, m, m);
    call += fmt::format("x{}[a{}], ", m, m);
  }
  h += call + "nullptr);\n";
  for (size_t k = 0; k < nout; ++k) h += fmt::format("    ref{0}[o] += static_cast<double>(tg_dev::cv(f.o{0}));\n", k);
  h += "  }\n  int bad = 0;\n";
  std::string compare;
  for (size_t k = 0; k < nout; ++k) {
    // The kernel rounds its sum once to the output dtype; the sums' order differs.
    const bool rounded16 = prog.outputs[k] == DType::f16 || prog.outputs[k] == DType::bf16;
    compare += fmt::format(
        "  for (long long o = 0; o < {1}; ++o) {{\n"
        "    const double got = tg_dev::cv(y{0}[o]), want = ref{0}[o];\n"
        "    if (!(std::fabs(got - want) <= {2} * (1 + std::fabs(want))) && !(got != got && want != want)) {{\n"
        "      if (++bad <= 5) std::printf(\"output {0}[%lld]: got %.9g, want %.9g\\n\", o, got, want);\n"
        "    }}\n  }}\n",
        k, O, rounded16 ? 1e-2 : 1e-5);
  }
  h += compare;
  // The launch whose last block finishes the split sums (fused_reduce_kernel's choice for few
  // outputs; the finish kernel is checked above): the outputs within the same tolerance, and the
  // counter back at zero.
  const bool last_block = finishes_in_last_block(O, l.splits);
  if (last_block) {
    for (size_t k = 0; k < nout; ++k) h += fmt::format("  std::fill(y{0}.begin(), y{0}.end(), {1}{{}});\n", k, device_type(prog.outputs[k]));
    h += "  unsigned cnt = 0;\n";
    h += fmt::format("  tg_emu::launch(dim3({}, {}), dim3({}, {}), [&] {{ tg_fr_32({}d, &cnt); }});\n", l.blocks,
                     l.splits, l.block.x, l.block.y, args);
    h += "  if (cnt != 0) { ++bad; std::printf(\"last block: counter %u after the launch\\n\", cnt); }\n";
    h += compare;
  }
  h += fmt::format("  std::printf(\"k{}: %s (mode {} vec {} block {}x{} grid {}x{}, {} outputs{})\\n\", bad ? \"MISMATCH\" : \"ok\");\n",
                   id, pl.mode, pl.vec, l.block.x, l.block.y, l.blocks, l.splits, nout,
                   last_block ? ", last-block finish too" : "");
  h += "  return bad ? 1 : 0;\n}\n";
  return h;
}

/// Writes k<name>.cu and h<name>.cpp for node %<id> of the printed executable `lines`.
void write_node(const std::vector<std::string>& lines, const std::string& id, const std::string& out_dir,
                const std::string& name) {
  const auto types = node_types(lines);
  auto line = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind("%" + id + " = ", 0) == 0; });
  if (line == lines.end() || line->find("= fused_reduce(") == std::string::npos) {
    fail(ErrorCode::not_found, "tg_fused_reduce_emu", "%{} is not a fused_reduce node", id);
  }
  const std::string& l = *line;
  const ir::FusedAttrs attrs = fused_attrs(l);
  std::vector<DType> in;
  std::vector<TensorData> inputs;
  for (const TensorType& t : input_types(l, "fused_reduce", types)) {
    in.push_back(t.dtype);
    inputs.push_back(TensorData::zeros(t.shape, t.dtype));
  }
  const FusedProgramSource& prog = cached_fused_program(attrs, in, "fused_reduce");
  Plan pl = plan_reduce(attrs, inputs, "fused_reduce");
  choose_layout(pl, inputs);
  const Launch launch = launch_shape(pl, 132);  // an H200's SM count
  std::ofstream(out_dir + "/k" + name + ".cu") << reduce_source(prog, in, pl);
  std::ofstream(out_dir + "/h" + name + ".cpp") << harness(name, prog, in, inputs, pl, launch);
}

/// Batch-norm-like statistics and backward-like sums of x over `axes` (the program of the
/// conformance case fused_normalize_*), compiled for the CPU with fusion on; the printed lines.
std::vector<std::string> normalize_graph(const Shape& shape, const Shape& scale_shape, DType dtype,
                                         std::vector<int64_t> axes) {
  Graph g;
  Tensor x = g.placeholder(shape, dtype, "x");
  Tensor s = g.placeholder(scale_shape, dtype, "s");
  Tensor mean = reduce_mean(x, {.axes = axes, .keep_dims = true});
  Tensor centered = x - mean;
  Tensor var = reduce_mean(square(centered), {.axes = axes, .keep_dims = true});
  Tensor y = centered * (s * rsqrt(var + 1e-3));
  Tensor sy = reduce_sum(square(y), {.axes = axes, .keep_dims = true});
  Tensor syx = reduce_sum(y * x, {.axes = axes, .keep_dims = true});
  setenv("TG_FUSION", "1", 1);
  Executable exe = g.compile(Device::cpu(), {{x, {shape, dtype}}, {s, {scale_shape, dtype}}}, {mean, var, y, sy, syx});
  return split(exe.to_string(), "\n");
}

/// Two sibling sums over `axes` (one fused_reduce node with two outputs, a one-element input):
/// sum(x) and sum(x * x * s), compiled for the CPU with fusion on; the printed lines.
std::vector<std::string> sums_graph(const Shape& shape, DType dtype, std::vector<int64_t> axes) {
  Graph g;
  Tensor x = g.placeholder(shape, dtype, "x");
  Tensor s = g.placeholder({}, dtype, "s");
  Tensor a = reduce_sum(x, {.axes = axes});
  Tensor b = reduce_sum(x * x * s, {.axes = axes});
  setenv("TG_FUSION", "1", 1);
  Executable exe = g.compile(Device::cpu(), {{x, {shape, dtype}}, {s, {{}, dtype}}}, {a, b});
  return split(exe.to_string(), "\n");
}

/// --selftest: the fused reductions of NHWC statistics (40 channels: vector loads, a partial
/// block of outputs; f32 and bf16 with 128 splits, so the finish kernel's lanes run their unrolled
/// loop; f16 with 8), of NCHW ones (row mode, 4 splits), of a whole vector (4 splits, also
/// through the last-block finish) and of long vectors in stream mode. Written for run.sh.
void selftest(const std::string& out_dir) {
  struct Case {
    std::string name;
    Shape shape, scale;
    DType dtype;
    std::vector<int64_t> axes;
    bool sums = false;  ///< sums_graph instead of normalize_graph
  };
  const Case cases[] = {{"nhwc_f32", {16, 32, 32, 40}, {40}, DType::f32, {0, 1, 2}},
                        {"nhwc_bf16", {32, 32, 32, 40}, {40}, DType::bf16, {0, 1, 2}},
                        {"nhwc_f16", {8, 16, 16, 40}, {40}, DType::f16, {0, 1, 2}},
                        {"nchw_f32", {16, 12, 32, 32}, {12, 1, 1}, DType::f32, {0, 2, 3}},
                        // A full reduction (one output, 4 splits): the last-block finish of a
                        // loop condition such as mean(y) > t (small: the emulation is slow).
                        {"full_f32", {16384}, {1}, DType::f32, {0}},
                        // Stream mode (>= 2^16 elements in one contiguous reduced dim), two
                        // sibling sums with a one-element input: float4 loads and a tail of 3
                        // (f32), 8-element bf16 vectors over two merged dims (sums beyond f16's
                        // range); 16 blocks, the loop, the finish kernel and the last-block finish.
                        {"stream_f32", {65539}, {1}, DType::f32, {0}, true},
                        {"stream_bf16", {2, 65536}, {1}, DType::bf16, {0, 1}, true}};
  for (const Case& c : cases) {
    const std::vector<std::string> lines =
        c.sums ? sums_graph(c.shape, c.dtype, c.axes) : normalize_graph(c.shape, c.scale, c.dtype, c.axes);
    int count = 0;
    for (const std::string& l : lines) {
      if (l.find(" = fused_reduce(") == std::string::npos) continue;
      const std::string id = l.substr(1, l.find(' ') - 1);
      write_node(lines, id, out_dir, c.name + "_" + id);
      ++count;
    }
    if (count == 0) fail(ErrorCode::internal, "tg_fused_reduce_emu", "no fused_reduce in the {} graph", c.name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return tg_emu_ir::program_main(argc, argv, "tg_fused_reduce_emu", write_node, selftest);
}
