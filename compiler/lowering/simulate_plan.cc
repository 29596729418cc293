#include "compiler/lowering/simulate_plan.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "simulator/engine/compiled_program.h"

namespace symtensor::compiler {
namespace {

// On a mixed fleet the lowering's kernel times come from an analysis on one device (the
// fleet's uniform view: the slowest). Each stage whose ranks lie inside one group takes its
// compute and optimizer times from an analysis on that group's device instead (one per group,
// kept in `on_groups`); a stage spanning several groups keeps the slowest's.
std::vector<const PlanAnalysis*> stage_timing_on_groups(Graph& graph, const NumericGraph& ng, const Plan& plan,
                                                        const hardware::Cluster& fleet,
                                                        std::vector<std::unique_ptr<PlanAnalysis>>& on_groups) {
  const hardware::DeviceMesh mesh = plan_mesh(plan, fleet);
  const int stages = std::max(plan.pipeline_stages(), 1);
  std::vector<std::vector<int>> ranks(stages);
  const int axis = plan.pipeline_axis;
  for (int r = 0; r < mesh.num_devices(); ++r) {
    int stage = 0;
    if (axis >= 0 && axis < static_cast<int>(mesh.axes().size())) stage = (r / mesh.axes()[axis].stride) % mesh.axes()[axis].size;
    if (stage < stages) ranks[stage].push_back(r);
  }
  on_groups.resize(fleet.groups.size());
  std::vector<const PlanAnalysis*> timing(stages, nullptr);
  for (int s = 0; s < stages; ++s) {
    const std::vector<int> groups = sim::device_groups_of(fleet, ranks[s]);
    if (groups.size() != 1) continue;
    const int g = groups.front();
    if (!on_groups[g])
      on_groups[g] = std::make_unique<PlanAnalysis>(analyze_plan(graph, hardware::fleet_on_group_device(fleet, g), plan, ng));
    timing[s] = on_groups[g].get();
  }
  return timing;
}

PlanSimulation simulate(Graph& graph, const Plan& plan, const hardware::Cluster& cluster, const LoweringOptions& lowering,
                        const sim::SimOptions& options, bool lean, const NumericGraph* numeric) {
  PlanSimulation s;
  std::optional<NumericGraph> own;
  // One for the analyses on the cluster and on each group's device.
  const NumericGraph& ng = numeric ? *numeric : own.emplace(graph);
  s.analysis = analyze_plan(graph, cluster, plan, ng);
  LoweringOptions with_graph = lowering;
  if (!with_graph.graph) with_graph.graph = &graph;
  std::vector<std::unique_ptr<PlanAnalysis>> on_groups;
  if (cluster.mixed()) with_graph.stage_timing = stage_timing_on_groups(graph, ng, plan, cluster, on_groups);
  if (cluster.mixed() && !plan.group_micro_batches.empty()) {
    // Batch shares: a class per stage and group, timed on its group's device.
    for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
      if (!on_groups[g]) {
        on_groups[g] = std::make_unique<PlanAnalysis>(
            analyze_plan(graph, hardware::fleet_on_group_device(cluster, static_cast<int>(g)), plan, ng));
      }
      with_graph.group_timing.push_back(on_groups[g].get());
    }
  }
  if (lean) {
    sim::LeanProgram program = lower_plan_lean(s.analysis, plan, cluster, plan_mesh(plan, cluster), with_graph);
    s.program = program.shape;
    s.result = sim::simulate(std::move(program), cluster, options);
  } else {
    s.program = lower_plan(s.analysis, plan, cluster, plan_mesh(plan, cluster), with_graph);
    s.result = sim::simulate(s.program, cluster, options);
  }
  s.report = make_report(s.analysis, plan, cluster, s.result, bound_sequence_length(graph), palm_flops(graph, ng.spaces()));
  return s;
}

}  // namespace

PlanSimulation simulate_plan(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                             const LoweringOptions& lowering, const sim::SimOptions& options) {
  return simulate(graph, plan, cluster, lowering, options, false, nullptr);
}

PlanSimulation simulate_plan_lean(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                  const LoweringOptions& lowering, const sim::SimOptions& options,
                                  const NumericGraph* numeric) {
  return simulate(graph, plan, cluster, lowering, options, true, numeric);
}

}  // namespace symtensor::compiler
