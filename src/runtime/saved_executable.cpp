// Executable::save / load (.tgx files, docs/design/0008-saved-executables.md). Sections, in order:
//   header         text "key=value" lines: what the file holds and what its code was compiled for
//   program        feeds (placeholder node ids), targets, target ops, schedule, precision,
//                  deterministic, memory budget, the memory plan's arena and planned bytes
//   graph          the optimized graph (runtime/ir_serialize.h)
//   variables      per variable slot the graph uses: slot, name, type
//   variable_data  (embedded variables only) a safetensors block holding their values
//   kernels        generated kernels: (backend cache key, CUBIN/PTX image) pairs
//   algorithms     (optional) library algorithm choices: u32 version, (key, choice) pairs
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "backends/backend.h"
#include "backends/file_upload.h"
#include "core/dim_expr.h"
#include "core/error_util.h"
#include "core/file_write.h"
#include "core/parallel.h"
#include "core/phase_times.h"
#include "core/safetensors.h"
#include "core/stats.h"
#include "ir/graph.h"
#include "ops/control.h"
#include "runtime/compile.h"
#include "runtime/ir_serialize.h"
#include "runtime/specialize.h"
#include "runtime/tgx_file.h"
#include "runtime/tgx_format.h"
#include "tg/saved_executable.h"

namespace tg {
namespace {

using runtime::tgx::Reader;
using runtime::tgx::Writer;

constexpr const char* kPrecisionNames[] = {"f32", "tf32", "bf16", "f16"};
/// Code objects whose key starts with this are library algorithm choices (cuDNN engine configs,
/// cuBLASLt algorithms: backends/cuda/algo_choices.h's kPrefix), stored in section 'algorithms'.
constexpr std::string_view kChoicePrefix = "algo:";
/// The layout version of section 'algorithms' this build writes and reads.
constexpr uint32_t kAlgorithmsVersion = 1;

const CompiledProgram& checked(const std::shared_ptr<const CompiledProgram>& p) {
  if (!p) throw Error(ErrorCode::invalid_argument, "[save] use of an empty Executable");
  return *p;
}

/// The header fields the device's compiled code depends on: "arch" and the library versions.
std::map<std::string, std::string> target_fields(const backends::Backend& b) {
  std::map<std::string, std::string> f;
  const std::string t = b.code_target();
  if (t.empty()) {
    f["arch"] = "host";
    return f;
  }
  size_t pos = 0;
  while (pos < t.size()) {
    size_t end = t.find(' ', pos);
    if (end == std::string::npos) end = t.size();
    const std::string item = t.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      f["arch"] = item;
    } else {
      f[item.substr(0, eq)] = item.substr(eq + 1);
    }
  }
  return f;
}

std::string types_to_string(const std::vector<TensorType>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ";" : "") + types[i].to_string();
  return s;
}

void write_ref(Writer& w, ir::ValueRef v) {
  w.i64(v.node);
  w.i64(v.index);
}

int read_id(Reader& r, int limit, const char* what) {
  const int64_t v = r.i64();
  if (v < 0 || v >= limit) r.malformed(fmt::format("{} %{} outside the graph's {} nodes", what, v, limit));
  return static_cast<int>(v);
}

// Every variable slot the graph (regions included) uses, in first-use order.
std::vector<int> used_slots(const ir::Graph& g) {
  std::vector<int> slots;
  runtime::tgx::for_each_node(g, [&](const ir::Node& n) {
    if (const auto* v = std::get_if<ir::VariableAttrs>(&n.attrs)) {
      if (std::find(slots.begin(), slots.end(), v->index) == slots.end()) slots.push_back(v->index);
    }
  });
  return slots;
}

}  // namespace

