#pragma once
// What serving needs to know of a decoder, read from the imported graph: the architecture
// (layers, hidden, heads, KV heads, head dim; compiler/export/model_architecture.h) and the
// parameters (compiler/analysis/model_stats.h). Nothing is taken from node names.
#include <string>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

struct ServingModel {
  std::string name;
  int layers = 0;
  long long hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0, ffn_hidden = 0;
  // Multi-head latent attention caches one latent of kv_latent elements per layer and token,
  // shared by every head (0: ordinary K and V heads).
  long long kv_latent = 0;
  double parameters = 0;            // every parameter
  double active_parameters = 0;     // those one token runs through (MoE: top_k of the routed experts)
  double embedding_parameters = 0;  // the input embedding table (a lookup, not a GEMM) unless tied to the head
  long long experts = 0, top_k = 0;

  // Parameters a token multiplies through (GEMMs): the active ones but the embedding lookup.
  double gemm_parameters() const { return active_parameters - embedding_parameters; }
  double routed_expert_parameters() const;  // the experts' total (0 without experts)
  // The embedding table and the output head (one table when tied): they stay in 16 bits under
  // FP8 and FP4 weights (ModelOpt's FP8/NVFP4 checkpoints list lm_head in exclude_modules; the
  // embedding is a lookup table, not a Linear layer).
  double vocabulary_parameters() const { return embedding_parameters + static_cast<double>(vocab) * hidden; }
};

// Throws a one-line error naming what the graph lacks when it is not a decoder with attention.
ServingModel read_serving_model(Graph& graph, const std::string& name);

}  // namespace symtensor::compiler
