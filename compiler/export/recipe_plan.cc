#include "compiler/export/recipe_plan.h"

#include <exception>

#include <fmt/format.h>

#include "compiler/strategies/propagation.h"

namespace symtensor::compiler {
namespace {

std::vector<int> loop_ways(const Plan& plan, const hardware::DeviceMesh& mesh, NodeId n) {
  std::vector<int> ways;
  for (const auto& axes : plan.node_cuts.at(n).loop_axes) {
    int w = 1;
    for (int a : axes) w *= mesh.axes()[a].size;
    ways.push_back(w);
  }
  return ways;
}

std::string ways_text(const IterationSpace& space, const std::vector<int>& ways) {
  std::string s;
  for (std::size_t l = 0; l < ways.size(); ++l)
    if (ways[l] > 1) s += fmt::format("{}{}={}", s.empty() ? "" : ",", l < space.loops.size() ? space.loops[l].name : "?", ways[l]);
  return s.empty() ? "none" : s;
}

}  // namespace

RecipePlan build_recipe_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& original, const ParallelRecipe& r) {
  RecipePlan out;
  StrategyOptions options;
  options.mode = original.mode;
  options.precision = original.precision;
  MegatronKnobs knobs = r.knobs();
  knobs.dp = 0;
  try {
    Plan plan = MegatronLayouts(graph).make(cluster, knobs, options);
    plan.zero_stage = r.zero_stage;
    if (plan.recompute == RecomputePolicy::full && static_cast<int>(r.recompute_layers.size()) == plan.pipeline_stages())
      plan.recompute_layers = r.recompute_layers;
    plan.strategy = original.strategy;
    plan.model = original.model;
    plan.inputs = original.inputs;  // the nearest plan exports on its own, as the original
    out.plan = std::move(plan);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::vector<std::string> plan_differences(Graph& graph, const hardware::Cluster& cluster, const Plan& original,
                                          const Plan& recipe_plan, std::size_t max_lines) {
  const std::vector<IterationSpace> spaces = node_iteration_spaces(graph);
  const hardware::DeviceMesh mesh_a = plan_mesh(original, cluster), mesh_b = plan_mesh(recipe_plan, cluster);
  std::vector<std::string> lines;
  int heavy_more = 0, light = 0, staged = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes().size()); ++n) {
    const std::vector<int> a = loop_ways(original, mesh_a, n), b = loop_ways(recipe_plan, mesh_b, n);
    if (original.stage_of_node.at(n) != recipe_plan.stage_of_node.at(n)) ++staged;
    if (a == b) continue;
    const OpKind kind = spaces[n].kind;
    if (kind != OpKind::gemm && kind != OpKind::attention) {
      ++light;
    } else if (lines.size() < max_lines) {
      lines.push_back(fmt::format("{} ({}): cut {} where the recipe cuts {}", graph.node(n).name, graph.node(n).op_type,
                                  ways_text(spaces[n], a), ways_text(spaces[n], b)));
    } else {
      ++heavy_more;
    }
  }
  if (heavy_more > 0) lines.push_back(fmt::format("... and {} more GEMM/attention operators cut otherwise", heavy_more));
  if (light > 0) lines.push_back(fmt::format("{} element-wise/normalization/data-movement operators cut otherwise than the recipe propagates", light));
  if (staged > 0) lines.push_back(fmt::format("{} operators on another pipeline stage than the recipe's even split", staged));
  return lines;
}

}  // namespace symtensor::compiler
