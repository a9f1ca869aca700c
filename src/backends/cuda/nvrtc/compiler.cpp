// NVRTC compilation with in-memory and on-disk caches (see compiler.h).
#include "backends/cuda/nvrtc/compiler.h"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/cuda/algo_choices.h"
#include "backends/cuda/context.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/stats.h"
#include "tg_device_sources.inc"

namespace tg::cuda::nvrtc {
namespace {

namespace fs = std::filesystem;

// TGKC2: the image is followed by nothing and preceded by its FNV-1a hash (a flipped or cut
// byte is a miss, compiled afresh and rewritten; TGKC1 entries, without it, are misses too).
constexpr std::string_view kMagic = "TGKC2\n";

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = d[v & 15];
  return s;
}

void check_nvrtc(nvrtcResult r, std::string_view op, std::string_view what) {
  if (r != NVRTC_SUCCESS) fail(ErrorCode::internal, op, "{}: {}", what, nvrtcGetErrorString(r));
}

/// Hash of every embedded device header: part of the cache key, so an edited header never
/// reuses a stale cubin.
const std::string& headers_fingerprint() {
  static const std::string fp = [] {
    uint64_t h = fnv1a("tg-device-headers");
    for (const auto& s : kDeviceSources) {
      h = fnv1a(s.name, h);
      h = fnv1a(s.text, h);
    }
    return hex64(h);
  }();
  return fp;
}

thread_local std::vector<backends::CodeObject>* t_sink = nullptr;

// Once per key and run: the image is not copied again at each later use (a first run's 53
// convolutions through one first-run program copied its image 53 times; Program::add_code keeps
// the first of a key anyway).
// (TG_CODE_SINK_DEDUP=0: a copy at every use, as before session 23; for the cold-start A/B.)
bool in_sink(const std::string& key) {
  if (!env::code_sink_dedup()) return false;
  for (const backends::CodeObject& c : *t_sink) {
    if (c.key == key) return true;
  }
  return false;
}

void to_sink(const std::string& key, const Program& p) {
  if (t_sink && !in_sink(key)) t_sink->push_back({key, p.image()});
}


std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

/// The target option for compute capability cc (e.g. 90): sm_90 when this NVRTC supports it
/// (a CUBIN), else compute_XY of the newest supported arch below it (PTX, JIT-compiled by the
/// driver). Sets `cubin` accordingly.
std::string target_for(int cc, bool* cubin) {
  static const std::vector<int> archs = [] {
    int n = 0;
    std::vector<int> v;
    if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
      v.resize(static_cast<size_t>(n));
      if (nvrtcGetSupportedArchs(v.data()) != NVRTC_SUCCESS) v.clear();
    }
    std::sort(v.begin(), v.end());
    return v;
  }();
  if (archs.empty() || std::find(archs.begin(), archs.end(), cc) != archs.end()) {
    *cubin = true;
    return "--gpu-architecture=sm_" + std::to_string(cc);
  }
  int best = archs.front();
  for (int a : archs) {
    if (a <= cc) best = a;
  }
  *cubin = false;
  return "--gpu-architecture=compute_" + std::to_string(best);
}

// ---- disk cache -------------------------------------------------------------------------------

std::string find_cache_dir() {
  const std::optional<std::string> configured = env::kernel_cache_dir();
  if (!configured) return "";
  fs::path dir = *configured;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) return "";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "";
  return dir.string();
}

const std::string& disk_dir() {
  static const std::string dir = find_cache_dir();
  return dir;
}

/// The cached image for `key`, or "" on a miss (missing, unreadable, another key, or an image
/// whose checksum does not match: a corrupted entry).
std::string disk_load(const std::string& key, uint64_t hash) {
  if (disk_dir().empty()) return "";
  std::ifstream in(fs::path(disk_dir()) / (hex64(hash) + ".cubin"), std::ios::binary);
  if (!in) return "";
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto u64_at = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(data[at + i])) << (8 * i);
    return v;
  };
  if (data.size() < kMagic.size() + 8 || std::string_view(data).substr(0, kMagic.size()) != kMagic) return "";
  const uint64_t key_size = u64_at(kMagic.size());
  const size_t key_at = kMagic.size() + 8;
  if (key_size != key.size() || data.size() <= key_at + key_size + 8) return "";
  if (std::string_view(data).substr(key_at, key_size) != key) return "";
  const uint64_t checksum = u64_at(key_at + key_size);
  std::string image = data.substr(key_at + key_size + 8);
  if (fnv1a(image) != checksum) {
    stats::add(stats::Counter::kernel_cache_rejects);
    return "";
  }
  return image;
}