std::vector<uint8_t> Executable::save_to_bytes(const SaveOptions& options) const {
  const CompiledProgram& p = checked(program_);
  // Compiled once for varying sizes (disable_type_inference): the optimized graph with its
  // symbols (section 'symbols' names them), no memory plan (each signature plans its own), and
  // the code the signatures run so far generated.
  const runtime::Specializations* dynamic = p.specializations.get();
  const runtime::PlannedGraph& plan = *p.plan;
  const ir::Graph& g = *plan.graph;
  const backends::Backend& backend = backends::backend_for(p.device);
  const std::vector<int> slots = used_slots(g);
  const std::vector<backends::CodeObject> code = dynamic ? dynamic->code_objects() : p.program->code_objects();
  const ir::VariableStore& store = *g.variables();
  const size_t arena_bytes = dynamic ? 0 : p.program->memory().arena_bytes;
  const size_t planned_bytes = dynamic ? 0 : static_cast<size_t>(p.program->memory().planned_bytes);
  const size_t budget = dynamic ? dynamic->options().memory_budget_bytes : p.program->memory_budget();

  Writer graph;
  runtime::tgx::write_graph(graph, g);
  // Symbols by name: their values are this process's (tg::symbolic_dim interns names). Section
  // 'symbols': u32 count, then per symbol i64 value, str name, u8 kind: 0 a symbol; 1 derived
  // (core/dim_expr.h), then i64 base value (listed before), a, b, c, lo.
  std::map<int64_t, std::string> bases;
  std::map<int64_t, core::DimExpr> derived;
  for (const auto& [value, name] : graph.symbols()) {
    if (const std::optional<core::DimExpr> e = core::derived_dim(value)) {
      derived.emplace(value, *e);
      bases.emplace(e->base, dim_name(e->base));
    } else {
      bases.emplace(value, name);
    }
  }
  Writer symbols;
  symbols.u32(static_cast<uint32_t>(bases.size() + derived.size()));
  std::string symbol_names;
  for (const auto& [value, name] : bases) {
    symbols.i64(value);
    symbols.str(name);
    symbols.u8(0);
    symbol_names += (symbol_names.empty() ? "" : ",") + name;
  }
  for (const auto& [value, e] : derived) {
    symbols.i64(value);
    symbols.str(dim_name(value));
    symbols.u8(1);
    for (int64_t v : {e.base, e.a, e.b, e.c, e.lo}) symbols.i64(v);
  }
  // Format 3 only when the file holds symbols: builds that read format 2 read the rest.
  const uint32_t format_version = bases.empty() ? 2 : runtime::tgx::kFormatVersion;
  std::string header = "format=tgx\n";
  header += fmt::format("format_version={}\n", format_version);
  if (dynamic) header += "symbols=" + symbol_names + "\n";
  header += fmt::format("device={}\n", p.device.is_cpu() ? "cpu" : "cuda");
  for (const auto& [k, v] : target_fields(backend)) header += k + "=" + v + "\n";
  header += fmt::format("precision={}\n", kPrecisionNames[static_cast<int>(plan.precision)]);
  header += fmt::format("deterministic={}\n", plan.deterministic ? 1 : 0);
  header += fmt::format("arena_bytes={}\n", arena_bytes);
  header += fmt::format("nodes={}\n", g.size());
  std::string feeds;
  for (size_t i = 0; i < p.feed_types.size(); ++i) {
    std::string name = p.feed_names[i];
    for (char& c : name) c = (c == '\n' || c == ';') ? ' ' : c;  // one header line, ';'-separated
    feeds += fmt::format("{}{}:{}", i ? ";" : "", name, p.feed_types[i].to_string());
  }
  header += "feeds=" + feeds + "\n";
  header += "targets=" + types_to_string(p.target_types) + "\n";
  header += fmt::format("variables={} {}\n", slots.size(), options.embed_variables ? "embedded" : "referenced");
  size_t n_choices = 0;
  for (const auto& c : code) n_choices += c.key.starts_with(kChoicePrefix) ? 1 : 0;
  header += fmt::format("kernels={}\n", code.size() - n_choices);
  header += fmt::format("algorithms={}\n", n_choices);

  Writer prog;
  prog.u32(static_cast<uint32_t>(plan.feed_nodes.size()));
  for (int f : plan.feed_nodes) prog.i64(f);
  prog.u32(static_cast<uint32_t>(plan.targets.size()));
  for (const auto& t : plan.targets) write_ref(prog, t);
  prog.u32(static_cast<uint32_t>(plan.target_ops.size()));
  for (int o : plan.target_ops) prog.i64(o);
  prog.u32(static_cast<uint32_t>(plan.schedule.size()));
  for (int s : plan.schedule) prog.i64(s);
  prog.u8(static_cast<uint8_t>(plan.precision));
  prog.u8(plan.deterministic ? 1 : 0);
  prog.u64(budget);
  prog.u64(static_cast<uint64_t>(arena_bytes));
  prog.u64(static_cast<uint64_t>(planned_bytes));


  Writer vars;
  vars.u32(static_cast<uint32_t>(slots.size()));
  std::vector<std::pair<std::string, TensorData>> values;
  for (int s : slots) {
    vars.i64(s);
    vars.str(store.name(s));
    runtime::tgx::write_type(vars, store.type(s));
    if (options.embed_variables) values.emplace_back(store.name(s), store.value(s));
  }
  vars.u8(options.embed_variables ? 1 : 0);

  // NVRTC programs in 'kernels'; library algorithm choices (keys "algo:...", the CUDA backend's
  // backends/cuda/algo_choices.h) in 'algorithms': u32 section version (1), u32 count, pairs.
  std::vector<const backends::CodeObject*> programs, choices;
  for (const auto& c : code) (c.key.starts_with(kChoicePrefix) ? choices : programs).push_back(&c);
  Writer kernels;
  kernels.u32(static_cast<uint32_t>(programs.size()));
  for (const auto* c : programs) {
    kernels.str(c->key);
    kernels.str(c->image);
  }
  Writer algorithms;
  algorithms.u32(kAlgorithmsVersion);
  algorithms.u32(static_cast<uint32_t>(choices.size()));
  for (const auto* c : choices) {
    algorithms.str(c->key);
    algorithms.str(c->image);
  }

  std::vector<std::pair<std::string, std::string>> sections = {
      {"header", header}, {"program", std::move(prog.out())}};
  if (!bases.empty()) sections.emplace_back("symbols", std::move(symbols.out()));
  sections.emplace_back("graph", std::move(graph.out()));
  sections.emplace_back("variables", std::move(vars.out()));
  if (options.embed_variables) sections.emplace_back("variable_data", safetensors::serialize(values));
  sections.emplace_back("kernels", std::move(kernels.out()));
  sections.emplace_back("algorithms", std::move(algorithms.out()));
  return runtime::tgx::write_file(sections, format_version);
}

