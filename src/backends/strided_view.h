// Strided views shared by the backends' data-movement kernels: broadcast_to, transpose, slice,
// reverse and tile each read their input through one view (output element at multi-index o is
// source element offset + sum(o[i] * strides[i])); a backend only has to copy a view.
#pragma once
#include <optional>

#include "backends/kernel.h"

namespace tg::backends {

struct StridedView {
  Shape shape;                   ///< the output shape
  std::vector<int64_t> strides;  ///< source stride (elements) per output dim; 0 or negative allowed
  int64_t offset = 0;
};

/// Drops dims of size 1 and merges neighbours that are contiguous in the source as well, so that
/// e.g. a transpose of [N, C, H, W] to [N, H, W, C] becomes a 3-d copy [N, H*W, C]. Never empty:
/// a view of one element is [1] with stride 1.
StridedView simplify(const StridedView& v);

/// The view through which ctx's node (broadcast_to, transpose, slice, reverse or tile) reads its
/// input 0; nullopt when the output is empty (a slice or reverse of a zero-length dim). Raises
/// tg::Error(shape_mismatch) naming the op when a broadcast_to input does not broadcast.
std::optional<StridedView> view_of(const KernelContext& ctx);


/// For a slice kernel: when the caller left ctx.outputs[0] empty (the runtime does for the views
/// of ops::slice_view_offset), binds it to that block of ctx.inputs[0] and returns true; an empty
/// output of a slice that is not such a view gets new memory on the input's device (false: the
/// kernel copies).
bool bind_slice_view(KernelContext& ctx);

}  // namespace tg::backends
