#include "compiler/strategies/data_parallel.h"

#include <cmath>
#include <stdexcept>

#include "compiler/strategies/propagation.h"

namespace symtensor::compiler {

Plan make_data_parallel_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             int zero_stage) {
  return make_data_parallel_plan(graph, cluster, options, zero_stage, node_iteration_spaces(graph));
}

Plan make_data_parallel_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             int zero_stage, const std::vector<IterationSpace>& spaces, PropagationCache* cache) {
  Plan plan = plan_skeleton(zero_stage == 3 ? "zero3" : "dp", graph, cluster, options);
  plan.zero_stage = zero_stage;
  for (auto it = cluster.levels.rbegin(); it != cluster.levels.rend(); ++it) plan.mesh_factors.push_back({it->size});
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  const int devices = mesh.num_devices();
  if (std::fmod(plan.global_batch, devices) != 0)
    throw std::runtime_error(plan.strategy + ": batch " + std::to_string(static_cast<long long>(plan.global_batch)) +
                             " is not divisible by the " + std::to_string(devices) + " devices");

  std::vector<int> axes;
  for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a)
    if (mesh.axes()[a].size > 1) axes.push_back(a);

  const std::size_t n = graph.nodes().size();
  plan.stage_of_node.assign(n, 0);
  plan.node_cuts.assign(n, NodeCut{});
  std::vector<bool> fixed(n, false);
  bool any = false;
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
    plan.node_cuts[id].loop_axes.assign(spaces[id].loops.size(), {});
    const int loop = loop_with_symbol(graph, spaces[id], graph.batch_dim);
    if (loop < 0) continue;
    if (!cut_allowed(graph, graph.node(id), spaces[id], loop, axes, mesh))
      throw std::runtime_error(plan.strategy + ": node '" + graph.node(id).name + "' cannot cut its batch loop '" +
                               spaces[id].loops[loop].name + "' " + std::to_string(devices) + " ways");
    plan.node_cuts[id].loop_axes[loop] = axes;
    fixed[id] = any = true;
  }
  if (!any) throw std::runtime_error(plan.strategy + ": no operator of '" + graph.source + "' has a `batch` loop");
  propagate_cuts(graph, mesh, plan, fixed, spaces, cache);
  return plan;
}

}  // namespace symtensor::compiler
