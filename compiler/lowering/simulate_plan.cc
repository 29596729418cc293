#include "compiler/lowering/simulate_plan.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/cost/group_analyzers.h"
#include "compiler/cost/numeric_graph.h"
#include "simulator/engine/compiled_program.h"

namespace symtensor::compiler {
namespace {

// The plan's analysis on group g's device (hardware::fleet_on_group_device), made once per
// simulation.
using GroupAnalysis = std::function<const PlanAnalysis&(int g)>;

// On a mixed fleet the lowering's kernel times come from an analysis on one device (the
// fleet's uniform view: the slowest). Each stage whose ranks lie inside one group takes its
// compute and optimizer times from an analysis on that group's device instead; a stage
// spanning several groups keeps the slowest's.
std::vector<const PlanAnalysis*> stage_timing_on_groups(const Plan& plan, const hardware::Cluster& fleet,
                                                        const GroupAnalysis& on_group) {
  const hardware::DeviceMesh mesh = plan_mesh(plan, fleet);
  const int stages = std::max(plan.pipeline_stages(), 1);
  std::vector<std::vector<int>> ranks(stages);
  const int axis = plan.pipeline_axis;
  for (int r = 0; r < mesh.num_devices(); ++r) {
    int stage = 0;
    if (axis >= 0 && axis < static_cast<int>(mesh.axes().size())) stage = (r / mesh.axes()[axis].stride) % mesh.axes()[axis].size;
    if (stage < stages) ranks[stage].push_back(r);
  }
  std::vector<const PlanAnalysis*> timing(stages, nullptr);
  for (int s = 0; s < stages; ++s) {
    const std::vector<int> groups = sim::device_groups_of(fleet, ranks[s]);
    if (groups.size() == 1) timing[s] = &on_group(groups.front());
  }
  return timing;
}

// The plan's simulation from its analysis on `cluster` and, on a mixed fleet, on its groups' devices.
void simulate_analysed(Graph& graph, const NumericGraph& ng, const Plan& plan, const hardware::Cluster& cluster,
                       const PlanAnalysis& analysis, const GroupAnalysis& on_group, const LoweringOptions& lowering,
                       const sim::SimOptions& options, bool lean, PlanSimulation& s) {
  LoweringOptions with_graph = lowering;
  if (!with_graph.graph) with_graph.graph = &graph;
  if (cluster.mixed()) with_graph.stage_timing = stage_timing_on_groups(plan, cluster, on_group);
  if (cluster.mixed() && !plan.group_micro_batches.empty()) {
    // Batch shares: a class per stage and group, timed on its group's device.
    for (std::size_t g = 0; g < cluster.groups.size(); ++g) with_graph.group_timing.push_back(&on_group(static_cast<int>(g)));
  }
  if (lean) {
    sim::LeanProgram program = lower_plan_lean(analysis, plan, cluster, plan_mesh(plan, cluster), with_graph);
    s.program = program.shape;
    s.result = sim::simulate(std::move(program), cluster, options);
  } else {
    s.program = lower_plan(analysis, plan, cluster, plan_mesh(plan, cluster), with_graph);
    s.result = sim::simulate(s.program, cluster, options);
  }
  s.report = make_report(analysis, plan, cluster, s.result, bound_sequence_length(graph), palm_flops(graph, ng.spaces()));
}

PlanSimulation simulate(Graph& graph, const Plan& plan, const hardware::Cluster& cluster, const LoweringOptions& lowering,
                        const sim::SimOptions& options, bool lean, const NumericGraph* numeric) {
  PlanSimulation s;
  std::optional<NumericGraph> own;
  // One for the analyses on the cluster and on each group's device.
  const NumericGraph& ng = numeric ? *numeric : own.emplace(graph);
  s.analysis = analyze_plan(graph, cluster, plan, ng);
  std::vector<std::unique_ptr<PlanAnalysis>> on_groups(cluster.groups.size());
  auto on_group = [&](int g) -> const PlanAnalysis& {
    if (!on_groups.at(g))
      on_groups[g] = std::make_unique<PlanAnalysis>(analyze_plan(graph, hardware::fleet_on_group_device(cluster, g), plan, ng));
    return *on_groups[g];
  };
  simulate_analysed(graph, ng, plan, cluster, s.analysis, on_group, lowering, options, lean, s);
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

SimulationReport simulate_plan_report(const Plan& plan, PlanAnalyzer& uniform, GroupAnalyzers& on_groups,
                                      const LoweringOptions& lowering, const sim::SimOptions& options) {
  const hardware::Cluster& cluster = uniform.cluster();
  // Each analyzer's analysis stays valid until its next call: one call each.
  std::vector<const PlanAnalysis*> made(cluster.groups.size(), nullptr);
  auto on_group = [&](int g) -> const PlanAnalysis& {
    if (!made.at(g)) made[g] = &on_groups[g].analyze_in_place(plan);
    return *made[g];
  };
  PlanSimulation s;
  simulate_analysed(uniform.graph(), uniform.numeric(), plan, cluster, uniform.analyze_in_place(plan), on_group, lowering,
                    options, true, s);
  return std::move(s.report);
}

}  // namespace symtensor::compiler
