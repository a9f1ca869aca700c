// Data-parallel training's gradient reduction: gradients averaged over the ranks in buckets
// (PyTorch DDP's gradient buckets): fewer, larger collectives than one per weight, each started
// as soon as the backward pass has produced its last gradient (GradientBuckets::ready, called
// from the reverse sweep of gradients_as_ready), so that on CUDA the all_reduce runs on
// NCCL's stream while the backward of the earlier layers computes.
#include "core/error_util.h"
#include "nn/model_impl.h"
#include "tg/ops.h"

namespace tg::nn::detail {

GradientBuckets::GradientBuckets(const std::vector<TensorType>& types, Communicator comm, int64_t bucket_bytes)
    : comm_(std::move(comm)), grads_(types.size()), bucket_of_(types.size(), -1) {
  // Buckets filled from the last gradient to the first (DDP's reverse parameter order), at most
  // bucket_bytes each (a larger gradient alone), one dtype per bucket.
  int64_t bytes = 0;
  for (size_t k = types.size(); k-- > 0;) {
    const TensorType& t = types[k];
    if (!is_static(t.shape)) {
      fail(ErrorCode::invalid_argument, "compile", "data parallelism needs static weight shapes, a gradient is {}",
           t.to_string());
    }
    const int64_t size = num_elements(t.shape) * static_cast<int64_t>(dtype_size(t.dtype));
    if (buckets_.empty() || (bytes + size > bucket_bytes || types[buckets_.back().members[0]].dtype != t.dtype)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().members.push_back(k);
    bucket_of_[k] = static_cast<int>(buckets_.size()) - 1;
    bytes += size;
  }
}

void GradientBuckets::ready(size_t index, const Tensor& grad) {
  TG_CHECK_INTERNAL(index < grads_.size() && !grads_[index].valid(), "a gradient reported twice");
  grads_[index] = grad;
  Bucket& b = buckets_[static_cast<size_t>(bucket_of_[index])];
  if (++b.ready == b.members.size()) start(b);
}

void GradientBuckets::start(Bucket& b) {
  ++started_;
  if (b.members.size() == 1) {
    b.reduced = all_reduce(grads_[b.members[0]], comm_, {CollectiveReduction::mean});
    return;
  }
  std::vector<Tensor> flat;
  for (size_t i : b.members) flat.push_back(reshape(grads_[i], {num_elements(grads_[i].shape())}));
  b.reduced = all_reduce(concat(flat, 0), comm_, {CollectiveReduction::mean});
}

std::vector<Tensor> GradientBuckets::finish() {
  for (Bucket& b : buckets_) {
    TG_CHECK_INTERNAL(b.reduced.valid(), "a gradient bucket was never started");
  }
  // The buckets are split back only now, after the whole backward: their readers come last in
  // the schedule, so nothing waits for a collective before the backward is queued.
  std::vector<Tensor> out(grads_.size());
  for (Bucket& b : buckets_) {
    if (b.members.size() == 1) {
      out[b.members[0]] = b.reduced;
      continue;
    }
    int64_t offset = 0;
    for (size_t i : b.members) {
      const int64_t n = num_elements(grads_[i].shape());
      out[i] = reshape(slice(b.reduced, {.begin = {offset}, .end = {offset + n}}), grads_[i].shape());
      offset += n;
    }
  }
  return out;
}

std::vector<Tensor> all_reduce_mean_in_buckets(const std::vector<Tensor>& grads, const Communicator& comm,
                                               int64_t bucket_bytes) {
  std::vector<TensorType> types;
  for (const Tensor& g : grads) types.push_back(g.type());
  GradientBuckets buckets(types, comm, bucket_bytes);
  for (size_t k = grads.size(); k-- > 0;) buckets.ready(k, grads[k]);
  return buckets.finish();
}

}  // namespace tg::nn::detail