void Executable::save(const std::string& path, const SaveOptions& options) const {
  const std::vector<uint8_t> bytes = save_to_bytes(options);
  write_file_atomically(path, bytes.data(), bytes.size(), "save");
}

namespace {

// The choices of section 'algorithms' (u32 version, u32 count, (key, choice) string pairs).
std::vector<backends::CodeObject> parse_choices(std::string_view payload, const std::string& file) {
  Reader ar(payload, file, "algorithms");
  const uint32_t version = ar.u32();
  if (version != kAlgorithmsVersion) {
    fail(ErrorCode::unsupported, "load", "{}: section 'algorithms': version {} is not one this build reads ({})", file,
         version, kAlgorithmsVersion);
  }
  std::vector<backends::CodeObject> choices(ar.count(8));
  for (auto& c : choices) {
    c.key = ar.str();
    c.image = ar.str();
    if (!c.key.starts_with(kChoicePrefix)) ar.malformed("a choice whose key does not start with \"algo:\"");
  }
  if (!ar.done()) ar.malformed("bytes after the choices");
  return choices;
}

// Section 'symbols' (see save_to_bytes: the saving process's symbol values, their names, derived
// symbols' expressions): stored value -> this process's symbol of that name or expression.
std::map<int64_t, int64_t> parse_symbols(std::string_view payload, const std::string& file) {
  Reader r(payload, file, "symbols");
  std::map<int64_t, int64_t> to;
  const size_t n = r.count(13);
  for (size_t i = 0; i < n; ++i) {
    const int64_t value = r.i64();
    const std::string name = r.str();
    const uint8_t kind = r.u8();
    if (value >= -1) r.malformed(fmt::format("symbol '{}' stored as dim {}", name, value));
    int64_t here = -1;
    if (kind == 0) {
      try {
        here = symbolic_dim(name);
      } catch (const Error& e) {
        r.malformed(e.what());
      }
      // symbolic_dim gives a derived symbol back by its name: a base entry must name a base.
      if (core::derived_dim(here)) r.malformed(fmt::format("symbol '{}' is stored as a base but names a derived symbol", name));
    } else if (kind == 1) {
      const int64_t base = r.i64(), a = r.i64(), b = r.i64(), c = r.i64(), lo = r.i64();
      auto it = to.find(base);
      if (it == to.end() || core::derived_dim(it->second)) r.malformed(fmt::format("symbol '{}': base dim {} not listed before it", name, base));
      constexpr int64_t kMax = int64_t{1} << 30;
      if (a < 1 || a > kMax || c < 1 || c > kMax || b < -kMax || b > kMax || lo < 0 || lo > kMax) {
        r.malformed(fmt::format("symbol '{}': expression coefficients out of range", name));
      }
      here = core::affine_dim(it->second, a, b, c, lo);
      if (here == -1 || dim_name(here) != name) {
        r.malformed(fmt::format("symbol '{}' is not its expression's canonical form", name));
      }
    } else {
      r.malformed(fmt::format("symbol '{}' of kind {}", name, kind));
    }
    if (!to.emplace(value, here).second) r.malformed(fmt::format("dim {} named twice", value));
  }
  if (!r.done()) r.malformed("bytes after the symbols");
  return to;
}

// Before the file is read whole: its 'header' and 'algorithms' sections only (a few small reads:
// the section framing, then the two payloads), each checksum verified, and when the file's target
// is this backend's (same device kind, architecture and library versions) the choices are handed
// to the backend, whose workers start building the library plans (the longest part of a cold
// start: library kernels load lazily) while the weights are read. Anything unexpected: nothing
// (load_from_bytes then reads, checks and reports everything as always; choices handed over
// twice are prepared once). Returns the backend's preparation handle (Backend::preload_code).
// `same_target` is set when the header says the file was compiled for this backend's target (the
// stored graph is used as is: its constants can go to the device while the file is read).
std::shared_ptr<void> preload_choices_early(const std::string& path, Device device, bool first_run_kernels,
                                            bool* same_target) {
  *same_target = false;
  if (device.is_cpu()) return nullptr;
  phases::Scope timed("load_algorithms_early");
  try {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const auto read_at = [&](uint64_t at, size_t n, void* out) {
      return runtime::tgx::pread_exact(fd, size, at, n, out);
    };
    const auto le = runtime::tgx::little_endian;
    uint8_t head[12];
    if (!read_at(0, 12, head) || std::memcmp(head, runtime::tgx::kMagic.data(), 4) != 0) return nullptr;
    const uint32_t version = static_cast<uint32_t>(le(head + 4, 4));
    const uint64_t count = le(head + 8, 4);
    if (version < 2 || version > runtime::tgx::kFormatVersion || count > 64) return nullptr;
    std::map<std::string, std::string> payloads;  // header and algorithms, checksums verified
    uint64_t at = 12;
    for (uint64_t i = 0; i < count && payloads.size() < 2; ++i) {
      uint8_t len[4];
      if (!read_at(at, 4, len)) return nullptr;
      const uint64_t name_len = le(len, 4);
      if (name_len > 64) return nullptr;
      std::string name(name_len, '\0');
      uint8_t framing[16];
      if (!read_at(at + 4, name_len, name.data()) || !read_at(at + 4 + name_len, 16, framing)) return nullptr;
      const uint64_t length = le(framing, 8), sum = le(framing + 8, 8);
      at += 4 + name_len + 16;
      if (length > size - std::min(at, size)) return nullptr;
      if ((name == "header" || name == "algorithms") && length <= (uint64_t{16} << 20)) {
        std::string payload(length, '\0');
        if (!read_at(at, length, payload.data()) || runtime::tgx::checksum(payload, version) != sum) return nullptr;
        payloads[name] = std::move(payload);
      }
      at += length;
    }
    if (!payloads.count("header")) return nullptr;
    auto header = runtime::tgx::parse_header(payloads["header"], path);
    if (header["device"] != "cuda") return nullptr;
    const backends::Backend& backend = backends::backend_for(device);
    for (const auto& [k, v] : target_fields(backend)) {
      if (!header.count(k) || header[k] != v) return nullptr;
    }
    *same_target = true;
    if (!payloads.count("algorithms")) return nullptr;
    std::vector<backends::CodeObject> choices = parse_choices(payloads["algorithms"], path);
    if (!choices.empty()) return backend.preload_code(choices, first_run_kernels);
  } catch (const std::exception&) {
    // load_from_bytes reports whatever is wrong
  }
  return nullptr;
}

using runtime::tgx::FileBytes;
using runtime::tgx::read_file;

// The file buffer Executable::load hands to load_from_bytes (same thread), so that constants
// alias it instead of being copied.
thread_local const FileBytes* t_loading = nullptr;

// The sections by name, each checksum verified.
std::map<std::string, std::string_view> verified_sections(std::span<const uint8_t> bytes, const std::string& file) {
  phases::Scope timed("load_checksums");
  const runtime::tgx::Layout layout = runtime::tgx::read_layout(bytes, file);
  // Computed while Executable::load read the bytes (format 2 and later: CRC-32).
  const FileBytes* read = t_loading && t_loading->data.get() == bytes.data() && t_loading->size == bytes.size() &&
                                  layout.version >= 2
                              ? t_loading
                              : nullptr;
  std::map<std::string, std::string_view> sec;
  for (const auto& s : layout.sections) {
    std::string_view payload(reinterpret_cast<const char*>(bytes.data()) + s.offset, s.length);
    const uint64_t* known = read ? read->crc_of(s.offset, s.length) : nullptr;
    if ((known ? *known : runtime::tgx::checksum(payload, layout.version)) != s.checksum) {
      fail(ErrorCode::io_error, "load", "{}: checksum mismatch in section '{}' (the file is corrupt)", file, s.name);
    }
    if (!sec.emplace(s.name, payload).second) {
      fail(ErrorCode::io_error, "load", "{}: section '{}' appears twice", file, s.name);
    }
  }
  return sec;
}

}  // namespace

