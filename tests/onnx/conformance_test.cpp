// The ONNX backend node tests (../shared/onnx/node-tests, see its README) through
// tg::onnx::import on the CPU. Every case imports model.onnx, feeds each
// test_data_set_*/input_*.pb and compares with output_*.pb (dtype, shape, values: rtol 1e-3,
// atol 1e-7 for floats, exact otherwise). tests/onnx/expectations.txt lists the cases that do
// not pass yet, grouped by reason; the test fails when a listed case passes or an unlisted one
// fails, and prints the pass count.
//
// TG_ONNX_CASES=<substring> runs only the matching cases (for debugging; the expectations check
// is then limited to them). TG_ONNX_WRITE_EXPECTATIONS=<file> writes the expectations file that
// would make the run pass, grouped by the reasons found (to refresh tests/onnx/expectations.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <cctype>

#include "tg/onnx.h"
#include "test_paths.h"

namespace tg::onnx {
namespace {

namespace fs = std::filesystem;

fs::path node_tests_dir() { return fs::path(TG_SOURCE_DIR) / ".." / "shared" / "onnx" / "node-tests"; }
fs::path expectations_file() { return fs::path(TG_SOURCE_DIR) / "tests" / "onnx" / "expectations.txt"; }

// "" when `actual` matches `expected`, else what differs.
std::string compare(const TensorData& actual, const TensorData& expected) {
  if (actual.dtype() != expected.dtype()) {
    return "dtype " + std::string(dtype_name(actual.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  }
  if (actual.shape() != expected.shape()) {
    return "shape " + shape_to_string(actual.shape()) + ", expected " +
           shape_to_string(expected.shape());
  }
  bool exact = !is_floating(expected.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    double a = actual.element_as_double(i), e = expected.element_as_double(i);
    bool ok = exact ? a == e
              : std::isnan(e) ? std::isnan(a)
              : std::isinf(e) ? a == e
                              : std::fabs(a - e) <= 1e-7 + 1e-3 * std::fabs(e);
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os << bad << " of " << expected.num_elements() << " values differ (first at " << first << ": "
     << actual.element_as_double(first) << ", expected " << expected.element_as_double(first)
     << ")";
  return os.str();
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(p);
  }
  return out;
}

// Seconds spent in the save/load round trips (compile, run, save, load, run), for the summary line.
double g_round_trip_secs = 0;

// Runs one case; "" when it passes, else the reason.
std::string run_case(const fs::path& dir, Device device) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test data";
  ImportResult model;
  bool imported = false;
  for (const fs::path& set : sets) {
    std::map<std::string, TensorData> inputs;
    std::vector<std::pair<std::string, TensorData>> ordered;
    std::string read_error;
    for (const fs::path& p : numbered(set, "input_")) {
      try {
        std::string name;
        TensorData v = read_tensor_proto(p, &name);
        inputs[name] = v;
        ordered.emplace_back(name, v);
      } catch (const Error& e) {
        if (read_error.empty()) read_error = e.what();
      }
    }
    try {
      if (!imported) {
        ImportOptions opts;
        for (const auto& [name, v] : inputs) opts.input_shapes[name] = v.shape();
        opts.input_values = [&](const std::string& name) -> std::optional<TensorData> {
          auto it = inputs.find(name);
          if (it == inputs.end()) return std::nullopt;
          return it->second;
        };
        model = import(dir / "model.onnx", opts);
        imported = true;
      }
      if (!read_error.empty()) return read_error;
      Feeds feeds;
      for (const NamedTensor& in : model.inputs) {
        auto it = inputs.find(in.name);
        if (it == inputs.end()) return "no data for input '" + in.name + "'";
        feeds.emplace_back(in.tensor, it->second);
      }
      std::vector<TensorData> outs = model.graph.run(feeds, model.targets(), {}, device);
      // On a GPU the third run replays the captured CUDA graph: check that one too.
      std::vector<TensorData> replayed;
      if (!device.is_cpu()) {
        for (int again = 0; again < 2; ++again) replayed = model.graph.run(feeds, model.targets(), {}, device);
      }
      std::vector<fs::path> expected = numbered(set, "output_");
      if (expected.size() != outs.size()) {
        return "produced " + std::to_string(outs.size()) + " outputs, expected " +
               std::to_string(expected.size());
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const TensorData want = read_tensor_proto(expected[i]);
        std::string diff = compare(outs[i], want);
        if (!diff.empty()) return "wrong values: output " + std::to_string(i) + ": " + diff;
        if (!replayed.empty()) diff = compare(replayed[i], want);
        if (!diff.empty()) return "wrong values on the third run: output " + std::to_string(i) + ": " + diff;
      }
      // Saved executables (docs/design/0008): compiled, run, saved, loaded in this process and run
      // again: the loaded one runs without the pass pipeline and gives the same bits.
      const auto round_trip_start = std::chrono::steady_clock::now();
      struct Timer {
        std::chrono::steady_clock::time_point t0;
        ~Timer() { g_round_trip_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
      } timer{round_trip_start};
      FeedTypes types;
      std::vector<TensorData> in;
      for (const auto& [t, v] : feeds) types.emplace_back(t, v.type()), in.push_back(v);
      Executable exe = model.graph.compile(device, types, model.targets());
      const std::vector<TensorData> direct = exe.run(in);
      const int64_t compiles = runtime_stats().compiles;
      Executable loaded = Executable::load_from_bytes(exe.save_to_bytes(), device);
      if (runtime_stats().compiles != compiles) return "save/load: loading ran the pass pipeline";
      const std::vector<TensorData> again = loaded.run(in);
      for (size_t i = 0; i < again.size(); ++i) {
        std::string diff = compare(again[i], read_tensor_proto(expected[i]));
        if (!diff.empty()) return "wrong values after save/load: output " + std::to_string(i) + ": " + diff;
        const TensorData a = again[i].to(Device::cpu()), b = direct[i].to(Device::cpu());
        if (a.type() != b.type() || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) {
          return "save/load: output " + std::to_string(i) + " differs in its bits from the saved executable's";
        }
      }
    } catch (const Error& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("unexpected exception: ") + e.what();
    }
  }
  return "";
}

// The case compiled once for any input size (issue 17, docs/design/0009): imported with every
// input dim a symbol (ImportOptions::input_shapes of symbols "<input>.<axis>", as an exporter's
// dim_params), compiled once with disable_type_inference, each data set run
// through that one executable and compared as run_case does. "" when it passes; "static: <why>"
// when importing or compiling needs static shapes (a shape computed from an input's dims, an op
// whose attributes need sizes: such models run with fixed shapes); else the failure.
std::string run_case_compiled_once(const fs::path& dir, Device device) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  std::vector<std::map<std::string, TensorData>> data(sets.size());
  for (size_t k = 0; k < sets.size(); ++k) {
    for (const fs::path& p : numbered(sets[k], "input_")) {
      std::string name;
      TensorData v = read_tensor_proto(p, &name);
      data[k][name] = v;
    }
  }
  if (data.empty()) return "no test data";
  ImportOptions opts;
  for (const auto& [name, v] : data[0]) {
    Shape open;
    std::string base;
    for (char ch : name) base += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ? ch : '_';
    for (size_t k = 0; k < v.shape().size(); ++k) open.push_back(symbolic_dim(fmt::format("{}.{}", base.substr(0, 40), k)));
    opts.input_shapes[name] = open;
  }
  ImportResult model;
  Executable exe;
  try {
    model = import(dir / "model.onnx", opts);
    FeedTypes types;
    for (const NamedTensor& in : model.inputs) {
      auto it = data[0].find(in.name);
      if (it == data[0].end()) return "no data for input '" + in.name + "'";
      types.emplace_back(in.tensor, in.tensor.type());
    }
    exe = model.graph.compile(device, types, model.targets(), {}, {.disable_type_inference = true});
  } catch (const Error& e) {
    return std::string("static: ") + e.what();
  }
  try {
    for (size_t k = 0; k < sets.size(); ++k) {
      std::vector<TensorData> in;
      for (const NamedTensor& t : model.inputs) in.push_back(data[k].at(t.name));
      const std::vector<TensorData> outs = exe.run(in);
      const std::vector<fs::path> expected = numbered(sets[k], "output_");
      if (expected.size() != outs.size()) return "produced " + std::to_string(outs.size()) + " outputs";
      for (size_t i = 0; i < outs.size(); ++i) {
        const std::string diff = compare(outs[i], read_tensor_proto(expected[i]));
        if (!diff.empty()) return "wrong values: output " + std::to_string(i) + ": " + diff;
      }
    }
  } catch (const Error& e) {
    // Broadcasting unified a dim of size 1 in one input with the other's (JAX's shape
    // polymorphism refuses the same): refused by the binding, before any kernel, naming both.
    if (e.code() == ErrorCode::shape_mismatch && std::string_view(e.what()).find(", but symbol ") != std::string_view::npos) {
      return std::string("static: broadcasts a size-1 dim against a varying one: ") + e.what();
    }
    return std::string("run: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("unexpected exception: ") + e.what();
  }
  return "";
}

// The reason group a failure message belongs to (for TG_ONNX_WRITE_EXPECTATIONS).
std::string classify(const std::string& msg) {
  auto after = [&](const std::string& key) {
    size_t p = msg.find(key);
    return p == std::string::npos ? std::string() : msg.substr(p);
  };
  if (msg.find("unknown op") != std::string::npos) {
    size_t open = msg.find(" ("), comma = msg.find(", opset");
    if (open != std::string::npos && comma != std::string::npos) {
      return "op not supported: " + msg.substr(open + 2, comma - open - 2);
    }
  }
  std::string dt = after("data type ");
  if (!dt.empty() && dt.find(" is not supported") != std::string::npos) {
    return "dtype not supported: " + dt.substr(10, dt.find(" is not supported") - 10);
  }
  if (msg.find("sequence") != std::string::npos || msg.find("optional") != std::string::npos) {
    return "sequence/optional types";
  }
  if (msg.find("unsupported opset") != std::string::npos) return "opset not supported";
  if (msg.find("wrong values") == 0) return "wrong values (numerical differences)";
  if (msg.find("[onnx] node") != std::string::npos) {
    size_t open = msg.find(" ("), comma = msg.find(", opset");
    size_t colon = msg.find("): ", comma);
    if (open != std::string::npos && comma != std::string::npos && colon != std::string::npos) {
      std::string why = msg.substr(colon + 3);
      why = why.substr(0, why.find(" ("));
      return "not supported by the converter: " + msg.substr(open + 2, comma - open - 2) + ", " + why;
    }
  }
  return "other";
}

struct Expectations {
  std::map<std::string, std::string> reason_of;  // case -> reason group
};

void load_expectations_file(const fs::path& path, Expectations& ex) {
  std::ifstream in(path);
  std::string line, group = "(no group)";
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("## ", 0) == 0) {
      group = line.substr(3);
      continue;
    }
    if (line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of(" \t"));
    ex.reason_of[name] = group;
  }
}

// expectations.txt, plus expectations_cuda.txt (what the CUDA backend adds) for a GPU run.
Expectations load_expectations(Device device) {
  Expectations ex;
  load_expectations_file(expectations_file(), ex);
  if (device.is_cuda()) load_expectations_file(expectations_file().parent_path() / "expectations_cuda.txt", ex);
  return ex;
}

void run_node_tests(Device device) {
  fs::path root = node_tests_dir();
  if (!fs::is_directory(root)) {
    GTEST_SKIP() << "ONNX node tests not found at " << root.string()
                 << " (see ../shared/onnx/README.md)";
  }
  if (!available()) GTEST_SKIP() << "this build has no ONNX importer";
  const char* filter = std::getenv("TG_ONNX_CASES");
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root)) {
    std::string name = e.path().filename().string();
    if (e.is_directory() && (!filter || name.find(filter) != std::string::npos)) {
      cases.push_back(e.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  Expectations ex = load_expectations(device);
  auto start = std::chrono::steady_clock::now();
  g_round_trip_secs = 0;
  int passed = 0;
  std::vector<std::string> problems;
  std::map<std::string, std::vector<std::string>> groups;  // reason -> cases (for the writer)
  std::map<std::string, int> group_counts;
  for (const fs::path& dir : cases) {
    std::string name = dir.filename().string();
    std::string why = run_case(dir, device);
    bool listed = ex.reason_of.count(name) > 0;
    if (why.empty()) {
      ++passed;
      if (listed) problems.push_back(name + ": passes but is listed in expectations.txt");
      continue;
    }
    std::string group = listed ? ex.reason_of[name] : classify(why);
    groups[group].push_back(name);
    ++group_counts[group];
    if (!listed) problems.push_back(name + ": fails and is not listed: " + why);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[onnx] " << device.to_string() << ": " << passed << " of " << cases.size() << " node tests pass ("
            << cases.size() - passed << " expected failures) in " << secs << " s, of which " << g_round_trip_secs
            << " s in the save/load round trips\n";
  std::vector<std::pair<int, std::string>> top;
  for (const auto& [g, n] : group_counts) top.emplace_back(n, g);
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 12; ++i) {
    std::cout << "[onnx]   " << top[i].first << "  " << top[i].second << "\n";
  }
  ::testing::Test::RecordProperty(device.is_cpu() ? "onnx_node_tests_passed" : "onnx_node_tests_passed_cuda", passed);
  if (const char* out = std::getenv("TG_ONNX_WRITE_EXPECTATIONS")) {
    std::ofstream f(out);
    f << "# ONNX node tests (../shared/onnx/node-tests) that do not pass yet, grouped by reason.\n"
         "# tests/onnx/conformance_test.cpp fails when a listed case passes or an unlisted one\n"
         "# fails. Regenerate with TG_ONNX_WRITE_EXPECTATIONS=<file> (then review the groups).\n";
    for (const auto& [g, names] : groups) {
      f << "\n## " << g << "\n";
      for (const std::string& n : names) f << n << "\n";
    }
  }
  for (const std::string& p : problems) ADD_FAILURE() << device.to_string() << ": " << p;
}

TEST(OnnxConformance, NodeTests) { run_node_tests(Device::cpu()); }

// Every case that passes with its inputs' shapes fixed (not in expectations.txt), run again
// compiled once for any input size (run_case_compiled_once). Wrong values and run failures fail
// the test; cases that need static shapes to import or compile are counted and printed.
TEST(OnnxConformance, NodeTestsCompiledOnce) {
  const fs::path root = node_tests_dir();
  if (!fs::is_directory(root)) GTEST_SKIP() << "ONNX node tests not found at " << root.string();
  if (!available()) GTEST_SKIP() << "this build has no ONNX importer";
  const char* filter = std::getenv("TG_ONNX_CASES");
  const Expectations ex = load_expectations(Device::cpu());
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && !ex.reason_of.count(name) && (!filter || name.find(filter) != std::string::npos)) {
      cases.push_back(e.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  const auto start = std::chrono::steady_clock::now();
  int passed = 0, needs_static = 0;
  std::map<std::string, int> static_reasons;
  for (const fs::path& dir : cases) {
    const std::string why = run_case_compiled_once(dir, Device::cpu());
    if (why.empty()) {
      ++passed;
    } else if (why.rfind("static: ", 0) == 0) {
      ++needs_static;
      const std::string reason = why.substr(8);
      ++static_reasons[reason.rfind("broadcasts", 0) == 0 ? reason.substr(0, reason.find(':')) : classify(reason)];
    } else {
      ADD_FAILURE() << dir.filename().string() << " compiled once: " << why;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[onnx] compiled once: " << passed << " of " << cases.size() << " passing node tests pass with every "
            << "input dim varying, " << needs_static << " need static shapes, in " << secs << " s\n";
  std::vector<std::pair<int, std::string>> top;
  for (const auto& [g, n] : static_reasons) top.emplace_back(n, g);
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 8; ++i) std::cout << "[onnx]   " << top[i].first << "  " << top[i].second << "\n";
  ::testing::Test::RecordProperty("onnx_node_tests_compiled_once", passed);
}

// The same cases on the GPU, against the same expected outputs; expectations_cuda.txt lists what
// the CUDA backend does not run yet (on top of expectations.txt).
TEST(OnnxConformance, NodeTestsOnCuda) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here";
  run_node_tests(Device::cuda(0));
}

}  // namespace
}  // namespace tg::onnx
