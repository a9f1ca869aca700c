// `tg run model.onnx`: imports an ONNX model, feeds it inputs from .pb (TensorProto) or .npy
// files (or random data of the right shapes), prints the outputs' shapes and a summary, writes
// them as .npy files with -o DIR, and with --repeat N times the compiled executable (median, p90).
// Input files that do not fit the model's declared inputs are usage errors (status 2) naming the
// file and the input; a model that fails to import is reported as such (status 1).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "npy.h"
#include "options.h"
#include "tg/onnx.h"
#include "tg/tg.h"

namespace {

namespace fs = std::filesystem;
using tg::DType;
using tg::ErrorCode;
using tg::Shape;
using tg::TensorData;

using tg::cli::read_npy;
using tg::cli::write_npy;

// ---------------------------------------------------------------------------------------------

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // "path" (in input order) or "name=path"
  std::vector<std::string> shapes;  // "name=2,3,224,224"
  bool random = false;
  uint64_t seed = 0;
  std::string device = "";
  std::string precision = "f32";
  int64_t repeat = 0;
  std::string output_dir;  // empty: the outputs are printed, not written
  bool precision_given = false;
  bool dynamic = false;  // tg compile --dynamic: dims the model leaves open stay symbols
};

TensorData read_tensor_file(const fs::path& p) {
  return p.extension() == ".npy" ? read_npy(p) : tg::onnx::read_tensor_proto(p);
}

// A random value for a graph input: floats uniform in [-1, 1), integers 0, bools false.
TensorData random_input(const tg::TensorType& t, uint64_t seed) {
  if (is_floating(t.dtype)) return TensorData::random_uniform(t.shape, -1.f, 1.f, seed, t.dtype);
  return TensorData::zeros(t.shape, t.dtype);
}

std::string summary(const TensorData& t) {
  if (t.num_elements() == 0) return "(empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = t.element_as_double(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::ostringstream os;
  os << "min " << lo << "  max " << hi << "  mean " << sum / static_cast<double>(t.num_elements());
  if (t.num_elements() > 0) os << "  " << t.to_string(6);
  return os.str();
}

std::string file_name_for(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return s.empty() ? "output" : s;
}

