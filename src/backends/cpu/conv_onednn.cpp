// The f32 (and native bf16) convolution path on oneDNN (the C++ API of Debian's libdnnl, 2.x):
// the convolution_forward, convolution_backward_data and convolution_backward_weights primitives.
//
// Formats. The tensors' own (plain) formats are described to oneDNN by strides; weights with
// groups > 1 get the 5-D grouped dims {G, O/G, I/G, kH, kW}. Which formats the primitive itself
// works in decides which oneDNN kernel runs, and no one choice is best everywhere (measured on
// AVX-512: plain nhwc activations with blocked weights suit most ResNet layers; nchw with groups
// falls back to a 20x slower gemm unless the activations are blocked too; a 3-channel stem's
// backward-data is fastest as plain gemm). So up to three candidates are built:
//   1. activations plain, weights `any` (reordered to the kernel's blocked format per call);
//   2. everything `any` (activations reordered to and from the blocked format around the call);
//   3. everything plain;
// candidates that resolve to the same kernel and formats are dropped, and the first time a
// problem runs each remaining one is timed on the real data (reorders included) and the fastest
// is kept (small problems just take the first). Primitives are cached per problem (a training
// step runs the same shapes every time); the scratchpad is user-managed per calling thread, so a
// primitive may run from several threads.
//
// bf16 runs natively (f32 accumulation, one rounding) when oneDNN has a kernel other than its
// reference one for it on this CPU (AVX512-BF16 or AMX, or emulated on AVX-512); otherwise the
// caller computes in f32.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/conv_kernels.h"
#include "core/error_util.h"

namespace tg::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// The engine and the primitive cache live until the process ends (never destroyed, so that no
// static destructor runs a primitive's destructor after its engine's).
dnnl::engine& engine() {
  static auto* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

// A grow-only 64-byte-aligned buffer (reused across calls: no page faults on the hot path).
class Buffer {
 public:
  void* get(size_t bytes) {
    if (bytes > size_) {
      const size_t size = (bytes + 4095) / 4096 * 4096;
      data_.reset(static_cast<char*>(std::aligned_alloc(64, size)));
      size_ = data_ ? size : 0;
      if (!data_) throw Error(ErrorCode::out_of_memory, "[conv2d] out of memory for a buffer");
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

// Per-thread temporaries: the two inputs and the output in the primitive's formats, and the
// scratchpad.
struct Workspace {
  Buffer a, b, out, scratch;
};

// ---- descriptors -------------------------------------------------------------------------------

memory::data_type data_type_of(const ConvProblem& p) {
  return p.dtype == DType::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory::desc data_desc(const ops::DataDims& d, Layout l, memory::data_type dt) {
  return memory::desc({d.n, d.c, d.h, d.w}, dt, l == Layout::nchw ? Tag::nchw : Tag::nhwc);
}

memory::desc weights_desc(const ops::WeightDims& d, int64_t groups, Layout l,
                          memory::data_type dt) {
  const std::array<int64_t, 4> s = ops::weight_strides(d, l);  // o, i, kh, kw
  if (groups == 1)
    return memory::desc({d.o, d.i, d.kh, d.kw}, dt, memory::dims{s[0], s[1], s[2], s[3]});
  const int64_t og = d.o / groups;
  return memory::desc({groups, og, d.i, d.kh, d.kw}, dt,
                      memory::dims{og * s[0], s[0], s[1], s[2], s[3]});
}

memory::desc any_like(const memory::desc& md) {
  return memory::desc(md.dims(), md.data_type(), Tag::any);
}

// ---- cached primitives -------------------------------------------------------------------------

// One operand of the primitive: its argument id, the tensor's plain format and the primitive's.
// `reorder` converts plain -> primitive (inputs) or primitive -> plain (the output).
struct Operand {
  int arg = 0;
  memory::desc user, prim;
  std::optional<dnnl::reorder> reorder;
};

struct ConvPrimitive {
  dnnl::primitive prim;
  Operand a, b, out;
  memory::desc scratchpad;
  std::string impl;  ///< oneDNN's name of the kernel, e.g. "brgconv:avx512_core"

  bool same_as(const ConvPrimitive& o) const {
    return impl == o.impl && a.prim == o.a.prim && b.prim == o.b.prim && out.prim == o.out.prim;
  }
};

// Which formats the primitive is asked to work in (see the top of the file).
struct Formats {
  bool data_any = false, weights_any = false;
};
constexpr Formats kCandidates[] = {{false, true}, {true, true}, {false, false}};
constexpr int kNumCandidates = 3;

// Problems below this many flops are not timed (about 0.1 ms of work).
constexpr double kTuneMinFlops = 2e7;

// The user descs of the problem's x, w, y.
struct UserDescs {
  memory::desc x, w, y;
};

UserDescs user_descs(const ConvProblem& p) {
  const memory::data_type dt = data_type_of(p);
  return {data_desc(p.g.x, p.data_layout, dt),
          weights_desc(p.g.w, p.g.groups, p.weights_layout, dt),
          data_desc(p.g.y, p.data_layout, dt)};
}

dnnl::primitive_attr scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Operand operand(int arg, const memory::desc& user, const memory::desc& prim, bool is_output) {
  Operand o{arg, user, prim, std::nullopt};
  if (user != prim) {
    dnnl::primitive_attr attr;  // reorders of plain <-> blocked need no scratchpad
    o.reorder =
        is_output
            ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), prim, engine(), user, attr))
            : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), prim, attr));
  }
  return o;
}

