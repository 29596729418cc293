#include "compiler/fusion/fusion_pass.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/fusion/attention_pattern.h"
#include "compiler/fusion/graph_splice.h"
#include "compiler/fusion/moe_pattern.h"

namespace symtensor::compiler {

namespace {

struct Pattern {
  const char* name;
  bool (*enabled)(const FusionOptions&);
  PatternResult (*match)(const Graph&);
};

// In the order they run.
const Pattern kPatterns[] = {
    {"attention", [](const FusionOptions& o) { return o.attention == AttentionMode::fused; }, match_attention},
    {"moe", [](const FusionOptions& o) { return o.moe; }, match_moe},
};

}  // namespace

std::string_view to_string(AttentionMode mode) { return mode == AttentionMode::fused ? "fused" : "materialized"; }

AttentionMode parse_attention_mode(std::string_view text) {
  if (text == "fused") return AttentionMode::fused;
  if (text == "materialized") return AttentionMode::materialized;
  throw std::runtime_error("--attention: '" + std::string(text) + "' is not fused or materialized");
}

FusionSummary run_fusion_pass(Graph& graph, const FusionOptions& options) {
  FusionSummary summary;
  for (const Pattern& p : kPatterns) {
    if (!p.enabled(options)) continue;
    PatternResult found = p.match(graph);
    if (found.matches.empty()) continue;
    summary.entries.push_back({p.name, static_cast<int>(found.matches.size()), found.detail});
    graph = splice_matches(graph, found.matches);
    graph.metadata[std::string(kFusedMetadataPrefix) + p.name] =
        (found.count.empty() ? std::to_string(found.matches.size()) : found.count) + "; " + found.detail;
  }
  // Constant nodes become constants without a producer (splice_matches), where no match did;
  // nothing else is removed there (a model no pattern matched keeps its unread nodes).
  if (std::any_of(graph.nodes().begin(), graph.nodes().end(), is_constant_node))
    graph = splice_matches(graph, {}, /*remove_unread=*/false);
  return summary;
}

}  // namespace symtensor::compiler