Executable Executable::load(const std::string& path, Device device, const LoadOptions& options) {
  // Held until load_from_bytes has handed the choices over again (the executable's own handle).
  bool same_target = false;
  const std::shared_ptr<void> early = preload_choices_early(path, device, options.first_run_kernels, &same_target);
  // Same target: the graph's constants go to the device while the file is read.
  const FileBytes bytes = read_file(path, same_target ? &device : nullptr);
  struct Loading {
    explicit Loading(const FileBytes* f) { t_loading = f; }
    ~Loading() { t_loading = nullptr; }
  } loading(&bytes);
  return load_from_bytes(bytes.span(), device, options, path);
}

namespace {

// The sections every loader needs (io_error naming the first one missing).
void require_sections(const std::map<std::string, std::string_view>& sec, const std::string& file) {
  for (const char* need : {"header", "program", "graph", "variables", "kernels"}) {
    if (!sec.count(need)) fail(ErrorCode::io_error, "load", "{}: section '{}' is missing", file, need);
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_executable_header(const std::string& path) {
  const FileBytes bytes = read_file(path);
  const std::span<const uint8_t> b = bytes.span();
  std::map<std::string, std::string_view> sec = verified_sections(b, path);
  require_sections(sec, path);  // what load would refuse, inspect refuses too
  std::vector<std::pair<std::string, std::string>> out;
  runtime::tgx::parse_header(sec["header"], path);  // checks the lines
  std::string_view text = sec["header"];
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) out.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  for (const auto& s : runtime::tgx::read_layout(b, path).sections) {
    out.emplace_back("section " + s.name, fmt::format("{} bytes", s.length));
  }
  return out;
}

Executable Executable::load_from_bytes(std::span<const uint8_t> bytes, Device device, const LoadOptions& options,
                                       const std::string& file) {
  phases::Scope total("load_total");
  // Constants alias the bytes when they are Executable::load's own buffer.
  std::shared_ptr<void> owner;
  if (t_loading && t_loading->data.get() == bytes.data() && t_loading->size == bytes.size()) owner = t_loading->data;
  std::map<std::string, std::string_view> sec = verified_sections(bytes, file);
  require_sections(sec, file);
  auto header = runtime::tgx::parse_header(sec["header"], file);
  if (header["device"] != "cpu" && header["device"] != "cuda") {
    fail(ErrorCode::io_error, "load", "{}: section 'header' malformed: device '{}' is neither cpu nor cuda", file,
         header["device"]);
  }
  const backends::Backend& backend = backends::backend_for(device);

  // Same device kind, architecture and library versions: the stored graph as is. Else recompile.
  std::string why;
  const std::string file_device = header["device"];
  const std::string here_device = device.is_cpu() ? "cpu" : "cuda";
  if (file_device != here_device) {
    why = fmt::format("it was compiled for {}, loading on {}", file_device, here_device);
  } else {
    for (const auto& [k, v] : target_fields(backend)) {
      const std::string in_file = header.count(k) ? header[k] : "(none)";
      if (in_file != v && why.empty()) why = fmt::format("{} is {} in the file, {} here", k, in_file, v);
    }
  }

  // Library algorithm choices (optional: files written before it have no such section).
  std::vector<backends::CodeObject> choices;
  if (sec.count("algorithms")) choices = parse_choices(sec["algorithms"], file);
  // Handed to the backend first, so that it can prepare them (library handles, plans) while the
  // rest of the file is parsed. The executable holds the preparation (stopped when it goes).
  std::shared_ptr<void> preparation;
  if (why.empty() && !choices.empty()) {
    phases::Scope timed("load_algorithm_preload");
    try {
      preparation = backend.preload_code(choices, options.first_run_kernels);
    } catch (const Error& e) {
      fail(ErrorCode::io_error, "load", "{}: section 'algorithms': {}", file, e.what());
    }
  }

  // Variables: the file's slots mapped to slots of the store the executable will use.
  std::shared_ptr<ir::VariableStore> store =
      options.variables ? options.variables->impl()->variables() : std::make_shared<ir::VariableStore>();
  Reader vr(sec["variables"], file, "variables");
  std::vector<std::tuple<int64_t, std::string, TensorType>> vars(vr.count(14));
  for (auto& [slot, name, type] : vars) {
    slot = vr.i64();
    name = vr.str();
    type = runtime::tgx::read_type(vr);
    if (name.empty()) vr.malformed("a variable without a name");
    for (int64_t d : type.shape) {
      if (d < 0) vr.malformed(fmt::format("variable '{}' has a dynamic type {}", name, type.to_string()));
    }
  }
  const bool embedded = vr.u8() == 1;
  if (!vr.done()) vr.malformed("bytes after the variables");
  std::map<int64_t, int> slot_map;
  if (options.variables) {
    std::string problems;
    bool missing = false;
    for (const auto& [slot, name, type] : vars) {
      const int s = store->find(name);
      if (s < 0) {
        problems += fmt::format("\n  '{}' ({}) is not a variable of the graph", name, type.to_string());
        missing = true;
      } else if (store->type(s) != type) {
        problems += fmt::format("\n  '{}' is {} in the file, {} in the graph", name, type.to_string(),
                                store->type(s).to_string());
      } else if (slot_map.count(slot)) {
        vr.malformed(fmt::format("slot {} listed twice", slot));
      } else {
        slot_map[slot] = s;
      }
    }
    if (!problems.empty()) {
      // include/tg/graph.h: not_found when one is missing, shape_mismatch when only types differ.
      fail(missing ? ErrorCode::not_found : ErrorCode::shape_mismatch, "load",
           "{}: variables do not bind to the graph's:{}", file, problems);
    }
  } else {
    if (!embedded || !sec.count("variable_data")) {
      fail(ErrorCode::not_found, "load",
           "{}: the variables are referenced by name, not embedded: give LoadOptions::variables a graph holding them", file);
    }
    std::vector<std::pair<std::string, TensorData>> values;
    try {
      const std::string_view d = sec["variable_data"];
      values = safetensors::parse({reinterpret_cast<const uint8_t*>(d.data()), d.size()}, file);
    } catch (const Error& e) {
      fail(ErrorCode::io_error, "load", "{}: section 'variable_data' malformed: {}", file, e.what());
    }
    for (const auto& [slot, name, type] : vars) {
      const std::string& wanted = name;  // (clang before 16 cannot capture a structured binding)
      auto it = std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.first == wanted; });
      if (it == values.end() || it->second.type() != type) {
        fail(ErrorCode::io_error, "load", "{}: section 'variable_data' malformed: no value of {} for '{}'", file,
             type.to_string(), name);
      }
      if (slot_map.count(slot)) vr.malformed(fmt::format("slot {} listed twice", slot));
      try {
        slot_map[slot] = store->add(name, it->second);
      } catch (const Error& e) {
        vr.malformed(e.what());
      }
    }
  }

