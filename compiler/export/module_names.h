#pragma once
// PyTorch module names recovered from ONNX node names as torch.onnx writes them: the scope
// path of the module that ran the node, "/model/layers.0/self_attn/q_proj/MatMul" ->
// "model.layers.0.self_attn.q_proj".
#include <optional>
#include <string>
#include <string_view>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

// nullopt when the name carries no module scope (no leading '/' or no scope before the op).
std::optional<std::string> module_path(std::string_view node_name);
// The module that owns a node: from the name of the parameter it reads (directly or through
// a Transpose/Cast of it), "model.layers.0.self_attn.q_proj.weight" -> "...q_proj", else
// (with `scope_fallback`) module_path of the node's name.
std::optional<std::string> module_of_node(const Graph& graph, NodeId node, bool scope_fallback);
// The enclosing repeated block of a module path: up to its first numeric component
// ("model.layers.0.self_attn.q_proj" -> "model.layers.0"); nullopt without one.
std::optional<std::string> layer_module(std::string_view path);

}  // namespace symtensor::compiler
