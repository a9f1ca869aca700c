// `tg run model.onnx`: imports an ONNX model, feeds it inputs from .pb (TensorProto) or .npy
// files (or random data of the right shapes), prints the outputs' shapes and a summary, writes
// them as .npy files, and with --repeat N times the compiled executable (median, p90).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
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
#include "tg/onnx.h"
#include "tg/tg.h"

namespace {

namespace fs = std::filesystem;
using tg::DType;
using tg::ErrorCode;
using tg::Shape;
using tg::TensorData;

[[noreturn]] void fail(ErrorCode code, const std::string& msg) { throw tg::Error(code, "[tg run] " + msg); }

// ---------------------------------------------------------------------------------------------
// .npy (NumPy format 1.0-3.0, little-endian, C order).

const char* npy_descr(DType d) {
  switch (d) {
    case DType::bool_: return "|b1";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::bf16: return "<f4";  // NumPy has no bfloat16: written as float32
  }
  return "";
}

DType dtype_of_descr(const std::string& d, const std::string& file) {
  static const std::map<std::string, DType> kDescr = {
      {"|b1", DType::bool_}, {"|i1", DType::i8},  {"|u1", DType::u8},  {"<i4", DType::i32},
      {"<i8", DType::i64},   {"<f2", DType::f16}, {"<f4", DType::f32}, {"<f8", DType::f64},
      {"b1", DType::bool_},  {"i1", DType::i8},   {"u1", DType::u8}};
  auto it = kDescr.find(d);
  if (it == kDescr.end()) fail(ErrorCode::unsupported, file + ": unsupported .npy dtype '" + d + "'");
  return it->second;
}

// The value of `key` in the header dict ("'descr': '<f4', ...").
std::string header_field(const std::string& h, const std::string& key, const std::string& file) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) fail(ErrorCode::io_error, file + ": .npy header lacks '" + key + "'");
  size_t colon = h.find(':', k);
  size_t begin = h.find_first_not_of(' ', colon + 1);
  size_t end = h[begin] == '(' ? h.find(')', begin) + 1
               : h[begin] == '\'' ? h.find('\'', begin + 1) + 1
                                  : h.find_first_of(",}", begin);
  return h.substr(begin, end - begin);
}

TensorData read_npy(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::not_found, "cannot open '" + path.string() + "'");
  std::string file = path.string();
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    fail(ErrorCode::io_error, file + ": not a .npy file");
  }
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    uint16_t h16 = 0;
    in.read(reinterpret_cast<char*>(&h16), 2);
    hlen = h16;
  } else {
    in.read(reinterpret_cast<char*>(&hlen), 4);
  }
  std::string header(hlen, '\0');
  if (!in.read(header.data(), hlen)) fail(ErrorCode::io_error, file + ": truncated header");
  std::string descr = header_field(header, "descr", file);
  DType dtype = dtype_of_descr(descr.substr(1, descr.size() - 2), file);
  if (header_field(header, "fortran_order", file) != "False") {
    fail(ErrorCode::unsupported, file + ": Fortran-order arrays are not supported");
  }
  std::string dims = header_field(header, "shape", file);
  Shape shape;
  std::stringstream ss(dims.substr(1, dims.size() - 2));
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
  }
  TensorData t(shape, dtype);
  if (!in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()))) {
    fail(ErrorCode::io_error, file + ": fewer bytes than its shape needs");
  }
  return t;
}

void write_npy(const fs::path& path, TensorData t) {
  t = t.to(tg::Device::cpu());
  if (t.dtype() == DType::bf16) {
    TensorData f(t.shape(), DType::f32);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      f.data<float>()[i] = static_cast<float>(t.element_as_double(i));
    }
    t = f;
  }
  std::string dims;  // "2, 3"; "4," for rank 1; "" for a scalar
  for (size_t i = 0; i < t.shape().size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(t.shape()[i]);
  }
  if (t.rank() == 1) dims += ",";
  std::string header = "{'descr': '" + std::string(npy_descr(t.dtype())) +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorCode::io_error, "cannot write '" + path.string() + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  auto hlen = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&hlen), 2);
  out << header;
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
}

// ---------------------------------------------------------------------------------------------

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // "path" (in input order) or "name=path"
  std::vector<std::string> shapes;  // "name=2,3,224,224"
  bool random = false;
  uint64_t seed = 0;
  std::string device = "";
  std::string precision = "f32";
  int repeat = 0;
  std::string output_dir = ".";
  bool no_write = false;
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

// Fills `data` (name -> value) from the command line's input files.
void collect_inputs(const RunArgs& a, const tg::onnx::ImportResult& probe,
                    std::map<std::string, TensorData>& data) {
  size_t position = 0;
  for (const std::string& spec : a.inputs) {
    size_t eq = spec.find('=');
    std::string name;
    fs::path path;
    if (eq != std::string::npos && !fs::exists(spec)) {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    } else {
      if (position >= probe.inputs.size() + probe.fixed_inputs.size()) {
        fail(ErrorCode::invalid_argument, "more input files than the model has inputs");
      }
      name = position < probe.inputs.size() ? probe.inputs[position].name
                                            : probe.fixed_inputs[position - probe.inputs.size()];
      ++position;
      path = spec;
    }
    data[name] = read_tensor_file(path);
  }
}