  // The graph, with its variable nodes pointing at the store's slots and its symbols at this
  // process's symbols of the same names.
  phases::Scope parse_time("load_parse_graph");
  Reader gr(sec["graph"], file, "graph");
  if (sec.count("symbols")) gr.set_symbols(parse_symbols(sec["symbols"], file));
  // On CUDA (no recompile) the host copies of weights are only uploaded (byte copies): large ones
  // alias the file buffer whatever their alignment. Elsewhere kernels read them as typed arrays.
  gr.set_owner(owner, device.is_cuda() && why.empty() ? size_t{64} << 10 : SIZE_MAX);
  std::shared_ptr<ir::Graph> g = runtime::tgx::read_graph(gr, store);
  parse_time.stop();
  if (phases::enabled()) {
    // What the graph holds: constant bytes per dtype, and how many alias the file buffer.
    std::map<std::string, std::pair<int64_t, int64_t>> by_dtype;  // bytes, count
    int64_t aliased = 0;
    runtime::tgx::for_each_node(*g, [&](const ir::Node& n) {
      if (const auto* c = std::get_if<ir::ConstantAttrs>(&n.attrs)) {
        auto& e = by_dtype[std::string(dtype_name(c->value.dtype()))];
        e.first += static_cast<int64_t>(c->value.nbytes());
        e.second += 1;
        const auto* p = static_cast<const uint8_t*>(c->value.storage_ptr());
        if (owner && p >= bytes.data() && p < bytes.data() + bytes.size()) ++aliased;
      }
    });
    std::string line;
    for (const auto& [d, e] : by_dtype) line += fmt::format(" {}={}B({})", d, e.first, e.second);
    std::fprintf(stderr, "[tg phases] %s: %d nodes, constants:%s, %lld aliasing the file buffer\n", file.c_str(),
                 g->size(), line.c_str(), static_cast<long long>(aliased));
  }
  if (!gr.done()) gr.malformed("bytes after the graph");
  runtime::tgx::for_each_node(*g, [&](ir::Node& n) {
    if (auto* v = std::get_if<ir::VariableAttrs>(&n.attrs)) {
      auto it = slot_map.find(v->index);
      if (it == slot_map.end()) gr.malformed(fmt::format("node '{}' uses variable slot {}, not in section 'variables'", n.name, v->index));
      v->index = it->second;
    }
  });
  // The stored types must be those the ops infer (an edited or corrupt graph never reaches a kernel).
  phases::Scope types_time("load_type_check");
  try {
    ir::Graph check(*g);
    if (ops::infer_graph_types(check)) gr.malformed("node types differ from those their ops infer");
  } catch (const Error& e) {
    if (std::string_view(e.what()).find(file) != std::string_view::npos) throw;
    gr.malformed(fmt::format("its ops do not type-check: {}", e.what()));
  } catch (const std::exception& e) {
    gr.malformed(fmt::format("its ops do not type-check: {}", e.what()));
  }