/// Writes the entry atomically (a temporary file renamed over the final name); errors are ignored.
void disk_store(const std::string& key, uint64_t hash, const std::string& image) {
  if (disk_dir().empty()) return;
  static std::atomic<uint64_t> counter{0};
  const fs::path final_path = fs::path(disk_dir()) / (hex64(hash) + ".cubin");
  const fs::path tmp = fs::path(disk_dir()) /
                       (hex64(hash) + ".tmp." + std::to_string(::getpid()) + "." +
                        std::to_string(counter.fetch_add(1)) + "." +
                        hex64(std::hash<std::thread::id>{}(std::this_thread::get_id())));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(kMagic.data(), static_cast<std::streamsize>(kMagic.size()));
    char size[8];
    for (int i = 0; i < 8; ++i) size[i] = static_cast<char>((static_cast<uint64_t>(key.size()) >> (8 * i)) & 0xff);
    out.write(size, 8);
    out.write(key.data(), static_cast<std::streamsize>(key.size()));
    const uint64_t checksum = fnv1a(image);
    char sum[8];
    for (int i = 0; i < 8; ++i) sum[i] = static_cast<char>((checksum >> (8 * i)) & 0xff);
    out.write(sum, 8);
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) fs::remove(tmp, ec);
}

// ---- compilation ------------------------------------------------------------------------------

/// The first `lines` lines of `source`, numbered, for error messages.
std::string source_head(std::string_view source, int lines) {
  std::string out;
  size_t pos = 0;
  for (int n = 1; n <= lines && pos < source.size(); ++n) {
    size_t end = source.find('\n', pos);
    if (end == std::string_view::npos) end = source.size();
    out += fmt::format("{:4} | {}\n", n, source.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::string run_nvrtc(std::string_view source, const std::vector<std::string>& options, bool cubin,
                      std::string_view op) {
  std::vector<const char*> header_texts, header_names;
  // Keep NUL-terminated copies: string_view data of the embedded literals is terminated, but be safe.
  static const std::vector<std::pair<std::string, std::string>> headers = [] {
    std::vector<std::pair<std::string, std::string>> h;
    for (const auto& s : kDeviceSources) h.emplace_back(std::string(s.name), std::string(s.text));
    return h;
  }();
  for (const auto& [name, text] : headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  const std::string src(source);
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, src.c_str(), "tg_generated.cu", static_cast<int>(headers.size()),
                                 header_texts.data(), header_names.data()),
              op, "nvrtcCreateProgram");
  struct Guard {
    nvrtcProgram* p;
    ~Guard() { nvrtcDestroyProgram(p); }
  } guard{&prog};
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  stats::add(stats::Counter::kernel_compiles);
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  if (r != NVRTC_SUCCESS) {
    size_t log_size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      nvrtcGetProgramLog(prog, log.data());
      log.resize(log_size - 1);
    }
    fail(ErrorCode::internal, op, "NVRTC compilation failed ({}):\n{}\nsource (first lines):\n{}",
         nvrtcGetErrorString(r), log, source_head(source, 40));
  }
  std::string image;
  size_t size = 0;
  if (cubin) {
    check_nvrtc(nvrtcGetCUBINSize(prog, &size), op, "nvrtcGetCUBINSize");
    image.resize(size);
    check_nvrtc(nvrtcGetCUBIN(prog, image.data()), op, "nvrtcGetCUBIN");
  } else {
    check_nvrtc(nvrtcGetPTXSize(prog, &size), op, "nvrtcGetPTXSize");  // includes the NUL
    image.resize(size);
    check_nvrtc(nvrtcGetPTX(prog, image.data()), op, "nvrtcGetPTX");
  }
  return image;
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const Program>> programs;
  /// One mutex per key being compiled, so that two threads do not compile the same source
  /// twice while different sources compile in parallel.
  std::unordered_map<std::string, std::shared_ptr<std::mutex>> building;
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: programs outlive static destruction order
  return *c;
}

}  // namespace

