// Synchronized batch normalization: batch_norm (tg/nn.h) with the statistics of every rank of a
// communicator (tg/collective.h). A header of its own, beside the collectives (not bound in
// Python, as the communicators are not).
#pragma once
#include "tg/collective.h"
#include "tg/export.h"
#include "tg/graph.h"
#include "tg/nn.h"

namespace tg {

/// Synchronized batch normalization (PyTorch's SyncBatchNorm): batch_norm (same arguments, types,
/// options and errors) whose training statistics are those of the batch of every rank of `comm`
/// together (docs/distributed.md): per channel, the sum and the element count are all-reduced
/// (sum) into the global mean, then the sum of squared deviations from it into the global biased
/// variance (two passes, as batch_norm's own, so 2 ranks on b rows each normalize as one rank on
/// the 2b rows). The running statistics move towards the global mean and the unbiased global
/// variance (count N / (N - 1)), so they stay identical on every rank. The gradient flows through
/// the all_reduces (their transposes: the sum of every rank's cotangents, which is PyTorch's
/// all-reduce of sum(dy) and sum(dy * xhat) in its backward). Inference (is_training false)
/// uses the running statistics and no collective. The statistics are computed in f32 for f16 and
/// bf16 x. On the single communicator it equals batch_norm (the all_reduces are identities).
TG_API Tensor sync_batch_norm(Tensor x, Tensor gamma, Tensor beta, Tensor running_mean, Tensor running_var,
                              Tensor is_training, const Communicator& comm, BatchNormOptions options = {});

/// The name of the all_reduce nodes sync_batch_norm builds ("sync_batch_norm"): nn models built
/// with BatchNormLayerOptions::sync bind them to the communicator given at compile.
TG_API extern const char* const kSyncBatchNormCollective;

}  // namespace tg
