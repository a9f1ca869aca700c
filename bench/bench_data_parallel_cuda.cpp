// Data-parallel ResNet-50 training on 1 and 2 GPUs against PyTorch DDP, in the same invocation on
// the same GPUs (issue 24; docs/distributed.md).
//
// Job: ResNet-50 bf16 training (CompileOptions::precision bf16, NHWC), batch 128 per GPU,
// 224x224, Adam, synthetic data already on the GPUs. For each world size W in --gpus (default
// 1,2) this program starts W worker processes of itself (RANK, WORLD_SIZE, LOCAL_RANK set, one
// per GPU, the NCCL id through a temporary file), each training with DataParallel on an NCCL
// communicator (W = 1: the single communicator, no NCCL): `fit` over `steps` global batches of
// W x 128 rows, timed after a warm-up fit, median of 3 fits. Rank 0 writes its ms per step to a
// result file. Then bench/data_parallel_torch.py runs the same job under torchrun (torch DDP,
// torchvision resnet50, channels-last, bf16 autocast, cudnn.benchmark), timed with CUDA events.
// Printed: images/s of both on each W, the scaling efficiency (images/s on W GPUs / (W x
// images/s on 1 GPU)) of both, and the ratio tg / PyTorch images/s (issue 24's targets: scaling
// >= 0.9 and >= PyTorch DDP on 2 GPUs).
//
// NCCL: libnccl.so.2 is found through LD_LIBRARY_PATH; when it is not set up, the directory of
// PyTorch's NCCL package (python3 -c 'import nvidia.nccl') is added for the workers.
// TG_NCCL_OVERLAP=0 runs the gradient all-reduces on the run's stream (no overlap), to measure
// what the overlap brings.
//
// --check first runs issue 24's weight checks on 2 GPUs: after 3 steps (SGD with momentum, f32,
// deterministic algorithms), the weights of 2 NCCL ranks on global batch 2b equal one GPU's on
// the same batch to 1e-5 relative (per tensor: max |a - b| / max |b|), for an MLP without batch
// norm (b = 32) and for ResNet-18 (32x32x3, 10 classes) with synchronized batch norm (b = 8,
// weights and running statistics), and ResNet-18 again in float64 (<= 1e-10); the reference is
// trained in this process on cuda:0.
//
// Usage: tg_bench_data_parallel_cuda [--gpus 1,2] [--batch 128] [--steps 10] [--sync-bn]
//                                    [--no-peer] [--check] [--no-bench]
// (--sync-bn: synchronized batch norm on both sides: ModelOptions::sync_batch_norm and
// torch.nn.SyncBatchNorm.convert_sync_batchnorm.)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tg/model.h"
#include "tg/tg.h"

