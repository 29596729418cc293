#pragma once
// SymTensor's symbolic shape pass: runs each operator's shape rule in dependency order,
// so shapes are GiNaC expressions (batch*seq after a flattening Reshape) and small
// integer tensors carry compile-time values (PyTorch's Shape->Gather->Concat->Reshape
// sub-graphs fold). Where a rule is missing or cannot decide, ONNX's inferred shape stays.
#include <set>
#include <string>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

// Marks nodes without semantics as opaque and returns their op types.
// Throws "node 'NAME' (OP): reason" when an output's shape cannot be known.
std::set<std::string> infer_symbolic_shapes(Graph& graph);

}  // namespace symtensor::compiler
