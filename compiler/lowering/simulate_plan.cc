#include "compiler/lowering/simulate_plan.h"

#include <stdexcept>

#include "simulator/engine/compiled_program.h"

namespace symtensor::compiler {
namespace {

// On a mixed fleet the lowering's kernel times come from an analysis on one device (the
// fleet's uniform view: the slowest). Each stage that lies inside one group takes its compute
// and optimizer times from an analysis on that group's device instead; a stage spanning
// several groups keeps the slowest's.
void time_on_group_devices(Graph& graph, const Plan& plan, const hardware::Cluster& fleet, const LoweringOptions& lowering,
                           sim::Program& program) {
  for (int g = 0; g < static_cast<int>(fleet.groups.size()); ++g) {
    std::vector<int> classes;
    for (int c = 0; c < static_cast<int>(program.rank_classes.size()); ++c)
      if (sim::device_groups_of(fleet, program.rank_classes[c].ranks) == std::vector<int>{g}) classes.push_back(c);
    if (classes.empty()) continue;
    hardware::Cluster view = fleet;
    view.device = fleet.groups[g].device;
    const PlanAnalysis analysis = analyze_plan(graph, view, plan);
    const sim::Program timed = lower_plan(analysis, plan, view, plan_mesh(plan, view), lowering);
    for (int c : classes) {
      auto& tasks = program.rank_classes[c].tasks;
      const auto& with_times = timed.rank_classes.at(c).tasks;
      if (with_times.size() != tasks.size()) throw std::logic_error("simulate_plan: a group's lowering differs in its tasks");
      for (std::size_t i = 0; i < tasks.size(); ++i)
        if (tasks[i].kind == sim::TaskKind::compute || tasks[i].kind == sim::TaskKind::optimizer)
          tasks[i].duration_s = with_times[i].duration_s;
    }
  }
}

}  // namespace

PlanSimulation simulate_plan(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                             const LoweringOptions& lowering, const sim::SimOptions& options) {
  PlanSimulation s;
  s.analysis = analyze_plan(graph, cluster, plan);
  LoweringOptions with_graph = lowering;
  if (!with_graph.graph) with_graph.graph = &graph;
  s.program = lower_plan(s.analysis, plan, cluster, plan_mesh(plan, cluster), with_graph);
  if (cluster.mixed()) time_on_group_devices(graph, plan, cluster, with_graph, s.program);
  s.result = sim::simulate(s.program, cluster, options);
  s.report = make_report(s.analysis, plan, cluster, s.result, bound_sequence_length(graph), palm_flops(graph));
  return s;
}

}  // namespace symtensor::compiler