std::string names_of(const std::vector<tg::onnx::InputInfo>& inputs) {
  std::vector<std::string> names;
  for (const auto& in : inputs) names.push_back("'" + in.name + "'");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string declared(const tg::onnx::InputInfo& in) {
  return fmt::format("{}{}", tg::dtype_name(in.dtype),
                     in.shape ? tg::shape_to_string(*in.shape) : std::string("[rank not declared]"));
}

// True when `shape` fits the declared one (same rank, equal static dims).
bool fits(const std::optional<Shape>& declared_shape, const Shape& shape) {
  if (!declared_shape) return true;
  if (declared_shape->size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if ((*declared_shape)[d] >= 0 && (*declared_shape)[d] != shape[d]) return false;
  }
  return true;
}

const tg::onnx::InputInfo* find_input(const std::vector<tg::onnx::InputInfo>& inputs,
                                      const std::string& name) {
  for (const auto& in : inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

// True when some input's declared shape holds the symbol `name` (a named dynamic dim).
bool names_a_symbol(const std::vector<tg::onnx::InputInfo>& inputs, const std::string& name) {
  for (const tg::onnx::InputInfo& in : inputs) {
    for (int64_t d : in.shape.value_or(Shape{})) {
      if (tg::is_symbolic_dim(d) && tg::dim_name(d) == name) return true;
    }
  }
  return false;
}

// --shape name=d0,d1,...: each checked against the model's declared inputs. --shape SYMBOL=n (a
// named dynamic dim of the inputs, e.g. batch=8) sizes that symbol in every input that has it and
// no --shape of its own (their other open dims stay open: the callers take 1 for them).
std::map<std::string, Shape> parse_shapes(const RunArgs& a,
                                          const std::vector<tg::onnx::InputInfo>& inputs) {
  std::map<std::string, Shape> shapes;
  std::map<std::string, int64_t> symbols;
  std::map<std::string, std::string> given;  // name -> the --shape that gave it
  for (const std::string& spec : a.shapes) {
    const size_t eq = spec.find('=');
    const std::string example = fmt::format("e.g. --shape {}=1,3,224,224",
                                            inputs.empty() ? "input" : inputs.front().name);
    if (eq == std::string::npos || eq == 0) {
      throw tg::cli::UsageError(fmt::format("--shape {}: expected name=d0,d1,... ({})", spec, example));
    }
    const std::string name = spec.substr(0, eq);
    const tg::onnx::InputInfo* in = find_input(inputs, name);
    const bool symbol = in == nullptr && names_a_symbol(inputs, name);
    if (!in && !symbol) {
      throw tg::cli::UsageError(fmt::format("--shape {}: {} has no input or dim named '{}' (its inputs: {})", spec,
                                            a.model, name, names_of(inputs)));
    }
    if (auto [it, first] = given.emplace(name, spec); !first) {  // the last one won silently
      throw tg::cli::UsageError(fmt::format("--shape {}: '{}' is given twice (first by --shape {}); give each "
                                            "once", spec, name, it->second));
    }
    Shape shape;
    std::stringstream ss(spec.substr(eq + 1));
    for (std::string tok; std::getline(ss, tok, ',');) {
      int64_t d = 0;
      auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
      if (ec != std::errc() || end != tok.data() + tok.size() || tok.empty() || d < 1) {
        throw tg::cli::UsageError(fmt::format(
            "--shape {}: '{}' is not a dimension; give whole numbers >= 1 separated by commas ({})",
            spec, tok.size() > 24 ? tok.substr(0, 20) + "..." : tok, example));
      }
      shape.push_back(d);
    }
    if (symbol) {
      if (shape.size() != 1) {
        throw tg::cli::UsageError(fmt::format("--shape {}: '{}' is a dim of the inputs: give one size, e.g. "
                                              "--shape {}=8", spec, name, name));
      }
      symbols[name] = shape[0];
      continue;
    }
    if (!fits(in->shape, shape)) {
      throw tg::cli::UsageError(fmt::format("--shape {}: the model declares input '{}' as {}; give "
                                            "its rank and keep its fixed dims",
                                            spec, name, declared(*in)));
    }
    shapes[name] = shape;
  }
  for (const tg::onnx::InputInfo& in : inputs) {
    if (symbols.empty() || shapes.count(in.name) || !in.shape) continue;
    Shape s = *in.shape;
    bool sized = false;
    for (int64_t& d : s) {
      if (!tg::is_symbolic_dim(d)) continue;
      auto it = symbols.find(tg::dim_name(d));
      if (it == symbols.end()) continue;
      d = it->second;
      sized = true;
    }
    if (sized) shapes[in.name] = s;
  }
  return shapes;
}

// The input files of the command line by input name ("path" in the model's input order, or
// "name=path"), each checked against the input's declared dtype and shape. An input given twice
// (x=a.npy x=b.npy, or a.npy x=b.npy) is a usage error naming it (the last one won silently).
// `defaults`: inputs an initializer provides, which only name=path replaces (ONNX: a feed
// overrides such a default).
std::map<std::string, TensorData> read_inputs(const RunArgs& a,
                                              const std::vector<tg::onnx::InputInfo>& inputs,
                                              const std::vector<tg::onnx::InputInfo>& defaults = {}) {
  std::map<std::string, TensorData> data;
  std::map<std::string, std::string> given;  // input name -> the argument that gave it
  size_t position = 0;
  for (const std::string& spec : a.inputs) {
    const size_t eq = spec.find('=');
    const tg::onnx::InputInfo* in = nullptr;
    fs::path path = spec;
    if (eq != std::string::npos && !fs::exists(spec)) {
      in = find_input(inputs, spec.substr(0, eq));
      if (!in) in = find_input(defaults, spec.substr(0, eq));
      if (!in) {
        throw tg::cli::UsageError(fmt::format("{}: {} has no input '{}' (its inputs: {})", spec,
                                              a.model, spec.substr(0, eq), names_of(inputs)));
      }
      path = spec.substr(eq + 1);
    } else {
      if (position >= inputs.size()) {
        throw tg::cli::UsageError(fmt::format(
            "{} given for {}, which has {} ({})", tg::cli::count(static_cast<int64_t>(a.inputs.size()),
                                                                 "input file"),
            a.model, tg::cli::count(static_cast<int64_t>(inputs.size()), "input"), names_of(inputs)));
      }
      in = &inputs[position++];
    }
    if (auto [it, first] = given.emplace(in->name, spec); !first) {
      throw tg::cli::UsageError(fmt::format("{}: input '{}' is given twice (first by {}); give each "
                                            "input once", spec, in->name, it->second));
    }
    if (!fs::is_regular_file(path)) {
      throw tg::cli::UsageError(fmt::format("input file '{}' (for input '{}'): {}", path.string(),
                                            in->name,
                                            fs::is_directory(path) ? "a directory, not a file" : "no such file"));
    }
    TensorData v = read_tensor_file(path);
    if (v.dtype() != in->dtype || !fits(in->shape, v.shape())) {
      throw tg::cli::UsageError(fmt::format("input file '{}' holds {}{}, but {} declares input '{}' as "
                                            "{}",
                                            path.string(), tg::dtype_name(v.dtype()),
                                            tg::shape_to_string(v.shape()), a.model, in->name,
                                            declared(*in)));
    }
    data[in->name] = std::move(v);
  }
  return data;
}

// An import error in the command line's terms: the library names its options, tg run its flags.
std::string in_cli_terms(std::string message) {
  static const std::pair<const char*, const char*> kTerms[] = {
      {"ImportOptions::input_shapes", "--shape NAME=d0,d1,..."},
      {"ImportOptions::input_values", "an input file"},
      {"ImportOptions::initializer_values gives", "the input file holds"},
      {"ImportOptions::", "the import options "}};
  for (const auto& [api, cli] : kTerms) {
    for (size_t at = message.find(api); at != std::string::npos; at = message.find(api, at)) {
      message.replace(at, std::strlen(api), cli);
      at += std::strlen(cli);
    }
  }
  return message;
}

// Prints (and with -o writes) the outputs of one run, then times --repeat more runs.
void report(const RunArgs& a, const tg::Executable& exe, const std::vector<TensorData>& feeds,
            const std::vector<std::string>& names) {
  std::vector<TensorData> outs = exe.run(feeds);
  std::cout << tg::cli::arena_line(exe) << "\n";
  if (!a.output_dir.empty()) fs::create_directories(a.output_dir);
  for (size_t i = 0; i < outs.size(); ++i) {
    TensorData host = outs[i].to(tg::Device::cpu());
    std::cout << "  " << names[i] << ": " << host.type().to_string() << "  " << summary(host) << "\n";
    if (!a.output_dir.empty()) {
      fs::path p = fs::path(a.output_dir) / (file_name_for(names[i]) + ".npy");
      write_npy(p, host);
      std::cout << "    written to " << p.string() << "\n";
    }
  }
  if (a.repeat > 0) {
    std::vector<double> ms;
    for (int64_t r = 0; r < a.repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<TensorData> o = exe.run(feeds);
      for (TensorData& t : o) t = t.to(tg::Device::cpu());  // wait for the results
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size())))]; };
    std::cout << "latency over " << tg::cli::count(a.repeat, "run") << ": median " << pct(0.5)
              << " ms, p90 " << pct(0.9) << " ms, min " << ms.front() << " ms\n";
  }
}

