#include "compiler/fusion/unfuse_plan.h"

#include <map>
#include <numeric>
#include <stdexcept>

#include "compiler/analysis/model_stats.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {
namespace {

// Union-find over (node, loop) slots; node -1 is the fused node.
class LoopClasses {
 public:
  int slot(int node, int loop) {
    auto [it, added] = ids_.try_emplace({node, loop}, static_cast<int>(parent_.size()));
    if (added) parent_.push_back(it->second);
    return it->second;
  }
  int find(int x) { return parent_[x] == x ? x : parent_[x] = find(parent_[x]); }
  void join(int a, int b) { parent_[find(a)] = find(b); }

 private:
  std::map<std::pair<int, int>, int> ids_;
  std::vector<int> parent_;
};

}  // namespace

Plan unfuse_plan(Graph& fused, const Plan& plan) {
  if (!fused.unfused) throw std::logic_error("unfuse_plan: the graph was not fused");
  Graph& original = *fused.unfused;
  const std::vector<IterationSpace> fused_spaces = node_iteration_spaces(fused);
  const std::vector<IterationSpace> spaces = node_iteration_spaces(original);
  const int n = static_cast<int>(original.nodes().size());
  Plan out = plan;
  out.stage_of_node.assign(n, -1);
  out.node_cuts.assign(n, NodeCut{});
  for (int id = 0; id < n; ++id) out.node_cuts[id].loop_axes.assign(spaces[id].loops.size(), {});

  for (NodeId f = 0; f < static_cast<NodeId>(fused.nodes().size()); ++f) {
    const std::vector<NodeId>& members = fused.fused_from.at(f);
    for (NodeId m : members) out.stage_of_node[m] = plan.stage_of_node.at(f);
    if (members.size() == 1 && spaces[members[0]].loops.size() == fused_spaces[f].loops.size() &&
        original.node(members[0]).op_type == fused.node(f).op_type) {
      out.node_cuts[members[0]] = plan.node_cuts.at(f);
      continue;
    }
    // Link loops that index the same dim of the same tensor (by name: tensor ids differ).
    LoopClasses classes;
    std::map<std::pair<std::string, std::size_t>, std::vector<int>> by_dim;
    auto visit = [&](int who, const Node& node, const IterationSpace& space) {
      auto add = [&](const std::vector<TensorId>& tensors, const std::vector<std::vector<int>>& dims, const Graph& g) {
        for (std::size_t i = 0; i < tensors.size() && i < dims.size(); ++i) {
          if (tensors[i] == kNone) continue;
          for (std::size_t d = 0; d < dims[i].size(); ++d)
            if (dims[i][d] >= 0) by_dim[{g.tensor(tensors[i]).name, d}].push_back(classes.slot(who, dims[i][d]));
        }
      };
      const Graph& g = who < 0 ? fused : original;
      add(node.inputs, space.input_dims, g);
      add(node.outputs, space.output_dims, g);
    };
    visit(-1, fused.node(f), fused_spaces[f]);
    for (NodeId m : members) visit(m, original.node(m), spaces[m]);
    for (const auto& [dim, slots] : by_dim)
      for (std::size_t i = 1; i < slots.size(); ++i) classes.join(slots[0], slots[i]);
    std::map<int, std::vector<int>> axes_of_class;
    const NodeCut& cut = plan.node_cuts.at(f);
    for (std::size_t l = 0; l < cut.loop_axes.size(); ++l)
      if (!cut.loop_axes[l].empty()) axes_of_class[classes.find(classes.slot(-1, static_cast<int>(l)))] = cut.loop_axes[l];
    for (NodeId m : members)
      for (std::size_t l = 0; l < spaces[m].loops.size(); ++l) {
        const auto it = axes_of_class.find(classes.find(classes.slot(m, static_cast<int>(l))));
        if (it != axes_of_class.end()) out.node_cuts[m].loop_axes[l] = it->second;
      }
  }
  // Removed nodes: replicated, on the stage of their first reader (readers come later).
  const std::vector<NodeId> order = original.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (out.stage_of_node[*it] >= 0) continue;
    int stage = -1;
    for (TensorId t : original.node(*it).outputs) {
      if (t == kNone) continue;
      for (NodeId c : original.tensor(t).consumers)
        if (out.stage_of_node[c] >= 0) stage = stage < 0 ? out.stage_of_node[c] : std::min(stage, out.stage_of_node[c]);
    }
    out.stage_of_node[*it] = std::max(stage, 0);
  }
  return out;
}

}  // namespace symtensor::compiler