namespace {

using clock_type = std::chrono::steady_clock;

struct Args {
  std::vector<int> gpus = {1, 2};
  int64_t batch = 128, steps = 10;
  bool sync_bn = false;
  bool peer = true;
  bool worker = false;
  bool check = false, bench = true;
  std::string check_model;  ///< a check worker's model: "mlp" or "resnet18"
  std::string id_file, result_file;
};

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--gpus")) {
      a.gpus.clear();
      std::stringstream ss(f.value());
      std::string w;
      while (std::getline(ss, w, ',')) a.gpus.push_back(std::stoi(w));
    } else if (f.is("--batch")) {
      a.batch = std::stoll(f.value());
    } else if (f.is("--steps")) {
      a.steps = std::stoll(f.value());
    } else if (f.is("--sync-bn")) {
      a.sync_bn = true;
    } else if (f.is("--no-peer")) {
      a.peer = false;
    } else if (f.is("--check")) {
      a.check = true;
    } else if (f.is("--no-bench")) {
      a.bench = false;
    } else if (f.is("--worker")) {  // internal: a rank started by this program
      a.worker = true;
    } else if (f.is("--check-worker")) {  // internal: a rank of a weight check
      a.worker = true;
      a.check_model = f.value();
    } else if (f.is("--nccl-id-file")) {
      a.id_file = f.value();
    } else if (f.is("--result-file")) {
      a.result_file = f.value();
    } else {
      f.unknown();
    }
  }
  return a;
}

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// One rank: ms per training step (global batch world x batch), median of 3 timed fits.
double worker_ms(const Args& a) {
  const tg::LaunchEnvironment env = tg::launch_environment();
  const tg::Device device = tg::Device::cuda(env.local_rank);
  const tg::Communicator comm = env.world_size > 1 ? tg::Communicator::nccl(env.rank, env.world_size,
                                                                            env.local_rank, a.id_file)
                                                   : tg::Communicator();
  tg::nn::Model model = tg::nn::zoo::resnet50({.input_shape = {224, 224, 3}, .layout = tg::Layout::nhwc,
                                               .sync_batch_norm = a.sync_bn});
  model.compile(tg::nn::Optimizer::adam(1e-3), tg::nn::Loss::sparse_categorical_crossentropy, {}, device,
                {.precision = tg::ComputePrecision::bf16}, {.communicator = comm});
  const int64_t global = a.batch * env.world_size;
  const int64_t n = global * a.steps;
  // Every rank holds the same rows; fit gives rank r its shard of each global batch.
  tg::TensorData x = tg::TensorData::random_normal({n, 224, 224, 3}, 0.f, 1.f, 1).to(device);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = (i * 37) % 1000;
  tg::TensorData y = tg::TensorData::from_vector<int64_t>(labels, {n}).to(device);
  tg::nn::FitOptions o{.epochs = 1, .batch_size = global, .shuffle = false, .verbose = 0};
  auto t0 = clock_type::now();
  model.fit(x, y, o);  // compiles, chooses conv algorithms, warms the caches
  if (env.rank == 0) {
    std::printf("  tg rank 0 of %d, first fit (compile + %lld steps): %.0f ms\n", env.world_size,
                static_cast<long long>(a.steps), ms_since(t0));
  }
  std::vector<double> per_step;
  for (int r = 0; r < 3; ++r) {
    auto t = clock_type::now();
    model.fit(x, y, o);
    per_step.push_back(ms_since(t) / static_cast<double>(a.steps));
  }
  return tg::bench::median(per_step);
}

// ---- weight checks (--check)

using Weights = std::vector<std::pair<std::string, tg::TensorData>>;

// "mlp", "resnet18" (f32) or "resnet18_f64" (the same in float64: rounding out of the way, see
// docs/distributed.md on the f32 check's sensitivity).
tg::DType check_dtype(const std::string& name) { return name == "resnet18_f64" ? tg::DType::f64 : tg::DType::f32; }

tg::nn::Model check_model(const std::string& name, bool sync) {
  if (name == "mlp") return tg::nn::zoo::mlp({.input_shape = {64}, .num_classes = 10, .seed = 3, .hidden_units = {128, 64}});
  return tg::nn::zoo::resnet18({.input_shape = {32, 32, 3}, .num_classes = 10, .dtype = check_dtype(name), .seed = 3,
                                .sync_batch_norm = sync});
}

tg::TensorData to_dtype(const tg::TensorData& x, tg::DType dtype) {
  if (dtype == x.dtype()) return x;
  std::vector<float> v = x.to_vector<float>();
  return tg::TensorData::from_vector<double>(std::vector<double>(v.begin(), v.end()), x.shape());
}

// The weights after 3 steps of global batch `global` on this process's rank of `comm`.
Weights check_train(const std::string& name, const tg::Communicator& comm, tg::Device device) {
  const bool mlp = name == "mlp";
  const int64_t global = mlp ? 64 : 16, n = 3 * global;
  tg::nn::Model m = check_model(name, comm.world_size() > 1);
  m.compile(tg::nn::Optimizer::sgd(0.05, {.momentum = 0.9}), tg::nn::Loss::sparse_categorical_crossentropy, {},
            device, {.deterministic = true}, {.communicator = comm});
  tg::TensorData x = mlp ? tg::TensorData::random_normal({n, 64}, 0.f, 1.f, 21)
                         : to_dtype(tg::TensorData::random_normal({n, 32, 32, 3}, 0.2f, 1.f, 21), check_dtype(name));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = (i * 7) % 10;
  tg::TensorData y = tg::TensorData::from_vector<int64_t>(labels, {n});
  m.fit(x, y, {.epochs = 1, .batch_size = global, .shuffle = false, .verbose = 0});
  return m.get_weights();
}