Shape parse_dims(const std::string& text) {
  Shape s;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) s.push_back(std::stoll(tok));
  return s;
}

void run_model(const RunArgs& a) {
  tg::onnx::ImportOptions opts;
  for (const std::string& spec : a.shapes) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) fail(ErrorCode::invalid_argument, "--shape takes name=d0,d1,...");
    opts.input_shapes[spec.substr(0, eq)] = parse_dims(spec.substr(eq + 1));
  }
  // First import: learn the inputs (names, declared types).
  std::map<std::string, TensorData> data;
  tg::onnx::ImportOptions probe_opts = opts;
  probe_opts.input_values = [&](const std::string&) -> std::optional<TensorData> {
    return std::nullopt;
  };
  tg::onnx::ImportResult probe;
  try {
    probe = tg::onnx::import(a.model, probe_opts);
  } catch (const tg::Error& e) {
    if (a.inputs.empty() && !a.random) throw;
  }
  collect_inputs(a, probe, data);
  for (const tg::onnx::NamedTensor& in : probe.inputs) {
    if (data.count(in.name)) continue;
    if (!a.random) {
      fail(ErrorCode::not_found, "no value for input '" + in.name + "' (give a file or --random)");
    }
    Shape s = in.tensor.shape();
    for (int64_t& d : s) d = d < 0 ? 1 : d;
    data[in.name] = random_input({s, in.tensor.dtype()}, a.seed + data.size());
  }
  for (const auto& [name, v] : data) opts.input_shapes[name] = v.shape();
  opts.input_values = [&](const std::string& name) -> std::optional<TensorData> {
    auto it = data.find(name);
    return it == data.end() ? std::nullopt : std::optional<TensorData>(it->second);
  };
  tg::onnx::ImportResult m = tg::onnx::import(a.model, opts);
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
  std::vector<TensorData> outs = exe.run(feeds);
  std::cout << "model " << a.model << " (opset " << m.opset << ", " << m.graph.num_nodes()
            << " graph nodes) on " << device.to_string() << ", precision " << a.precision << "\n";
  std::cout << tg::cli::arena_line(exe) << "\n";
  if (!a.no_write) fs::create_directories(a.output_dir);
  for (size_t i = 0; i < outs.size(); ++i) {
    TensorData host = outs[i].to(tg::Device::cpu());
    std::cout << "  " << m.outputs[i].name << ": " << host.type().to_string() << "  "
              << summary(host) << "\n";
    if (!a.no_write) {
      fs::path p = fs::path(a.output_dir) / (file_name_for(m.outputs[i].name) + ".npy");
      write_npy(p, host);
      std::cout << "    written to " << p.string() << "\n";
    }
  }
  if (a.repeat > 0) {
    std::vector<double> ms;
    for (int r = 0; r < a.repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<TensorData> o = exe.run(feeds);
      for (TensorData& t : o) t = t.to(tg::Device::cpu());  // wait for the results
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size())))]; };
    std::cout << "latency over " << a.repeat << " runs: median " << pct(0.5) << " ms, p90 "
              << pct(0.9) << " ms, min " << ms.front() << " ms\n";
  }
}

}  // namespace

namespace tg::cli {

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run an ONNX model on given or random inputs");
  cmd->add_option("model", args->model, "The .onnx file")->required()->check(CLI::ExistingFile);
  cmd->add_option("inputs", args->inputs,
                  "Input values: .pb (TensorProto) or .npy files, in the model's input order, "
                  "or name=file");
  cmd->add_flag("--random", args->random, "Random values for inputs not given (floats in [-1, 1), "
                "integers 0; dynamic dims 1 unless --shape)");
  cmd->add_option("--seed", args->seed, "Seed of the random inputs");
  cmd->add_option("--shape", args->shapes, "Fix an input's shape: name=d0,d1,...");
  cmd->add_option("--device", args->device, "cpu, cuda or cuda:N (default: TG_DEVICE or the GPU)");
  cmd->add_option("--precision", args->precision,
                  "conv/matmul arithmetic on CUDA (CompileOptions::precision): f32, tf32, bf16 or f16")
      ->check(CLI::IsMember({"f32", "tf32", "bf16", "f16"}))
      ->capture_default_str();
  cmd->add_option("--repeat", args->repeat, "Time N more runs and print median and p90 latency")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--output-dir,-o", args->output_dir, "Where the outputs' .npy files go");
  cmd->add_flag("--no-write", args->no_write, "Do not write the outputs");
  cmd->callback([args] { run_model(*args); });  // main() reports a tg::Error
}

}  // namespace tg::cli
