#pragma once
// Which tensors of an imported graph are trainable parameters.
//
// - A floating-point initializer with more than one element is a parameter, unless every
//   use is a BatchNormalization running statistic (inputs 3 and 4) or the model lists it
//   in the metadata property `symtensor.buffers` (comma-separated; non-trainable buffers
//   such as rotary tables or masks).
// - A floating-point Constant with more than one element is a parameter when a node uses
//   it directly in a weight slot: any input of MatMul/Gemm/Einsum, Conv/ConvTranspose W
//   and B, Gather's data, a normalization's scale and bias.
// - Uses are followed through Identity, Cast and Transpose (de-duplicated initializers,
//   tied weights).
// - A graph input listed in the metadata property `symtensor.parameters` is a parameter
//   (the convention for weight-free models).
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

inline constexpr const char* kBuffersMetadataKey = "symtensor.buffers";

// Sets Tensor::is_parameter; throws when metadata names a tensor the graph lacks.
void classify_parameters(Graph& graph);

// One line per parameter that feeds the same slot of several operators of one type (after
// classify_parameters): a weight shared on purpose, or identical layers whose equal
// initializers the exporter merged (PyTorch does for deep copies), which then count once in
// the parameters, gradients and optimizer state. Tied embeddings (a Gather and a MatMul)
// are not listed.
std::vector<std::string> shared_weight_notes(const Graph& graph);

}  // namespace symtensor::compiler