// ", precision P" for the run/compile lines; on the CPU a precision other than f32 says that it
// is not applied (CompileOptions::precision: the CPU backend computes in float32).
std::string precision_note(const std::string& precision, const tg::Device& device) {
  if (!device.is_cpu() || precision == "f32") return ", precision " + precision;
  return ", precision " + precision + " (CUDA only: the CPU computes convolutions and matrix products in float32)";
}

void run_model(const RunArgs& a) {
  // The inputs as the file declares them: what the command line's files and shapes must fit.
  // `defaults`: inputs an initializer provides (a name=FILE argument replaces the default).
  std::vector<tg::onnx::InputInfo> inputs, defaults;
  try {
    for (tg::onnx::InputInfo& in : tg::onnx::model_inputs(a.model, true)) {
      (in.has_default ? defaults : inputs).push_back(std::move(in));
    }
  } catch (const tg::Error& e) {
    throw tg::Error(e.code(), fmt::format("[tg run] cannot read the model {}: {}", a.model, e.what()));
  }
  std::map<std::string, Shape> shapes = parse_shapes(a, inputs);
  std::map<std::string, TensorData> data = read_inputs(a, inputs, defaults);
  tg::onnx::ImportOptions opts;
  for (const tg::onnx::InputInfo& in : defaults) {
    auto it = data.find(in.name);
    if (it == data.end()) continue;
    opts.initializer_values[in.name] = it->second;
    data.erase(it);
  }
  for (const tg::onnx::InputInfo& in : inputs) {
    if (data.count(in.name)) continue;
    if (!a.random) {
      throw tg::cli::UsageError(fmt::format(
          "no value for input '{}' ({}) of {}: give a file for each input in order (tg run {} "
          "FILE...), or {}=FILE, or --random",
          in.name, declared(in), a.model, a.model, in.name));
    }
    auto given = shapes.find(in.name);
    Shape s = given != shapes.end() ? given->second : in.shape.value_or(Shape{});
    for (int64_t& d : s) d = d < 0 ? 1 : d;
    data[in.name] = random_input({s, in.dtype}, a.seed + data.size());
  }
  for (const auto& [name, v] : data) opts.input_shapes[name] = v.shape();
  opts.input_values = [&](const std::string& name) -> std::optional<TensorData> {
    auto it = data.find(name);
    return it == data.end() ? std::nullopt : std::optional<TensorData>(it->second);
  };
  tg::onnx::ImportResult m;
  try {
    m = tg::onnx::import(a.model, opts);
  } catch (const tg::Error& e) {
    throw tg::Error(e.code(), fmt::format("[tg run] importing {} failed: {}", a.model, in_cli_terms(e.what())));
  }
  tg::Device device = a.device.empty() ? tg::Device::default_device()
                                       : tg::cli::parse_device(a.device, "tg run");
  tg::FeedTypes types;
  std::vector<TensorData> feeds;
  for (const tg::onnx::NamedTensor& in : m.inputs) {
    const TensorData& v = data.at(in.name);
    types.emplace_back(in.tensor, v.type());
    feeds.push_back(v.to(device));
  }
  tg::Executable exe =
      m.graph.compile(device, types, m.targets(), {}, {.precision = tg::cli::parse_precision(a.precision)});
  std::vector<std::string> names;
  for (const auto& o : m.outputs) names.push_back(o.name);
  std::cout << "model " << a.model << " (opset " << m.opset << ", "
            << tg::cli::count(m.graph.num_nodes(), "graph node") << ") on " << device.to_string()
            << precision_note(a.precision, device) << "\n";
  report(a, exe, feeds, names);
}

