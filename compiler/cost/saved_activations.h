#pragma once
// Which tensors the backward pass keeps, by operator kind, as the frameworks keep them:
// a GEMM/convolution keeps its non-parameter inputs, softmax its output, a normalization
// its input, dropout a 1-byte mask per element. Element-wise ops are taken in fused
// regions (connected element-wise ops whose intermediate results stay inside the region,
// as GELU's Div/Erf/Add/Mul/Mul): a region keeps its external inputs when one of its ops
// needs its input (a non-linearity, a product of two variables), otherwise nothing.
// Korthikanti et al. (2022) count exactly these tensors: 34·s·b·h + 5·a·s²·b bytes per
// GPT layer in 16-bit.
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {

// NumericGraph computes these lists once (saved_tensors(), layer_checkpoints(), op_checkpoints()); use those.

// Every tensor kept for backward, each once.
std::vector<SavedTensor> saved_tensors(const NumericGraph& graph);

// Tensors kept under full recompute. With layers (NumericGraph::node_layers): what each layer
// reads from outside itself (its input, rotary tables), and what the operators outside the
// layers keep without recomputation. Without: the input of every other normalization in
// order (pre-norm transformer layers have two), or the graph inputs.
std::vector<SavedTensor> layer_checkpoints(const NumericGraph& graph);

// Tensors kept under an op-level selective policy (torchtitan's "op" option,
// hardware::SelectiveRecompute::every_other_matmul): layer_checkpoints(), and inside each layer
// the outputs of every other weight GEMM (the 1st, 3rd, ... in order) and of the fused attention
// kernels. `kept_nodes` (by node id) marks the operators whose outputs are kept: not recomputed.
std::vector<SavedTensor> op_checkpoints(const NumericGraph& graph, std::vector<char>& kept_nodes);

// Whether `holder`, inside a layer, reads `s` from outside that layer (a layer input).
bool read_from_outside_its_layer(const NumericGraph& graph, const SavedTensor& s, NodeId holder);

// The operator that keeps `s` (its saver, else the tensor's first consumer; kNone if neither).
NodeId saved_tensor_holder(const Graph& graph, const SavedTensor& s);

}  // namespace symtensor::compiler
