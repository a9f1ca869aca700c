// Slice geometry shared by slice's type inference, its kernels and its gradient rule.
#pragma once
#include <cstdint>

namespace tg::ops {

/// Python slice.indices() for one dim of size `dim` (stride != 0): the first index read and the
/// number of elements.
void resolve_slice_dim(int64_t begin, int64_t end, int64_t stride, int64_t dim, int64_t* start,
                       int64_t* length);

}  // namespace tg::ops