// The header fields of a saved executable by key.
std::map<std::string, std::string> header_of(const std::string& path) {
  std::map<std::string, std::string> h;
  for (auto& [k, v] : tg::read_executable_header(path)) h[k] = v;
  return h;
}

// The header fields from the file's first section alone (docs/design/0008: "TGX1", u32 version,
// u32 section count, then u32 name length, name, u64 length, u64 checksum, payload; the first
// section is "header"), without reading the weights: Executable::load reads and checks the whole
// file right after, so reading it twice only cost time. Anything unexpected: header_of (which
// raises the loader's errors).
std::map<std::string, std::string> quick_header_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char fixed[12] = {};
  auto le = [](const char* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
  };
  if (!in.read(fixed, 12) || std::memcmp(fixed, "TGX1", 4) != 0 || le(fixed + 8, 4) == 0) return header_of(path);
  char len4[4] = {};
  if (!in.read(len4, 4) || le(len4, 4) != 6) return header_of(path);
  char name[6] = {};
  char len8[16] = {};
  if (!in.read(name, 6) || std::memcmp(name, "header", 6) != 0 || !in.read(len8, 16)) return header_of(path);
  const uint64_t length = le(len8, 8);
  if (length > (uint64_t{1} << 20)) return header_of(path);
  std::string text(static_cast<size_t>(length), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(length))) return header_of(path);
  std::map<std::string, std::string> h;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return header_of(path);
    h[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return h;
}

