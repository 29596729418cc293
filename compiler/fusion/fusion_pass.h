#pragma once
// The fusion pass, between import and cost: subgraphs as exporters write them become the
// fused operators training stacks run (FlashAttention-style attention, MoE token
// dispatch and combine). One file per
// pattern; fusion_pass.cc lists them in the order they run.
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

enum class AttentionMode { fused, materialized };
std::string_view to_string(AttentionMode mode);
AttentionMode parse_attention_mode(std::string_view text);  // throws "--attention: ..."

struct FusionOptions {
  AttentionMode attention = AttentionMode::fused;
  bool moe = true;  // routing einsums as MoeDispatch / MoeCombine
};

struct FusionSummary {
  struct Entry {
    std::string pattern;   // "attention"
    int count = 0;         // subgraphs replaced (fused nodes made)
    std::string detail;    // "causal, grouped-query; e.g. /h.0/attn/FusedAttention"
  };
  std::vector<Entry> entries;  // patterns that matched, in pass order
};

// Runs every enabled pattern on `graph` in order. Also records the summary in the graph's
// metadata (kFusedMetadataPrefix + pattern = "count; detail", the count as the pattern
// words it: "32" or "32 layers") for `inspect`.
FusionSummary run_fusion_pass(Graph& graph, const FusionOptions& options);

// kFusedMetadataPrefix: compiler/ir/graph.h (the analysis floor reads it too).

}  // namespace symtensor::compiler
