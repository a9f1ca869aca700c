// Slice geometry shared by slice's type inference, its kernels, its gradient rule and the memory
// plan (which slices are views).
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace tg::ops {

/// Python slice.indices() for one dim of size `dim` (stride != 0): the first index read and the
/// number of elements.
void resolve_slice_dim(int64_t begin, int64_t end, int64_t stride, int64_t dim, int64_t* start,
                       int64_t* length);

/// Where a slice is a view (no copy): a slice along one axis with stride 1 whose output dims
/// before that axis are all 1 reads one contiguous block of its input (torch.chunk / ONNX Split
/// along a leading axis, the query, key and value of passes::merge_projections). When that block
/// is not empty and starts a multiple of kSliceViewAlignment bytes in (the alignment the arena
/// gives every value, which cuBLASLt's algorithms and the vectorized kernels assume), the slice
/// is that block of its input's storage. Returns the block's byte offset, else nullopt (the slice
/// is copied). Decided from the node alone (its SliceDesc, normalized when the op was built, and
/// its static output type), so the memory plan (runtime::view_input) and the kernels agree.
constexpr int64_t kSliceViewAlignment = 256;
std::optional<int64_t> slice_view_offset(const ir::Node& node);

}  // namespace tg::ops
