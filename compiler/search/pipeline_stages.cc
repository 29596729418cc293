#include "compiler/search/pipeline_stages.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "compiler/ir/element_type.h"

namespace symtensor::compiler {
namespace {

// Per tensor: an activation, i.e. what a stage boundary carries. Values computed only
// from graph inputs and constants (a causal mask made from position ids) can be made by
// every stage from the inputs, and values computed only from parameters and constants (a
// tied embedding's transpose) are weight-like: neither is an activation. A value mixing
// inputs and weights, or made from an activation, is one. Shape and Size read no data.
std::vector<bool> activations(const Graph& g, const std::vector<NodeId>& order) {
  enum Kind : char { fixed, input_like, activation };
  std::vector<Kind> kind(g.tensors().size(), fixed);
  for (TensorId t = 0; t < static_cast<TensorId>(g.tensors().size()); ++t) {
    const Tensor& tensor = g.tensor(t);
    if (tensor.producer == kNone && tensor.is_graph_input && !tensor.is_parameter && !tensor.is_constant)
      kind[t] = input_like;
  }
  for (NodeId id : order) {
    const Node& node = g.node(id);
    bool any_activation = false, any_input = false, any_weight = false;
    for (TensorId t : node.inputs) {
      if (t == kNone) continue;
      any_activation |= kind[t] == activation;
      any_input |= kind[t] == input_like;
      any_weight |= g.tensor(t).is_parameter;
    }
    Kind out = any_activation || (any_input && any_weight) ? activation : any_input ? input_like : fixed;
    if (reads_dims_only(node)) out = fixed;
    for (TensorId t : node.outputs)
      if (t != kNone) kind[t] = g.tensor(t).is_constant || g.tensor(t).is_parameter ? fixed : out;
  }
  std::vector<bool> result(kind.size());
  for (std::size_t t = 0; t < kind.size(); ++t) result[t] = kind[t] == activation;
  return result;
}

}  // namespace

namespace {

std::vector<int> boundary_candidates(const NumericGraph& ng, double micro_batch, const std::vector<NodeId>& order,
                                     const std::vector<bool>& activation) {
  const Graph& g = ng.graph();
  const int n = static_cast<int>(order.size());
  std::vector<int> position(g.nodes().size());
  for (int i = 0; i < n; ++i) position[order[i]] = i;
  // live[k]: bytes produced before position k and consumed at or after it.
  std::vector<double> delta(n + 1, 0.0);
  for (TensorId t = 0; t < static_cast<TensorId>(g.tensors().size()); ++t) {
    const Tensor& tensor = g.tensor(t);
    if (!activation[t] || !is_floating(tensor.dtype) || tensor.consumers.empty()) continue;
    const int from = position[tensor.producer] + 1;
    int to = from;
    for (NodeId c : tensor.consumers) to = std::max(to, position[c] + 1);
    const double bytes = ng.tensor_elements(t).at(micro_batch);
    delta[from] += bytes;
    delta[to] -= bytes;
  }
  std::vector<double> live(n + 1, 0.0);
  double running = 0, least = std::numeric_limits<double>::infinity();
  for (int k = 0; k <= n; ++k) {
    running += delta[k];
    live[k] = running;
  }
  // Interior positions where something is live (the model's data path passes).
  for (int k = 1; k < n; ++k)
    if (live[k] > 0) least = std::min(least, live[k]);
  std::vector<int> candidates;
  for (int k = 1; k < n; ++k)
    if (live[k] > 0 && live[k] <= least * 1.05) candidates.push_back(k);
  return candidates;
}

}  // namespace

std::vector<int> stage_boundary_candidates(const NumericGraph& ng, double micro_batch) {
  const std::vector<NodeId>& order = ng.topological_order();
  return boundary_candidates(ng, micro_batch, order, activations(ng.graph(), order));
}

StageSplit split_pipeline_stages(const NumericGraph& ng, const std::vector<double>& node_cost, double micro_batch,
                                 int stages) {
  const Graph& g = ng.graph();
  const std::vector<NodeId>& order = ng.topological_order();
  const int n = static_cast<int>(order.size());
  StageSplit split;
  split.stage_of_node.assign(g.nodes().size(), 0);
  split.stage_cost.assign(std::max(stages, 1), 0.0);
  if (stages <= 1) {
    for (NodeId id = 0; id < static_cast<NodeId>(node_cost.size()); ++id) split.stage_cost[0] += node_cost[id];
    return split;
  }
  const std::vector<bool> activation = activations(g, order);
  const std::vector<int> candidates = boundary_candidates(ng, micro_batch, order, activation);
  if (static_cast<int>(candidates.size()) < stages - 1)
    throw std::runtime_error("pipeline: the model has " + std::to_string(candidates.size() + 1) +
                             " segments between layer boundaries, fewer than " + std::to_string(stages) + " stages");
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + node_cost[order[i]];
  // Greedy fill under `limit`: the boundaries, or empty when more than `stages` are needed.
  auto fill = [&](double limit) {
    std::vector<int> cuts;
    int start = 0;
    std::size_t c = 0;
    while (true) {
      int last = -1;
      while (c < candidates.size() && prefix[candidates[c]] - prefix[start] <= limit) last = candidates[c++];
      if (prefix[n] - prefix[start] <= limit) return cuts;
      if (last < 0 || static_cast<int>(cuts.size()) + 1 >= stages) return std::vector<int>{-1};
      cuts.push_back(last);
      start = last;
    }
  };
  double lo = prefix[n] / stages, hi = prefix[n];
  std::vector<int> best = fill(hi);
  for (int it = 0; it < 60 && hi - lo > 1e-9 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    std::vector<int> cuts = fill(mid);
    if (!cuts.empty() && cuts[0] == -1) lo = mid;
    else hi = mid, best = std::move(cuts);
  }
  // Use every stage: split the costliest stage's range further at remaining candidates.
  while (static_cast<int>(best.size()) < stages - 1) {
    for (int k : candidates)
      if (std::find(best.begin(), best.end(), k) == best.end()) {
        best.push_back(k);
        break;
      }
    std::sort(best.begin(), best.end());
  }
  std::sort(best.begin(), best.end());
  int s = 0;
  for (int i = 0; i < n; ++i) {
    while (s < static_cast<int>(best.size()) && i >= best[s]) ++s;
    split.stage_of_node[order[i]] = s;
  }
  // Nodes without activation inputs (constants, shape arithmetic, embeddings, weight-like
  // values) go with their first consumer, so that nothing but activations crosses a boundary.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = g.node(*it);
    bool fed = false;
    for (TensorId t : node.inputs) fed |= t != kNone && activation[t];
    if (fed) continue;
    int first = std::numeric_limits<int>::max();
    for (TensorId t : node.outputs)
      if (t != kNone)
        for (NodeId c : g.tensor(t).consumers) first = std::min(first, split.stage_of_node[c]);
    if (first != std::numeric_limits<int>::max()) split.stage_of_node[*it] = first;
  }
  for (NodeId id = 0; id < static_cast<NodeId>(node_cost.size()); ++id) split.stage_cost[split.stage_of_node[id]] += node_cost[id];
  return split;
}

}  // namespace symtensor::compiler
