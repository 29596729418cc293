#pragma once
// Which part of a transformer each operator belongs to, for the reports that name a model's
// parts instead of ONNX op types (memory "by part"): read from the structure the graph's data
// flow gives (transformer_structure.h), never from node names.
// - norms: the normalization regions (the layers' and the final one);
// - embedding: what runs before the first layer (token and position embeddings, rotary tables);
// - attention: in each layer, from its first norm to the attention's output projection (its
//   first row-parallel GEMM), per-head and latent norms included;
// - MLP / experts: the rest of the layer (router, dispatch, experts, shared experts);
// - head and loss: from the vocabulary head on;
// - other: residual adds, and a layer without an attention output projection.
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler {

enum class LayerPart { embedding, attention, mlp, norms, head_and_loss, other };

// "embedding", "attention", "MLP / experts", "norms", "head and loss", "other".
std::string_view to_string(LayerPart part);

// Per node id; empty when the graph has no transformer layers (the reports then keep op types).
std::vector<LayerPart> layer_parts(const Graph& graph, const TransformerStructure& structure);

}  // namespace symtensor::compiler
