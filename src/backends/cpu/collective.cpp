// CPU kernels of the collective family. The single communicator: the identity (a copy). In-process groups
// (threads as ranks, core/communicator.h): a rendezvous where every rank computes its own output
// from every rank's input, in rank order, so that every rank gets the same bits. NCCL groups run
// on CUDA devices only.
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "core/communicator.h"

namespace tg::cpu {
namespace {

using Inputs = std::span<const void* const>;

// Accumulator of storage type T: double for floating types, int64 for integers (wrapping back
// to T on store, as two's complement does).
template <typename T>
using acc_t = std::conditional_t<is_float_v<T>, double, int64_t>;

template <typename T>
acc_t<T> combine(CollectiveReduction r, acc_t<T> acc, acc_t<T> v) {
  switch (r) {
    case CollectiveReduction::sum:
    case CollectiveReduction::mean:
      if constexpr (std::is_integral_v<acc_t<T>>) {
        return static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
      } else {
        return acc + v;
      }
    case CollectiveReduction::max:  // NaN-propagating, as maximum
      if constexpr (is_float_v<T>) {
        if (std::isnan(acc) || std::isnan(v)) return std::isnan(acc) ? acc : v;
      }
      return v > acc ? v : acc;
    case CollectiveReduction::min:
      if constexpr (is_float_v<T>) {
        if (std::isnan(acc) || std::isnan(v)) return std::isnan(acc) ? acc : v;
      }
      return v < acc ? v : acc;
  }
  return acc;
}

// out[j] = reduce_r in_r[offset + j] for j in [0, count), blocks [offset, offset + count) of
// every rank's input.
template <typename T>
void reduce_block(CollectiveReduction r, Inputs in, int64_t offset, int64_t count, T* out) {
  const auto world = static_cast<int64_t>(in.size());
  parallel_for(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      auto load = [&](int64_t rank) {
        return static_cast<acc_t<T>>(static_cast<compute_t<T>>(static_cast<const T*>(in[rank])[offset + j]));
      };
      acc_t<T> acc = load(0);
      for (int64_t rank = 1; rank < world; ++rank) acc = combine<T>(r, acc, load(rank));
      if constexpr (is_float_v<T>) {
        if (r == CollectiveReduction::mean) acc /= static_cast<double>(world);
        out[j] = static_cast<T>(static_cast<compute_t<T>>(acc));
      } else {
        out[j] = static_cast<T>(acc);
      }
    }
  });
}

// Dims before `axis`, the dim itself, and the elements after it.
struct Split3 {
  int64_t outer = 1, dim = 1, inner = 1;
};
Split3 split_at(const Shape& shape, int64_t axis) {
  Split3 s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    if (d == axis) s.dim = shape[d];
    if (d > axis) s.inner *= shape[d];
  }
  return s;
}

void compute(const ir::Node& node, const ir::CollectiveAttrs& a, const TensorData& x, TensorData& y, Inputs in) {
  const char* op = ir::op_name(node.kind).data();
  switch (node.kind) {
    case ir::OpKind::all_reduce:
      dispatch<DTypeGroup::numeric>(x.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        reduce_block<T>(a.reduction, in, 0, x.num_elements(), y.data<T>());
      });
      return;
    case ir::OpKind::reduce_scatter: {
      const Split3 s = split_at(x.shape(), a.axis);
      const int64_t block = s.dim / a.world_size * s.inner;  // elements of one output row
      dispatch<DTypeGroup::numeric>(x.dtype(), op, [&](auto tag) {
        using T = decltype(tag);
        for (int64_t o = 0; o < s.outer; ++o) {
          reduce_block<T>(a.reduction, in, o * s.dim * s.inner + a.rank * block, block, y.data<T>() + o * block);
        }
      });
      return;
    }
    case ir::OpKind::all_gather: {
      const Split3 s = split_at(x.shape(), a.axis);
      const size_t row = static_cast<size_t>(s.dim * s.inner) * dtype_size(x.dtype());
      auto* out = static_cast<char*>(y.raw_data());
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int r = 0; r < a.world_size; ++r) {
          if (row) std::memcpy(out + (o * a.world_size + r) * row, static_cast<const char*>(in[r]) + o * row, row);
        }
      }
      return;
    }
    case ir::OpKind::broadcast:
      if (x.nbytes()) std::memcpy(y.raw_data(), in[a.root], x.nbytes());
      return;
    default:
      TG_CHECK_INTERNAL(false, "not a collective");
  }
}

// "all_reduce(sum) f32[4,3]": what every rank must run at the same rendezvous.
std::string signature(const ir::Node& node, const ir::CollectiveAttrs& a, const TensorData& x) {
  std::string params;
  switch (node.kind) {
    case ir::OpKind::all_reduce: params = collective_reduction_name(a.reduction); break;
    case ir::OpKind::reduce_scatter:
      params = fmt::format("{}, axis={}", collective_reduction_name(a.reduction), a.axis);
      break;
    case ir::OpKind::all_gather: params = fmt::format("axis={}", a.axis); break;
    default: params = fmt::format("root={}", a.root); break;
  }
  return fmt::format("{}({}) {}", ir::op_name(node.kind), params, x.type().to_string());
}

void collective_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::CollectiveAttrs>(ctx.node.attrs);
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  const std::string_view op = ir::op_name(ctx.node.kind);
  if (a.group == 0) {  // the single communicator: every collective is the identity
    if (x.nbytes()) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  std::shared_ptr<detail::CommGroup> group = core::find_comm_group(a.group, op);
  auto* in_process = dynamic_cast<core::InProcessGroup*>(group.get());
  if (!in_process) {
    fail(ErrorCode::unsupported, op, "the CPU backend runs in_process communicators; {} needs a CUDA device "
         "(x {})", comm_backend_name(a.backend), x.type().to_string());
  }
  if (group->world_size() != a.world_size) {
    fail(ErrorCode::internal, op, "group {} has {} ranks, the node says {}", a.group, group->world_size(),
         a.world_size);
  }
  in_process->exchange(a.rank, op, signature(ctx.node, a, x), x.raw_data(),
                       [&](Inputs in) { compute(ctx.node, a, x, y, in); });
}

}  // namespace

void register_collective_kernels(KernelTable& t) {
  t.set(ir::OpKind::all_reduce, collective_kernel);
  t.set(ir::OpKind::all_gather, collective_kernel);
  t.set(ir::OpKind::reduce_scatter, collective_kernel);
  t.set(ir::OpKind::broadcast, collective_kernel);
}

}  // namespace tg::cpu