// `tg run model.tgx`: a saved executable (Executable::load): its inputs are its feeds, in order.
void run_saved(const RunArgs& a) {
  const std::map<std::string, std::string> header = quick_header_of(a.model);
  tg::Device device = a.device.empty() ? tg::Device::default_device()
                                       : tg::cli::parse_device(a.device, "tg run");
  // A field the header lacks (a file from another writer: the loader needs none of these) reads "?".
  const auto field = [&](const char* key) {
    const auto it = header.find(key);
    return it != header.end() ? it->second : std::string("?");
  };
  const std::string file_precision = field("precision");
  if (a.precision_given && a.precision != file_precision) {
    throw tg::cli::UsageError(fmt::format("--precision {}: {} was compiled with precision {} (give it to tg compile)",
                                          a.precision, a.model, file_precision));
  }
  // The first run does not wait for cuDNN/cuBLASLt to initialize: it uses TensorGraph's own GEMM and
  // convolution kernels where their plans are not ready (docs/design/0011; not the library's bits;
  // TG_FIRST_RUN_KERNELS=0 turns it off).
  tg::LoadOptions load_options;
  load_options.first_run_kernels = true;
  tg::Executable exe = tg::Executable::load(a.model, device, load_options);
  // The feeds as inputs: names and types from the executable.
  std::vector<tg::onnx::InputInfo> inputs;
  const std::vector<tg::TensorType> types = exe.input_types();
  std::vector<std::string> names;
  {
    std::stringstream ss(header.count("feeds") ? header.at("feeds") : "");
    // "name:type": names and symbols may hold ':' ("input_1:0", "in:0.1"); the type starts with a
    // dtype name and '['.
    for (std::string item; std::getline(ss, item, ';');) {
      size_t split = item.rfind(':');
      for (size_t p = item.find(':'); p != std::string::npos; p = item.find(':', p + 1)) {
        bool type_follows = false;
        for (tg::DType d : tg::kAllDTypes) {
          const std::string dt = std::string(tg::dtype_name(d)) + "[";
          type_follows = type_follows || item.compare(p + 1, dt.size(), dt) == 0;
        }
        if (type_follows) {
          split = p;
          break;
        }
      }
      names.push_back(item.substr(0, split));
    }
  }
  for (size_t i = 0; i < types.size(); ++i) {
    inputs.push_back({i < names.size() ? names[i] : fmt::format("input_{}", i), types[i].dtype, types[i].shape});
  }
  std::map<std::string, Shape> shapes = parse_shapes(a, inputs);
  for (const auto& [name, s] : shapes) {
    const tg::onnx::InputInfo* in = find_input(inputs, name);
    if (!fits(in->shape, s)) {  // a symbol (compiled with --dynamic) takes any size
      throw tg::cli::UsageError(fmt::format("--shape {}={}: {} was compiled for input '{}' {} (give --shape to tg compile)",
                                            name, fmt::join(s, ","), a.model, name, declared(*in)));
    }
  }
  std::map<std::string, TensorData> data = read_inputs(a, inputs);
  // Symbols (tg compile --dynamic) of random inputs: the size another input's --shape or file
  // gives the same symbol, else 1.
  std::map<int64_t, int64_t> symbol_sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto given = shapes.find(inputs[i].name);
    auto file = data.find(inputs[i].name);
    const Shape* s = given != shapes.end() ? &given->second : file != data.end() ? &file->second.shape() : nullptr;
    for (size_t k = 0; s && k < s->size() && k < types[i].shape.size(); ++k) {
      if (tg::is_symbolic_dim(types[i].shape[k]) && (*s)[k] > 0) symbol_sizes.emplace(types[i].shape[k], (*s)[k]);
    }
  }
  auto symbol_size = [&](int64_t d) {
    auto it = symbol_sizes.find(d);
    return it != symbol_sizes.end() ? it->second : int64_t{1};
  };
  std::vector<TensorData> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = data.find(inputs[i].name);
    if (it != data.end()) {
      feeds.push_back(it->second.to(device));
      continue;
    }
    if (!a.random) {
      throw tg::cli::UsageError(fmt::format("no value for input '{}' ({}) of {}: give a file for each input in order, or "
                                            "{}=FILE, or --random",
                                            inputs[i].name, declared(inputs[i]), a.model, inputs[i].name));
    }
    auto given = shapes.find(inputs[i].name);
    Shape shape = given != shapes.end() ? given->second : types[i].shape;
    for (int64_t& d : shape) d = d < 0 ? symbol_size(d) : d;
    feeds.push_back(random_input({shape, types[i].dtype}, a.seed + i).to(device));
  }
  std::vector<std::string> outputs;
  for (size_t i = 0; i < exe.output_types().size(); ++i) outputs.push_back(fmt::format("output_{}", i));
  std::cout << "executable " << a.model << " (" << field("nodes") << " nodes, compiled for "
            << field("device") << " " << field("arch") << ") on " << device.to_string()
            << precision_note(file_precision, device) << "\n";
  report(a, exe, feeds, outputs);
}