cudaKernel_t Program::kernel(std::string_view name, std::string_view op) const {
  std::lock_guard lock(mu_);
  std::string key(name);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  cudaKernel_t k = nullptr;
  check(cudaLibraryGetKernel(&k, library_, key.c_str()), op, fmt::format("cudaLibraryGetKernel({})", key));
  kernels_.emplace(std::move(key), k);
  return k;
}

namespace {

// The NVRTC options for cuda:`device` and the cache key of `source` compiled with them.
std::string cache_key(std::string_view source, int device, std::vector<std::string>* options, bool* cubin) {
  DeviceContext& dc = activate(device);
  const int cc = dc.cc_major * 10 + dc.cc_minor;
  *options = {target_for(cc, cubin), "--std=c++17", "-default-device",
              "--fmad=false", "--prec-div=true", "--prec-sqrt=true",
              "--ftz=false", "-DTG_NVRTC=1"};
  std::string key = "nvrtc " + nvrtc_version() + "\n";
  for (const auto& o : *options) key += o + " ";
  key += "\nheaders " + headers_fingerprint() + "\n";
  key += source;
  return key;
}

}  // namespace

std::string cache_entry_path(std::string_view source, int device) {
  std::vector<std::string> options;
  bool cubin = true;
  const std::string key = cache_key(source, device, &options, &cubin);
  return disk_dir().empty() ? "" : (fs::path(disk_dir()) / (hex64(fnv1a(key)) + ".cubin")).string();
}

void forget_loaded_programs() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  c.programs.clear();
}

std::shared_ptr<const Program> compile(std::string_view source, int device, std::string_view op) {
  bool cubin = true;
  std::vector<std::string> options;
  const std::string key = cache_key(source, device, &options, &cubin);

  Cache& c = cache();
  std::shared_ptr<std::mutex> build_mu;
  {
    std::lock_guard lock(c.mu);
    auto it = c.programs.find(key);
    if (it != c.programs.end()) {
      to_sink(key, *it->second);
      return it->second;
    }
    auto& m = c.building[key];
    if (!m) m = std::make_shared<std::mutex>();
    build_mu = m;
  }
  std::lock_guard build_lock(*build_mu);
  {
    std::lock_guard lock(c.mu);  // another thread may have finished while we waited
    auto it = c.programs.find(key);
    if (it != c.programs.end()) {
      to_sink(key, *it->second);
      return it->second;
    }
  }
  const uint64_t hash = fnv1a(key);
  std::string image = disk_load(key, hash);
  const bool from_disk = !image.empty();
  if (!from_disk) image = run_nvrtc(source, options, cubin, op);

  cudaLibrary_t lib = nullptr;
  cudaError_t e = cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess && from_disk) {
    cudaGetLastError();  // a corrupt cache entry: compile afresh
    image = run_nvrtc(source, options, cubin, op);
    e = cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e == cudaSuccess) disk_store(key, hash, image);
  } else if (e == cudaSuccess && !from_disk) {
    disk_store(key, hash, image);
  }
  check(e, op, "cudaLibraryLoadData");
  auto program = std::make_shared<const Program>(lib, std::move(image), key);
  to_sink(key, *program);
  std::lock_guard lock(c.mu);
  c.programs.emplace(key, program);
  c.building.erase(key);
  return program;
}

std::string version() { return nvrtc_version(); }

void set_code_sink(std::vector<backends::CodeObject>* sink) { t_sink = sink; }

bool code_sink_set() { return t_sink != nullptr; }

void note_use(const Program& program) { to_sink(program.key(), program); }

}  // namespace tg::cuda::nvrtc

namespace tg::cuda::algo_choices {

void note(const std::string& key, const std::string& choice) {
  if (nvrtc::t_sink && !nvrtc::in_sink(key)) nvrtc::t_sink->push_back({key, choice});
}

}  // namespace tg::cuda::algo_choices