// The problem's convolution descriptor arguments, in oneDNN's terms.
struct Window {
  memory::dims strides, dilates, pad_l, pad_r;
};

Window window_of(const ops::ConvGeometry& g) {
  return {{g.stride_h, g.stride_w},
          {g.dilation_h - 1, g.dilation_w - 1},  // oneDNN counts dilation from 0
          {g.pad_top, g.pad_left},
          {g.pad_bottom, g.pad_right}};
}

// Fills c's primitive, operands, scratchpad and name from a primitive descriptor `pd` whose
// operands are (a, b, out) = (a_arg, b_arg, out_arg) with plain formats (ua, ub, uo).
template <typename Prim, typename PD>
void fill(ConvPrimitive& c, const PD& pd, int a_arg, const memory::desc& ua, int b_arg,
          const memory::desc& ub, int out_arg, const memory::desc& uo) {
  c.prim = Prim(pd);
  c.a = operand(a_arg, ua, pd.query_md(dnnl::query::exec_arg_md, a_arg), false);
  c.b = operand(b_arg, ub, pd.query_md(dnnl::query::exec_arg_md, b_arg), false);
  c.out = operand(out_arg, uo, pd.query_md(dnnl::query::exec_arg_md, out_arg), true);
  c.scratchpad = pd.scratchpad_desc();
  c.impl = pd.impl_info_str();
}

