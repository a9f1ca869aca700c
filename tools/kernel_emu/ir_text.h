// Reading a printed executable (Executable::to_string()) for the kernel_emu tools: node output
// types and attribute fields of a line. Header-only; included after the backend source the tool
// compiles into itself.
#pragma once
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "core/error_util.h"
#include "tg/tg.h"

namespace tg_emu_ir {

using namespace tg;

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t p; (p = s.find(sep, at)) != std::string::npos; at = p + sep.size()) out.push_back(s.substr(at, p - at));
  out.push_back(s.substr(at));
  return out;
}

std::vector<int64_t> numbers(const std::string& s) {
  std::vector<int64_t> out;
  for (const std::string& t : split(s, ",")) {
    if (!t.empty()) out.push_back(std::stoll(t));
  }
  return out;
}

/// "f32[1,1,1,64]" -> type.
TensorType parse_type(const std::string& t) {
  const size_t b = t.find('[');
  return TensorType{Shape(numbers(t.substr(b + 1, t.rfind(']') - b - 1))), dtype_from_name(t.substr(0, b))};
}

/// Output types of every printed node: the text after the last " : " (before a "  # name").
std::map<std::string, std::vector<TensorType>> node_types(const std::vector<std::string>& lines) {
  std::map<std::string, std::vector<TensorType>> out;
  for (std::string l : lines) {
    if (l.empty() || l[0] != '%') continue;
    if (size_t c = l.find("  # "); c != std::string::npos) l.resize(c);
    const size_t colon = l.rfind(" : ");
    if (colon == std::string::npos) continue;
    std::vector<TensorType> types;
    for (std::string t : split(l.substr(colon + 3), "], ")) types.push_back(parse_type(t.back() == ']' ? t : t + "]"));
    out[l.substr(1, l.find(' ') - 1)] = types;
  }
  return out;
}

std::string field(const std::string& line, const std::string& name, char open, char close) {
  const size_t at = line.find(name + "=" + open);
  if (at == std::string::npos) fail(ErrorCode::invalid_argument, "kernel_emu", "no {} in {}", name, line);
  const size_t b = at + name.size() + 2;
  return line.substr(b, line.find(close, b) - b);
}

/// The FusedAttrs printed on a fused node's line (shape, steps, outputs; reduce_axes and
/// keep_dims when printed).
inline ir::FusedAttrs fused_attrs(const std::string& l) {
  ir::FusedAttrs attrs;
  attrs.shape = Shape(numbers(field(l, "shape", '[', ']')));
  for (int64_t o : numbers(field(l, "outputs", '[', ']'))) attrs.outputs.push_back(static_cast<int>(o));
  if (l.find("reduce_axes=[") != std::string::npos) attrs.reduce_axes = numbers(field(l, "reduce_axes", '[', ']'));
  attrs.keep_dims = l.find("keep_dims=true") != std::string::npos;
  static const std::regex step(R"((\w+)\(([\d,]*)\):(\w+))");
  for (const std::string& s : split(field(l, "steps", '{', '}'), "; ")) {
    if (s.empty()) continue;  // steps={}: an identity program (a plain sum)
    std::smatch m;
    ir::FusedStep st;
    if (!std::regex_match(s, m, step) || !ir::op_kind_from_name(m[1].str(), &st.kind)) {
      fail(ErrorCode::invalid_argument, "kernel_emu", "step '{}'", s);
    }
    for (int64_t v : numbers(m[2].str())) st.args.push_back(static_cast<int>(v));
    st.dtype = dtype_from_name(m[3].str());
    attrs.steps.push_back(st);
  }
  return attrs;
}

/// The input types of the node on line `l` (its operands "%3, %5:1" looked up in `types`).
inline std::vector<TensorType> input_types(const std::string& l, const std::string& op,
                                           const std::map<std::string, std::vector<TensorType>>& types) {
  const size_t open = l.find(op + "(") + op.size() + 1;
  std::vector<TensorType> out;
  for (const std::string& ref : split(l.substr(open, l.find(')', open) - open), ", ")) {
    const std::vector<std::string> parts = split(ref.substr(1), ":");
    out.push_back(types.at(parts[0]).at(parts.size() > 1 ? std::stoul(parts[1]) : 0));
  }
  return out;
}

/// main() of a program emulator (tg_fused_reduce_emu, tg_fused_rows_emu): `tool IR_FILE OUT_DIR
/// NODE_ID...` writes the kernel of each named node of a printed executable through
/// `write_node(lines, id, out_dir, name)`; `tool --selftest OUT_DIR` runs `selftest(out_dir)`.
/// Returns the process status: 0, 1 (an error, printed) or 2 (usage).
template <class WriteNode, class Selftest>
int program_main(int argc, char** argv, const char* tool, WriteNode write_node, Selftest selftest) {
  const bool self = argc == 3 && std::string(argv[1]) == "--selftest";
  if (!self && argc < 4) {
    std::cerr << "usage: " << tool << " IR_FILE OUT_DIR NODE_ID...\n       " << tool << " --selftest OUT_DIR\n";
    return 2;
  }
  try {
    if (self) {
      selftest(argv[2]);
      return 0;
    }
    std::ifstream file(argv[1]);
    if (!file) fail(ErrorCode::io_error, tool, "cannot read {}", argv[1]);
    std::vector<std::string> lines;
    for (std::string l; std::getline(file, l);) lines.push_back(l);
    for (int a = 3; a < argc; ++a) write_node(lines, argv[a], argv[2], argv[a]);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tg_emu_ir
