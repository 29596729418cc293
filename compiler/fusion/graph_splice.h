#pragma once
// Replaces matched subgraphs by fused nodes: the one graph edit the fusion patterns share.
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

struct FusionMatch {
  std::vector<NodeId> members;  // the nodes the fused node replaces
  Node fused;                   // its inputs and outputs are tensor ids of the graph matched
};

// What a pattern found: its matches and one line saying what they are.
struct PatternResult {
  std::vector<FusionMatch> matches;
  std::string detail;
  std::string count;  // how the summary counts them ("32 layers"); empty: the number of matches
};

// A name for a fused node of type `op` in `member`'s scope ("/h.0/attn/" + op), with "_N"
// appended until it is in neither `taken` (which gets it) nor the graph's tensor names.
std::string fused_node_name(const Graph& graph, const Node& member, const std::string& op, std::set<std::string>& taken);

// The graph with each match's members replaced by its fused node (placed where its last
// member was, so the order stays topological), then, with `remove_unread`, every node whose
// outputs nobody reads (a causal mask the kernel no longer reads) and every parameter nobody
// reads removed, and every Constant node (its output stays, a constant without a producer, as
// an initializer is); tensors renumbered. Records Graph::unfused (the first graph spliced) and
// Graph::fused_from. Matches must not overlap.
Graph splice_matches(const Graph& graph, const std::vector<FusionMatch>& matches, bool remove_unread = true);

// An ONNX Constant node (one output, no inputs).
bool is_constant_node(const Node& node);

}  // namespace symtensor::compiler