// `tg compile model.onnx -o model.tgx`: imports, compiles (dynamic dims from --shape, else 1),
// runs once on random inputs on a GPU (so that the file holds the generated kernels) and saves.
// With --dynamic the dims the model leaves open stay symbols (its dim_params' names, else
// "<input>.<axis>"; CompileOptions::disable_type_inference): the file runs at any sizes, and the
// warm-up run takes --shape's sizes (else 1 for each symbol).
void compile_model(const RunArgs& a, const std::string& out) {
  std::error_code same_ec;
  if (out == a.model || std::filesystem::equivalent(out, a.model, same_ec)) {
    throw tg::cli::UsageError(fmt::format("-o {} is the model itself: give the .tgx another path", out));
  }
  if (tg::cli::is_saved_executable(a.model)) {
    throw tg::cli::UsageError(fmt::format("{} is a saved executable already: tg compile takes an ONNX model "
                                          "(tg run / tg inspect take the .tgx)", a.model));
  }
  std::vector<tg::onnx::InputInfo> inputs;
  try {
    inputs = tg::onnx::model_inputs(a.model);
  } catch (const tg::Error& e) {
    throw tg::Error(e.code(), fmt::format("[tg compile] cannot read the model {}: {}", a.model, e.what()));
  }
  std::map<std::string, Shape> shapes = parse_shapes(a, inputs);
  tg::onnx::ImportOptions opts;
  for (const tg::onnx::InputInfo& in : inputs) {
    if (a.dynamic) break;  // open dims stay open
    auto given = shapes.find(in.name);
    Shape s = given != shapes.end() ? given->second : in.shape.value_or(Shape{});
    for (int64_t& d : s) d = d < 0 ? 1 : d;
    opts.input_shapes[in.name] = s;
  }
  tg::onnx::ImportResult m;
  try {
    m = tg::onnx::import(a.model, opts);
  } catch (const tg::Error& e) {
    throw tg::Error(e.code(), fmt::format("[tg compile] importing {} failed: {}", a.model, in_cli_terms(e.what())));
  }
  tg::Device device = a.device.empty() ? tg::Device::default_device()
                                       : tg::cli::parse_device(a.device, "tg compile");
  tg::FeedTypes types;
  std::vector<TensorData> feeds;
  for (const tg::onnx::NamedTensor& in : m.inputs) {
    types.emplace_back(in.tensor, in.tensor.type());
    auto given = shapes.find(in.name);
    Shape s = given != shapes.end() ? given->second : in.tensor.type().shape;
    for (int64_t& d : s) d = d < 0 ? 1 : d;  // --dynamic: the warm-up run's sizes
    feeds.push_back(random_input({s, in.tensor.type().dtype}, a.seed + feeds.size()).to(device));
  }
  // The file also stores the first-run GEMM/convolution kernels that `tg run` uses (docs/design/0011).
  setenv("TG_FIRST_RUN_KERNELS", "1", /*overwrite=*/0);
  const auto t0 = std::chrono::steady_clock::now();
  tg::Executable exe = m.graph.compile(
      device, types, m.targets(), {},
      {.disable_type_inference = a.dynamic, .precision = tg::cli::parse_precision(a.precision)});
  if (!device.is_cpu()) {  // generates the kernels the file stores
    try {
      exe.run(feeds);
    } catch (const tg::Error& e) {
      if (!a.dynamic) throw;
      throw tg::Error(e.code(), fmt::format("[tg compile] the warm-up run at {} failed: {} (give the warm-up sizes with "
                                            "--shape)", a.shapes.empty() ? "size 1 for each symbol" : "--shape's sizes",
                                            e.what()));
    }
  }
  exe.save(out);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "compiled " << a.model << " for " << device.to_string() << precision_note(a.precision, device) << " in "
            << fmt::format("{:.0f}", ms) << " ms: " << out << " (" << fs::file_size(out) << " bytes)\n";
  for (const auto& [k, v] : tg::read_executable_header(out)) {
    if (k == "feeds" || k == "targets" || k == "arena_bytes" || k == "kernels" || k == "arch" || k == "symbols") {
      std::cout << "  " << k << ": " << v << "\n";
    }
  }
}

