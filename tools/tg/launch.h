// `tg train --devices N` and launcher-started ranks: how the ranks of a data-parallel training
// are made (launch.cpp, docs/distributed.md).
#pragma once
#include <functional>
#include <string>

#include "tg/collective.h"
#include "tg/device.h"

namespace tg::cli {

/// Runs `train(communicator, device)` for each rank this process takes part as:
/// - started by a launcher (torchrun, Open MPI or Slurm variables with a world size > 1;
///   launch_environment): one NCCL rank on cuda:<local rank>, the NCCL id through `id_file`
///   (required then: a path every rank can read);
/// - devices == 1: once, alone (the single communicator) on `device`;
/// - devices > 1 on the CPU: `devices` threads of this process (an in_process communicator);
/// - devices > 1 on CUDA: spawns `devices` copies of this command (argv from /proc/self/cmdline)
///   with RANK, WORLD_SIZE, LOCAL_RANK set and --nccl-id-file, waits for them, stops the others
///   when one fails, and raises tg::Error naming the failed rank.
/// Bad combinations raise UsageError (options.h).
void run_ranks(int devices, Device device, const std::string& id_file,
               const std::function<void(const Communicator&, Device)>& train);

}  // namespace tg::cli