double max_relative(const Weights& a, const Weights& b) {
  if (a.size() != b.size()) return 1e30;
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].first != b[k].first) return 1e30;
    auto va = to_dtype(a[k].second.to(tg::Device::cpu()), tg::DType::f64).to_vector<double>();
    auto vb = to_dtype(b[k].second.to(tg::Device::cpu()), tg::DType::f64).to_vector<double>();
    if (va.size() != vb.size()) return 1e30;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      diff = std::max(diff, std::fabs(double(va[i]) - vb[i]));
      scale = std::max(scale, std::fabs(double(vb[i])));
    }
    worst = std::max(worst, diff == 0 ? 0.0 : diff / std::max(scale, 1e-30));
  }
  return worst;
}

// A check worker: trains on its NCCL rank; rank 0 saves the weights to the result file.
int check_worker(const Args& a) {
  const tg::LaunchEnvironment env = tg::launch_environment();
  const tg::Communicator comm = tg::Communicator::nccl(env.rank, env.world_size, env.local_rank, a.id_file);
  tg::nn::Model m = check_model(a.check_model, true);
  Weights w = check_train(a.check_model, comm, tg::Device::cuda(env.local_rank));
  if (env.rank == 0) {
    m.set_weights(w);
    m.save(a.result_file);
  }
  return 0;
}

// The directory of PyTorch's NCCL library, or "".
std::string torch_nccl_dir() {
  int rc = 0;
  std::string out = tg::bench::run_python("-c", "'import nvidia.nccl as n; print(list(n.__path__)[0] + \"/lib\")'", &rc);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return rc == 0 && std::filesystem::exists(out + "/libnccl.so.2") ? out : "";
}

// Starts `world` workers of this program with `worker_args` (and the id and result files);
// true when every one exited with 0.
bool start_workers(int world, std::vector<std::string> args, const std::string& id_file) {
  std::filesystem::remove(id_file);
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      std::vector<char*> v;
      for (std::string& s : args) v.push_back(s.data());
      v.push_back(nullptr);
      ::execv("/proc/self/exe", v.data());
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::filesystem::remove(id_file);
  return ok;
}

std::string temp_stem(const std::string& what) {
  return (std::filesystem::temp_directory_path() / ("tg-dp-bench-" + std::to_string(::getpid()) + "-" + what))
      .string();
}

// Starts `world` workers of this program and returns rank 0's ms per step (-1 on failure).
double run_tg(const Args& a, int world, char** argv) {
  const std::string stem = temp_stem(std::to_string(world));
  const std::string id_file = stem + ".id", result = stem + ".ms";
  std::filesystem::remove(id_file);
  std::filesystem::remove(result);
  std::vector<std::string> args = {argv[0], "--worker", "--batch", std::to_string(a.batch), "--steps",
                                   std::to_string(a.steps), "--nccl-id-file", id_file, "--result-file", result};
  if (a.sync_bn) args.push_back("--sync-bn");
  const bool ok = start_workers(world, args, id_file);
  double ms = -1;
  std::ifstream in(result);
  if (!ok || !(in >> ms)) return -1;
  std::filesystem::remove(result);
  return ms;
}

// PyTorch DDP under torchrun on `world` GPUs: ms per step, or -1.
double run_peer(const Args& a, int world) {
  const std::string script = std::string(TG_SOURCE_DIR) + "/bench/data_parallel_torch.py";
  int rc = 0;
  const std::string out = tg::bench::run_python(
      "-m torch.distributed.run --standalone --nproc-per-node " + std::to_string(world) + " " + script,
      std::to_string(a.batch) + " " + std::to_string(a.steps + 5) + (a.sync_bn ? " sync_bn" : " plain"), &rc);
  auto pos = out.find("\"ms\": ");
  if (rc != 0 || pos == std::string::npos) {
    std::fprintf(stderr, "PyTorch DDP peer failed:\n%s\n", out.c_str());
    return -1;
  }
  std::printf("  peer: %s", out.substr(out.rfind('{', pos)).c_str());
  return std::atof(out.c_str() + pos + 6);
}

}  // namespace