void run_any(const RunArgs& a) {
  if (tg::cli::is_saved_executable(a.model)) {
    run_saved(a);
  } else {
    run_model(a);
  }
}

}  // namespace

namespace tg::cli {

namespace {

// The options `tg run` and `tg compile` share.
void add_model_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--shape", a.shapes, "Fix an input's shape: name=d0,d1,...; or size a named dim of the inputs: batch=8")
      ->type_name("NAME=D0,D1,...");
  device_name(cmd->add_option("--device", a.device,
                              "cpu, cuda or cuda:N (default: TG_DEVICE, else the GPU if there is one)"));
  CLI::Option* precision = one_of(cmd->add_option("--precision", a.precision,
                                                  "Arithmetic of convolutions and matrix products on CUDA: f32, tf32, "
                                                  "bf16 or f16")
                                      ->capture_default_str(),
                                  {"f32", "tf32", "bf16", "f16"}, "a precision");
  precision->each([&a](const std::string&) { a.precision_given = true; });
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run an ONNX model or a saved executable (.tgx) on given or random inputs");
  existing_file(cmd->add_option("model", args->model, "The .onnx file, or a .tgx file written by tg compile")->required());
  cmd->add_option("inputs", args->inputs,
                  "Input values: .pb (TensorProto) or .npy files, in the model's input order, "
                  "or name=file (which also replaces an input's initializer default)");
  cmd->add_flag("--random", args->random, "Random values for inputs not given (floats in [-1, 1), "
                "integers 0; dynamic dims 1 unless --shape)");
  whole_number(cmd->add_option("--seed", args->seed, "Seed of the random inputs"), 0);
  add_model_options(cmd, *args);
  whole_number(cmd->add_option("--repeat", args->repeat,
                               "Time N more runs and print median and p90 latency"),
               0);
  cmd->add_option("--output-dir,-o", args->output_dir,
                  "Write the outputs here as .npy files, one per output (without it nothing is "
                  "written)")
      ->type_name("DIR");
  cmd->callback([args] {
    if (!args->output_dir.empty()) tg::cli::check_output_dir(args->output_dir, "--output-dir");
    run_any(*args);  // main() reports a tg::Error
  });
}

void add_compile_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("compile", "Compile an ONNX model ahead into a saved executable (.tgx) for tg run");
  existing_file(cmd->add_option("model", args->model, "The .onnx file")->required());
  cmd->add_option("--output,-o", *out, "The .tgx file to write")->required()->type_name("FILE");
  add_model_options(cmd, *args);
  cmd->add_flag("--dynamic", args->dynamic,
                "Compile once for every size of the dims the model leaves open (dynamic axes stay "
                "symbols; --shape then gives the warm-up run's sizes)");
  cmd->callback([args, out] { compile_model(*args, *out); });
}

}  // namespace tg::cli