std::shared_ptr<ConvPrimitive> create(const ConvProblem& p, Formats f) {
  namespace d = dnnl;
  const UserDescs u = user_descs(p);
  const memory::desc x = f.data_any ? any_like(u.x) : u.x, y = f.data_any ? any_like(u.y) : u.y;
  const memory::desc w = f.weights_any ? any_like(u.w) : u.w;
  const Window win = window_of(p.g);
  const auto algo = d::algorithm::convolution_direct;
  const d::primitive_attr attr = scratchpad_attr();
  d::convolution_forward::primitive_desc fwd(
      d::convolution_forward::desc(d::prop_kind::forward_training, algo, x, w, y, win.strides,
                                   win.dilates, win.pad_l, win.pad_r),
      attr, engine());
  auto c = std::make_shared<ConvPrimitive>();
  if (p.pass == ConvPass::forward) {
    fill<d::convolution_forward>(*c, fwd, DNNL_ARG_SRC, u.x, DNNL_ARG_WEIGHTS, u.w, DNNL_ARG_DST,
                                 u.y);
  } else if (p.pass == ConvPass::backward_data) {
    d::convolution_backward_data::primitive_desc bwd(
        d::convolution_backward_data::desc(algo, x, w, y, win.strides, win.dilates, win.pad_l,
                                           win.pad_r),
        attr, engine(), fwd);
    fill<d::convolution_backward_data>(*c, bwd, DNNL_ARG_DIFF_DST, u.y, DNNL_ARG_WEIGHTS, u.w,
                                       DNNL_ARG_DIFF_SRC, u.x);
  } else {
    d::convolution_backward_weights::primitive_desc bwd(
        d::convolution_backward_weights::desc(algo, x, w, y, win.strides, win.dilates, win.pad_l,
                                              win.pad_r),
        attr, engine(), fwd);
    fill<d::convolution_backward_weights>(*c, bwd, DNNL_ARG_DIFF_DST, u.y, DNNL_ARG_SRC, u.x,
                                          DNNL_ARG_DIFF_WEIGHTS, u.w);
  }
  return c;
}

// Everything that decides the primitive.
struct Key {
  std::array<int64_t, 24> v{};
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t x : k.v) h = h * 1000003u ^ std::hash<int64_t>()(x);
    return h;
  }
};

Key key_of(const ConvProblem& p) {
  const ops::ConvGeometry& g = p.g;
  // clang-format off
  return {{static_cast<int64_t>(p.pass), static_cast<int64_t>(p.data_layout),
           static_cast<int64_t>(p.weights_layout), static_cast<int64_t>(p.dtype),
           g.x.n, g.x.c, g.x.h, g.x.w, g.w.o, g.w.i, g.w.kh, g.w.kw, g.y.h, g.y.w, g.groups,
           g.stride_h, g.stride_w, g.dilation_h, g.dilation_w,
           g.pad_top, g.pad_bottom, g.pad_left, g.pad_right}};
  // clang-format on
}

// ---- execution ---------------------------------------------------------------------------------

// The input's memory in the primitive's format (reordered into `tmp` when that differs).
memory input_memory(const Operand& o, const void* data, Buffer& tmp) {
  memory user(o.user, engine(), const_cast<void*>(data));
  if (!o.reorder) return user;
  memory prim(o.prim, engine(), tmp.get(o.prim.get_size()));
  o.reorder->execute(stream(), user, prim);
  return prim;
}

void execute(const ConvPrimitive& c, const void* a, const void* b, void* out) {
  thread_local Workspace ws;
  memory ma = input_memory(c.a, a, ws.a), mb = input_memory(c.b, b, ws.b);
  memory user_out(c.out.user, engine(), out);
  memory mo =
      c.out.reorder ? memory(c.out.prim, engine(), ws.out.get(c.out.prim.get_size())) : user_out;
  std::unordered_map<int, memory> args{{c.a.arg, ma}, {c.b.arg, mb}, {c.out.arg, mo}};
  if (c.scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(c.scratchpad, engine(), ws.scratch.get(c.scratchpad.get_size())));
  }
  c.prim.execute(stream(), args);
  if (c.out.reorder) c.out.reorder->execute(stream(), mo, user_out);
  stream().wait();
}

bool is_reference(const ConvPrimitive& c) { return c.impl.rfind("ref", 0) == 0; }