  types_time.stop();

  phases::Scope program_time("load_program_section");
  auto plan = std::make_shared<runtime::PlannedGraph>();
  Reader pr(sec["program"], file, "program");
  plan->feed_nodes.resize(pr.count(8));
  for (int& f : plan->feed_nodes) {
    f = read_id(pr, g->size(), "feed");
    if (g->node(f).kind != ir::OpKind::placeholder) pr.malformed(fmt::format("feed %{} is not a placeholder", f));
  }
  plan->targets.resize(pr.count(16));
  for (auto& t : plan->targets) {
    t.node = read_id(pr, g->size(), "target");
    const int64_t index = pr.i64();
    if (index < 0 || index >= static_cast<int64_t>(g->node(t.node).outputs.size())) pr.malformed("a target output out of range");
    t.index = static_cast<int>(index);
  }
  plan->target_ops.resize(pr.count(8));
  for (int& o : plan->target_ops) o = read_id(pr, g->size(), "target op");
  plan->schedule.resize(pr.count(8));
  std::vector<char> seen(static_cast<size_t>(g->size()), 0);
  for (int& s : plan->schedule) {
    s = read_id(pr, g->size(), "scheduled node");
    for (const auto& in : g->node(s).inputs) {
      if (!seen[static_cast<size_t>(in.node)]) pr.malformed(fmt::format("node %{} is scheduled before its input %{}", s, in.node));
    }
    if (seen[static_cast<size_t>(s)]) pr.malformed(fmt::format("node %{} is scheduled twice", s));
    seen[static_cast<size_t>(s)] = 1;
  }
  // Everything the run reads or returns is scheduled: feeds (once each), targets and target ops.
  std::vector<char> fed(static_cast<size_t>(g->size()), 0);
  for (int f : plan->feed_nodes) {
    if (!seen[static_cast<size_t>(f)] || fed[static_cast<size_t>(f)]) pr.malformed(fmt::format("feed %{} is unscheduled or fed twice", f));
    fed[static_cast<size_t>(f)] = 1;
  }
  for (const auto& t : plan->targets) {
    if (!seen[static_cast<size_t>(t.node)]) pr.malformed(fmt::format("target %{} is not scheduled", t.node));
  }
  for (int o : plan->target_ops) {
    if (!seen[static_cast<size_t>(o)]) pr.malformed(fmt::format("target op %{} is not scheduled", o));
  }
  const uint8_t precision = pr.u8();
  if (precision > 3) pr.malformed("an unknown precision");
  plan->precision = static_cast<ComputePrecision>(precision);
  plan->deterministic = pr.u8() != 0;
  const uint64_t budget = pr.u64();
  const uint64_t arena_bytes = pr.u64();
  pr.u64();  // planned bytes (informative)
  if (!pr.done()) pr.malformed("bytes after the program");
  // Feeds of symbolic shape: an executable compiled once for varying sizes (disable_type_inference).
  bool dynamic = false;
  for (size_t i = 0; i < plan->feed_nodes.size(); ++i) {
    const Shape& s = g->node(plan->feed_nodes[i]).outputs[0].shape;
    if (!is_known(s)) pr.malformed("a feed of dynamic shape");
    dynamic = dynamic || !is_static(s);
  }

