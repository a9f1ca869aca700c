// `tg inspect model.onnx`: imports an ONNX model and prints the imported graph (inputs,
// outputs, one line per node), optionally writing it as a Graphviz DOT file. `tg inspect
// --list-ops` prints the supported ONNX ops and opsets (the table of docs/onnx.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "options.h"
#include "tg/onnx.h"
#include "tg/tg.h"

namespace {

struct InspectArgs {
  std::string model;
  std::string dot;
  bool list_ops = false;
  bool variables = false;
  std::string device = "cpu";
};

void inspect(const InspectArgs& a) {
  if (a.list_ops) {
    std::cout << tg::onnx::supported_ops_markdown();
    if (a.model.empty()) return;
  }
  if (a.model.empty()) {
    throw tg::cli::UsageError("give a model file (tg inspect MODEL.onnx or MODEL.tgx), or --list-ops");
  }
  if (tg::cli::is_saved_executable(a.model)) {  // a saved executable: its header
    if (!a.dot.empty()) {
      throw tg::cli::UsageError(fmt::format("--dot draws an ONNX model's graph; {} is a saved executable "
                                            "(inspect the .onnx it was compiled from)", a.model));
    }
    const auto header = tg::read_executable_header(a.model);  // checked whole before anything is printed
    std::cout << "saved executable " << a.model << "\n";
    for (const auto& [k, v] : header) std::cout << "  " << k << ": " << v << "\n";
    return;
  }
  tg::onnx::ImportResult m =
      tg::onnx::import(a.model, {.initializers_as_variables = a.variables});
  std::cout << "model " << a.model << ": ir_version " << m.ir_version << ", opset " << m.opset;
  if (!m.producer_name.empty()) std::cout << ", producer " << m.producer_name << " " << m.producer_version;
  std::cout << "\ninputs:\n";
  for (const auto& in : m.inputs) std::cout << "  " << in.name << ": " << in.tensor.type().to_string() << "\n";
  std::cout << "outputs:\n";
  for (const auto& out : m.outputs) {
    std::cout << "  " << out.name << ": " << out.tensor.to_string() << "\n";
  }
  if (!m.variables.empty()) std::cout << "variables: " << m.variables.size() << "\n";
  std::cout << "graph (" << tg::cli::count(m.graph.num_nodes(), "node") << "):\n" << m.graph.to_string();
  // The memory plan of the compiled model (dynamic dims taken as 1).
  tg::FeedTypes types;
  for (const auto& in : m.inputs) {
    tg::Shape s = in.tensor.shape();
    for (int64_t& d : s) d = d < 0 ? 1 : d;
    types.emplace_back(in.tensor, tg::TensorType{s, in.tensor.dtype()});
  }
  const tg::Device device = tg::cli::parse_device(a.device, "tg inspect");
  try {
    tg::Executable exe = m.graph.compile(device, types, m.targets());
    std::cout << "compiled for " << device.to_string() << " (dynamic dims as 1): " << tg::cli::arena_line(exe)
              << "\n";
  } catch (const tg::Error& e) {
    std::cout << "arena: not planned (the model does not compile with dynamic dims as 1: " << e.what() << ")\n";
  }
  if (!a.dot.empty()) {
    std::ofstream out(a.dot);
    if (!out) throw tg::Error(tg::ErrorCode::io_error, "[tg inspect] cannot write '" + a.dot + "'");
    out << tg::to_dot(m.graph);
    std::cout << "DOT written to " << a.dot << "\n";
  }
}

}  // namespace

namespace tg::cli {

void add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Print the graph an ONNX model imports to, or a saved executable's (.tgx) header");
  tg::cli::existing_file(cmd->add_option("model", args->model, "The .onnx or .tgx file"));
  cmd->add_option("--dot", args->dot, "Also write the graph as a Graphviz DOT file");
  cmd->add_flag("--list-ops", args->list_ops, "Print the supported ONNX ops and opsets");
  cmd->add_flag("--variables", args->variables, "Import initializers as variables");
  tg::cli::device_name(
      cmd->add_option("--device", args->device, "Device the arena line is planned for: cpu, cuda or cuda:N")
          ->capture_default_str());
  cmd->callback([args] { inspect(*args); });  // main() reports a tg::Error
}

}  // namespace tg::cli
