#pragma once
// Model FLOPs as torchtitan and PaLM (Chowdhery et al. 2022, appendix B) count them for MFU:
// 6·N + 12·L·h·s per token, N the parameters a token passes through, L the transformer
// layers, h the hidden size, s the sequence length, attention counted whole (no causal
// halving). The project's own MFU counts every operator as its kernel computes it
// (compiler/analysis/model_stats.h); published MFUs use this convention.
//
// N leaves out tables that are only looked up (Gathers: token and position embeddings, as
// torchtitan subtracts nn.Embedding parameters); a table tied to the LM head counts, as in
// PaLM. Of a mixture of experts' expert weights N counts top_k / E (torchtitan's active
// parameters) when the fused MoE routing states its top_k, else every expert.
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

inline constexpr const char* kExactMfuLabel = "MFU (exact count)";

struct PalmFlops {
  double per_token = 0;      // 6·N + 12·L·h·s; 0 where the convention does not apply
  double parameters = 0;     // N
  int layers = 0;            // L
  double hidden = 0;         // h
  double sequence = 0;       // s
  bool all_experts = false;  // a mixture of experts whose top_k is unknown: N holds every expert
  std::string not_applicable;  // why, when per_token is 0

  bool applies() const { return per_token > 0; }
};

// `spaces`: the graph's iteration spaces by node id (NumericGraph::spaces()).
PalmFlops palm_flops(const Graph& graph, const std::vector<IterationSpace>& spaces);
PalmFlops palm_flops(Graph& graph);

// A plan's MFU at `samples_per_s`: per-token FLOPs x tokens/s (samples/s x s) over the
// cluster's devices x the dense peak of the plan's precision; nullopt where the convention
// does not apply. Inference (`train` false) counts the forward's third (2N + 4Lhs).
std::optional<double> palm_mfu(const PalmFlops& flops, bool train, hardware::Precision precision,
                               const hardware::Cluster& cluster, double samples_per_s);

// "MFU (6N+12Lhs, PaLM/torchtitan)", saying so when N holds every expert.
std::string palm_mfu_label(const PalmFlops& flops);

}  // namespace symtensor::compiler
