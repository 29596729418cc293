#include "compiler/analysis/layer_parts.h"

#include <algorithm>
#include <limits>

namespace symtensor::compiler {

std::string_view to_string(LayerPart part) {
  switch (part) {
    case LayerPart::embedding: return "embedding";
    case LayerPart::attention: return "attention";
    case LayerPart::mlp: return "MLP / experts";
    case LayerPart::norms: return "norms";
    case LayerPart::head_and_loss: return "head and loss";
    case LayerPart::other: break;
  }
  return "other";
}

std::vector<LayerPart> layer_parts(const Graph& graph, const TransformerStructure& s) {
  if (s.layers() == 0) return {};
  const std::size_t n = graph.nodes().size();
  const std::vector<NodeId> order = graph.topological_order();
  std::vector<int> pos(n, 0);
  for (std::size_t k = 0; k < order.size(); ++k) pos[order[k]] = static_cast<int>(k);
  std::vector<int> anchors;  // the layers' first positions, ascending
  for (NodeId a : s.layer_anchors) anchors.push_back(pos[a]);
  std::sort(anchors.begin(), anchors.end());
  constexpr int kNever = std::numeric_limits<int>::max();
  int head = kNever;
  for (NodeId h : s.vocab_heads) head = std::min(head, pos[h]);
  // Per layer, the position of its attention's output projection: its first row GEMM.
  std::vector<int> attention_end(anchors.size(), -1);
  for (NodeId r : s.row) {
    const int p = pos[r];
    const auto layer = std::upper_bound(anchors.begin(), anchors.end(), p) - anchors.begin() - 1;
    if (layer < 0 || p >= head) continue;
    int& end = attention_end[static_cast<std::size_t>(layer)];
    if (end < 0 || p < end) end = p;
  }
  std::vector<char> residual(n, 0);
  for (NodeId a : s.residual_adds) residual[a] = 1;
  std::vector<LayerPart> parts(n, LayerPart::other);
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
    const int p = pos[id];
    LayerPart& part = parts[id];
    if (s.norm_region[id] >= 0) part = LayerPart::norms;
    else if (p >= head) part = LayerPart::head_and_loss;
    else if (p < anchors.front()) part = LayerPart::embedding;
    else if (residual[id]) part = LayerPart::other;
    else {
      const auto layer = std::upper_bound(anchors.begin(), anchors.end(), p) - anchors.begin() - 1;
      const int end = attention_end[static_cast<std::size_t>(layer)];
      part = end < 0 ? LayerPart::other : p <= end ? LayerPart::attention : LayerPart::mlp;
    }
  }
  for (NodeId e : s.embeddings) parts[e] = LayerPart::embedding;
  return parts;
}

}  // namespace symtensor::compiler
