// Data-parallel training's gradient reduction: gradients averaged over the ranks in buckets
// (PyTorch DDP's gradient buckets): fewer, larger collectives than one per weight.
#include "core/error_util.h"
#include "nn/model_impl.h"
#include "tg/ops.h"

namespace tg::nn::detail {

std::vector<Tensor> all_reduce_mean_in_buckets(const std::vector<Tensor>& grads, const Communicator& comm,
                                               int64_t bucket_bytes) {
  std::vector<Tensor> out(grads.size());
  std::vector<size_t> bucket;  // indices into grads, in the order they were added
  int64_t bytes = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    if (bucket.size() == 1) {
      out[bucket[0]] = all_reduce(grads[bucket[0]], comm, {CollectiveReduction::mean});
    } else {
      std::vector<Tensor> flat;
      for (size_t i : bucket) flat.push_back(reshape(grads[i], {num_elements(grads[i].shape())}));
      Tensor reduced = all_reduce(concat(flat, 0), comm, {CollectiveReduction::mean});
      int64_t offset = 0;
      for (size_t i : bucket) {
        const int64_t n = num_elements(grads[i].shape());
        out[i] = reshape(slice(reduced, {.begin = {offset}, .end = {offset + n}}), grads[i].shape());
        offset += n;
      }
    }
    bucket.clear();
    bytes = 0;
  };
  for (size_t k = grads.size(); k-- > 0;) {
    const Tensor& g = grads[k];
    if (!is_static(g.shape())) {
      fail(ErrorCode::invalid_argument, "compile", "data parallelism needs static weight shapes, a gradient is {}",
           g.type().to_string());
    }
    const int64_t size = num_elements(g.shape()) * static_cast<int64_t>(dtype_size(g.dtype()));
    if (!bucket.empty() && (bytes + size > bucket_bytes || grads[bucket[0]].dtype() != g.dtype())) flush();
    bucket.push_back(k);
    bytes += size;
  }
  flush();
  return out;
}

}  // namespace tg::nn::detail
