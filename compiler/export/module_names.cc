#include "compiler/export/module_names.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace symtensor::compiler {
namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

std::optional<std::string> module_path(std::string_view node_name) {
  if (node_name.size() < 2 || node_name.front() != '/') return std::nullopt;
  std::vector<std::string> parts = split(node_name.substr(1), '/');
  if (parts.size() < 2) return std::nullopt;
  parts.pop_back();  // the op's own name
  std::string path;
  for (const auto& p : parts) {
    if (p.empty()) return std::nullopt;
    path += (path.empty() ? "" : ".") + p;
  }
  return path;
}

std::optional<std::string> module_of_node(const Graph& graph, NodeId node, bool scope_fallback) {
  const auto parameter_module = [](const std::string& name) -> std::optional<std::string> {
    for (std::string_view suffix : {".weight", ".bias", ".scale"})
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return name.substr(0, name.size() - suffix.size());
    return std::nullopt;
  };
  for (TensorId t : graph.node(node).inputs) {
    if (t == kNone) continue;
    const Tensor* tensor = &graph.tensor(t);
    if (!tensor->is_parameter && tensor->producer != kNone) {
      const Node& p = graph.node(tensor->producer);
      if ((p.op_type == "Transpose" || p.op_type == "Cast") && !p.inputs.empty() && p.inputs[0] != kNone)
        tensor = &graph.tensor(p.inputs[0]);
    }
    if (tensor->is_parameter)
      if (auto m = parameter_module(tensor->name)) return m;
  }
  return scope_fallback ? module_path(graph.node(node).name) : std::nullopt;
}

std::optional<std::string> layer_module(std::string_view path) {
  const std::vector<std::string> parts = split(path, '.');
  std::string prefix;
  for (const auto& p : parts) {
    prefix += (prefix.empty() ? "" : ".") + p;
    if (all_digits(p)) return prefix;
  }
  return std::nullopt;
}

}  // namespace symtensor::compiler