namespace tg::cuda::nvrtc {

std::string image_problem(std::string_view image) {
  if (image.size() >= 4 && image.substr(0, 4) == std::string_view("\x7f" "ELF", 4)) {
    // Elf64_Ehdr: e_ident[EI_CLASS] 2 (64-bit), [EI_DATA] 1 (little-endian); e_machine at 18;
    // e_shoff at 40, e_shentsize at 58, e_shnum at 60.
    if (image.size() < 64) return "an ELF image shorter than its header";
    if (image[4] != 2 || image[5] != 1) return "not a 64-bit little-endian ELF";
    auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, image.data() + at, 2); return v; };
    uint64_t shoff = 0;
    std::memcpy(&shoff, image.data() + 40, 8);
    if (u16(18) != 190) return fmt::format("an ELF for machine {}, not EM_CUDA (190)", u16(18));
    const uint64_t table = static_cast<uint64_t>(u16(58)) * u16(60);
    if (shoff > image.size() || table > image.size() - shoff) return "section headers outside the image";
    return "";
  }
  if (image.find(".version") != std::string_view::npos && image.find(".target") != std::string_view::npos) {
    const bool text = std::all_of(image.begin(), image.end(), [](char ch) {
      const auto u = static_cast<unsigned char>(ch);
      return u == 0 || u == '\n' || u == '\r' || u == '\t' || (u >= 32 && u < 127);
    });
    return text ? "" : "PTX with bytes that are not text";
  }
  return "neither a CUBIN (ELF) nor PTX";
}

void preload(std::span<const backends::CodeObject> objects) {
  Cache& c = cache();
  for (size_t i = 0; i < objects.size(); ++i) {
    const auto& o = objects[i];
    {
      std::lock_guard lock(c.mu);
      if (c.programs.count(o.key)) continue;
    }
    if (const std::string why = image_problem(o.image); !why.empty()) {
      fail(ErrorCode::io_error, "load", "kernel {} of {}: TensorGraph refuses its binary ({} bytes): {}", i,
           objects.size(), o.image.size(), why);
    }
    cudaLibrary_t lib = nullptr;
    const cudaError_t e = o.image.empty() ? cudaErrorInvalidKernelImage
                                          : cudaLibraryLoadData(&lib, o.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e != cudaSuccess) {
      cudaGetLastError();
      fail(ErrorCode::io_error, "load", "kernel {} of {}: the driver refuses its binary ({} bytes): {}", i, objects.size(),
           o.image.size(), cudaGetErrorString(e));
    }
    auto program = std::make_shared<const Program>(lib, o.image, o.key);
    std::lock_guard lock(c.mu);
    c.programs.emplace(o.key, program);
  }
}

namespace {
thread_local bool t_loop_body = false;  // inside a DependentLaunchScope(true)

// TG_PDL=0: no dependent launches, not even in loop bodies (read once).
bool dependent_launch_off() { return env::dependent_launch_disabled(); }
}  // namespace

DependentLaunchScope::DependentLaunchScope(bool on) : saved_(t_loop_body) { t_loop_body = on; }
DependentLaunchScope::~DependentLaunchScope() { t_loop_body = saved_; }

void launch(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, cudaStream_t stream,
            std::string_view op, size_t shared_bytes, bool dependent) {
  if (dependent && (env::dependent_launch() || (t_loop_body && !dependent_launch_off()))) {
    // Compute capability 9.0 and later only (per device, read once).
    static std::mutex mu;
    static std::vector<int> major;  // per device ordinal, -1 unknown
    int dev = 0;
    check(cudaGetDevice(&dev), op, "cudaGetDevice");
    int cc = 0;
    {
      std::lock_guard lock(mu);
      if (major.size() <= static_cast<size_t>(dev)) major.resize(static_cast<size_t>(dev) + 1, -1);
      int& m = major[static_cast<size_t>(dev)];
      if (m < 0) check(cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev), op, "cudaDeviceGetAttribute");
      cc = m;
    }
    if (cc >= 9) {
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr.val.programmaticStreamSerializationAllowed = 1;
      cudaLaunchConfig_t config{};
      config.gridDim = grid;
      config.blockDim = block;
      config.dynamicSmemBytes = shared_bytes;
      config.stream = stream;
      config.attrs = &attr;
      config.numAttrs = 1;
      check(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel), args), op, "cudaLaunchKernelExC");
      return;
    }
  }
  check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, shared_bytes, stream), op,
        "cudaLaunchKernel");
}

std::string cache_dir() { return disk_dir(); }

}  // namespace tg::cuda::nvrtc
