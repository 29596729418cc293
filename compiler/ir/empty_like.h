#pragma once
// A graph to be rebuilt from another (a canonicalization, a fusion splice): its header
// without tensors or nodes.
#include "compiler/ir/graph.h"

namespace symtensor::compiler {

// `graph`'s name, source, metadata, symbols and batch and sequence dims; no tensors, nodes,
// inputs, outputs or fusion record.
Graph empty_like(const Graph& graph);

}  // namespace symtensor::compiler