  // Kernels (read before deciding, so that a malformed section is an error either way).
  Reader kr(sec["kernels"], file, "kernels");
  std::vector<backends::CodeObject> code(kr.count(8));
  for (auto& c : code) {
    c.key = kr.str();
    c.image = kr.str();
  }
  if (!kr.done()) kr.malformed("bytes after the kernels");
  program_time.stop();

  stats::add(stats::Counter::executable_loads);
  if (!why.empty()) {
    std::fprintf(stderr, "[tg] %s: recompiling the saved executable from its graph: %s\n", file.c_str(), why.c_str());
    stats::add(stats::Counter::executable_load_recompiles);
    FeedTypes feeds;
    for (int f : plan->feed_nodes) feeds.emplace_back(Tensor(g, f, 0), g->node(f).outputs[0]);
    std::vector<Tensor> targets;
    for (const auto& t : plan->targets) targets.emplace_back(g, t.node, t.index);
    std::vector<Operation> target_ops;
    for (int o : plan->target_ops) target_ops.emplace_back(g, o);
    CompileOptions co;
    co.precision = plan->precision;
    co.deterministic = plan->deterministic;
    co.memory_budget_bytes = static_cast<size_t>(budget);
    co.disable_type_inference = dynamic;
    try {
      return runtime::compile_graph(g, device, feeds, targets, target_ops, co);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("[load] {}: section 'graph': recompiling failed: {}", file, e.what()));
    }
  }

  for (const ir::Node& n : g->nodes()) {
    if (!backend.supports(n)) {
      fail(ErrorCode::unsupported, "load", "{}: section 'graph': {} is not supported on {}", file, ir::op_name(n.kind),
           device.to_string());
    }
  }
  if (!code.empty()) {
    phases::Scope timed("load_kernel_preload");
    try {
      backend.preload_code(code);
    } catch (const Error& e) {
      fail(ErrorCode::io_error, "load", "{}: section 'kernels': {}", file, e.what());
    }
    stats::add(stats::Counter::kernel_preloads, static_cast<int64_t>(code.size()));
  }
  phases::Scope program_build_time("load_program_build");
  if (dynamic) {  // each signature is lowered at its first run, from the stored kernels
    CompileOptions co;
    co.precision = plan->precision;
    co.deterministic = plan->deterministic;
    co.memory_budget_bytes = static_cast<size_t>(budget);
    co.disable_type_inference = true;
    if (arena_bytes != 0) pr.malformed("an arena size for an executable whose sizes vary");
    auto later = runtime::specialize_later(g, plan->feed_nodes, plan->targets, plan->target_ops, device, co, nullptr);
    if (preparation) later->background.push_back(std::move(preparation));
    return Executable(std::move(later));
  }
  auto compiled = std::make_shared<CompiledProgram>();
  compiled->device = device;
  for (int f : plan->feed_nodes) {
    compiled->feed_names.push_back(g->node(f).name);
    compiled->feed_types.push_back(g->node(f).outputs[0]);
  }
  for (const auto& r : plan->targets) compiled->target_types.push_back(g->type(r));
  plan->graph = g;
  plan->first_run_kernels = options.first_run_kernels;
  if (preparation) compiled->background.push_back(std::move(preparation));
  {
    // The constants' upload, in the background from here on (the first run finds them uploaded
    // or queued), in the order of the schedule.
    phases::Scope timed("load_constant_prefetch");
    std::vector<TensorData> constants;
    for (int id : plan->schedule) {
      if (const auto* c = std::get_if<ir::ConstantAttrs>(&g->node(id).attrs)) constants.push_back(c->value);
    }
    // Those whose bytes alias the graph payload that Executable::load uploaded while reading the
    // file get their device copies from it (the file has passed every check by now).
    if (owner && t_loading->upload) {
      const uint8_t* lo = bytes.data() + t_loading->upload_offset;
      const uint8_t* hi = lo + t_loading->upload_bytes;
      std::vector<TensorData> in_file;
      std::vector<size_t> offsets;
      std::set<const void*> seen;
      for (const TensorData& c : constants) {
        const auto* p = static_cast<const uint8_t*>(c.storage_ptr());
        if (!c.device().is_cpu() || c.empty() || p < lo || p > hi || c.nbytes() > static_cast<size_t>(hi - p)) continue;
        if (!seen.insert(p).second) continue;
        in_file.push_back(c);
        offsets.push_back(static_cast<size_t>(p - lo));
      }
      if (!in_file.empty()) {
        if (std::shared_ptr<void> h = t_loading->upload->finish(in_file, offsets)) compiled->background.push_back(std::move(h));
      }
    }
    if (std::shared_ptr<void> h = backend.prefetch_constants(constants)) compiled->background.push_back(std::move(h));
  }
  try {
    compiled->program = std::make_unique<runtime::Program>(plan, backend, static_cast<size_t>(budget));
  } catch (const Error& e) {
    fail(ErrorCode::io_error, "load", "{}: section 'program' malformed: {}", file, e.what());
  }
  compiled->plan = std::move(plan);
  if (static_cast<uint64_t>(compiled->program->memory().arena_bytes) != arena_bytes) {
    fail(ErrorCode::io_error, "load", "{}: section 'program': the memory plan takes {} bytes here, {} in the file", file,
         compiled->program->memory().arena_bytes, arena_bytes);
  }
  return Executable(std::move(compiled));
}

}  // namespace tg