// --check: returns the number of failed checks.
int run_checks(char** argv) {
  int failures = 0;
  for (const std::string name : {"mlp", "resnet18", "resnet18_f64"}) {
    const std::string stem = temp_stem("check-" + name);
    const std::string id_file = stem + ".id", result = stem + ".safetensors";
    std::filesystem::remove(result);
    try {
      const bool ok = start_workers(2, {argv[0], "--check-worker", name, "--nccl-id-file", id_file, "--result-file", result},
                                    id_file);
      if (!ok) throw std::runtime_error("a worker failed");
      tg::nn::Model two = check_model(name, false);
      two.load(result);
      const Weights one = check_train(name, tg::Communicator(), tg::Device::cuda(0));
      const double rel = max_relative(two.get_weights(), one);
      const bool pass = rel <= (check_dtype(name) == tg::DType::f64 ? 1e-10 : 1e-5);
      std::printf("check %s%s: 2 GPUs vs 1 GPU on the doubled batch after 3 steps: max relative weight difference "
                  "%.3g (%s)\n", name.c_str(), name == "mlp" ? " (no batch norm)" : " (sync batch norm)", rel,
                  pass ? "pass" : "FAIL");
      failures += pass ? 0 : 1;
    } catch (const std::exception& e) {
      std::printf("check %s failed: %s\n", name.c_str(), e.what());
      ++failures;
    }
    std::filesystem::remove(result);
    std::fflush(stdout);
  }
  return failures;
}

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  if (a.worker && !a.check_model.empty()) {
    try {
      return check_worker(a);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "check worker failed: %s\n", e.what());
      return 1;
    }
  }
  if (a.worker) {
    try {
      const double ms = worker_ms(a);
      if (tg::launch_environment().rank == 0) std::ofstream(a.result_file) << ms << "\n";
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "worker failed: %s\n", e.what());
      return 1;
    }
  }
  int max_world = 0;
  for (int w : a.gpus) max_world = std::max(max_world, w);
  if (a.check) max_world = std::max(max_world, 2);
  if (tg::Device::cuda_device_count() < max_world) {
    std::fprintf(stderr, "tg_bench_data_parallel_cuda: %d GPU(s) here, --gpus needs %d\n",
                 tg::Device::cuda_device_count(), max_world);
    return 1;
  }
  const char* ld = std::getenv("LD_LIBRARY_PATH");
  if (max_world > 1) {
    if (const std::string dir = torch_nccl_dir(); !dir.empty()) {
      ::setenv("LD_LIBRARY_PATH", (ld && *ld ? std::string(ld) + ":" + dir : dir).c_str(), 1);
    }
  }
  int failures = a.check ? run_checks(argv) : 0;
  if (!a.bench) return failures ? 1 : 0;
  std::printf("ResNet-50 bf16 training, batch %lld per GPU, %s batch norm, NCCL overlap %s\n",
              static_cast<long long>(a.batch), a.sync_bn ? "sync" : "per-GPU",
              std::getenv("TG_NCCL_OVERLAP") && std::string(std::getenv("TG_NCCL_OVERLAP")) == "0" ? "off" : "on");
  double tg_one = -1, torch_one = -1;
  for (int w : a.gpus) {
    std::printf("%d GPU(s): global batch %lld\n", w, static_cast<long long>(a.batch * w));
    std::fflush(stdout);
    const double ms = run_tg(a, w, argv);
    if (ms <= 0) {
      std::printf("  tg failed\n");
      ++failures;
      continue;
    }
    const double ips = 1e3 * static_cast<double>(a.batch * w) / ms;
    std::printf("  tg: %.2f ms per step, %.1f images/s\n", ms, ips);
    if (w == 1) tg_one = ips;
    if (w > 1 && tg_one > 0) {
      std::printf("  tg scaling efficiency on %d GPUs: %.3f (target >= 0.9)\n", w, ips / (w * tg_one));
    }
    if (!a.peer) continue;
    std::fflush(stdout);
    const double peer = run_peer(a, w);
    if (peer <= 0) {
      ++failures;
      continue;
    }
    const double peer_ips = 1e3 * static_cast<double>(a.batch * w) / peer;
    std::printf("  pytorch ddp: %.2f ms per step, %.1f images/s\n", peer, peer_ips);
    if (w == 1) torch_one = peer_ips;
    if (w > 1 && torch_one > 0) {
      std::printf("  pytorch ddp scaling efficiency on %d GPUs: %.3f\n", w, peer_ips / (w * torch_one));
    }
    std::printf("  ratio on %d GPU(s) (tg images/s / pytorch ddp images/s): %.2f (target >= 1.0)\n", w,
                ips / peer_ips);
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