// Candidate f's primitive, or nullptr when oneDNN has none for it.
std::shared_ptr<const ConvPrimitive> try_create(const ConvProblem& p, Formats f) {
  try {
    return create(p, f);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// The candidates' distinct primitives, without oneDNN's reference kernels (orders of magnitude
// slower, so not worth timing). Empty when there is nothing else.
std::vector<std::shared_ptr<const ConvPrimitive>> candidates(const ConvProblem& p) {
  std::vector<std::shared_ptr<const ConvPrimitive>> v;
  for (Formats f : kCandidates) {
    std::shared_ptr<const ConvPrimitive> c = try_create(p, f);
    bool keep = c && !is_reference(*c);
    for (const auto& o : v) keep = keep && !c->same_as(*o);
    if (keep) v.push_back(std::move(c));
  }
  return v;
}

// Multiply-adds x 2 of the problem (the same for all three passes).
double flops(const ConvProblem& p) {
  const ops::ConvGeometry& g = p.g;
  return 2.0 * static_cast<double>(g.y.n * g.y.h * g.y.w) *
         static_cast<double>(g.w.o * g.w.i * g.w.kh * g.w.kw);
}

// The fastest of `v` on this data: each runs twice (the first run also touches its buffers) and
// is judged by its faster run; one clearly slower than the best so far runs once.
std::shared_ptr<const ConvPrimitive> fastest(
    const std::vector<std::shared_ptr<const ConvPrimitive>>& v, const void* a, const void* b,
    void* out) {
  std::shared_ptr<const ConvPrimitive> best;
  double best_time = 0;
  for (const auto& c : v) {
    double t = 0;
    for (int run = 0; run < 2; ++run) {
      auto start = std::chrono::steady_clock::now();
      execute(*c, a, b, out);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      t = run == 0 ? s : std::min(t, s);
      if (best && t > 2 * best_time) break;
    }
    if (!best || t < best_time) {
      best = c;
      best_time = t;
    }
  }
  return best;
}

// The primitive to run p with. f32: the first candidate for small problems (building and timing
// the others would cost more than it could save), else the fastest; oneDNN's reference kernel
// only when nothing else exists. bf16: likewise but never the reference kernel: nullptr then.
std::shared_ptr<const ConvPrimitive> choose(const ConvProblem& p, const void* a, const void* b,
                                            void* out) {
  const bool f32 = p.dtype == DType::f32;
  if (flops(p) < kTuneMinFlops) {
    std::shared_ptr<const ConvPrimitive> c = try_create(p, kCandidates[0]);
    if (c && (f32 || !is_reference(*c))) return c;
  }
  std::vector<std::shared_ptr<const ConvPrimitive>> v = candidates(p);
  if (v.empty()) return f32 ? create(p, kCandidates[0]) : nullptr;  // f32: raises oneDNN's error
  return v.size() == 1 ? v[0] : fastest(v, a, b, out);
}

// The cached choice for p (made on first use, with p's data).
std::shared_ptr<const ConvPrimitive> cached(const ConvProblem& p, const void* a, const void* b,
                                            void* out) {
  static std::mutex mutex;
  static auto* cache = new std::unordered_map<Key, std::shared_ptr<const ConvPrimitive>, KeyHash>;
  const Key k = key_of(p);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(k);
  if (it != cache->end()) return it->second;
  std::shared_ptr<const ConvPrimitive> c = choose(p, a, b, out);
  cache->emplace(k, c);
  return c;
}

[[noreturn]] void fail_onednn(const ConvProblem& p, const dnnl::error& e) {
  fail(ErrorCode::internal, p.op, "oneDNN failed: {} (status {})", e.what(),
       static_cast<int>(e.status));
}

}  // namespace

void conv_onednn_candidate(const ConvProblem& p, int index, const void* a, const void* b,
                           void* out) {
  TG_CHECK_INTERNAL(index >= 0 && index < kNumCandidates, "conv candidate index out of range");
  try {
    execute(*create(p, kCandidates[index]), a, b, out);
  } catch (const dnnl::error& e) {
    fail_onednn(p, e);
  }
}

bool conv_onednn(const ConvProblem& p, const void* a, const void* b, void* out) {
  TG_CHECK_INTERNAL(p.dtype == DType::f32 || p.dtype == DType::bf16, "conv_onednn: bad dtype");
  try {
    std::shared_ptr<const ConvPrimitive> c = cached(p, a, b, out);
    if (!c) return false;
    execute(*c, a, b, out);
    return true;
  } catch (const dnnl::error& e) {
    fail_onednn(p, e);
  }
}

}  // namespace tg::cpu
