#include "compiler/lowering/simulate_plan.h"

namespace symtensor::compiler {

PlanSimulation simulate_plan(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                             const LoweringOptions& lowering, const sim::SimOptions& options) {
  PlanSimulation s;
  s.analysis = analyze_plan(graph, cluster, plan);
  LoweringOptions with_graph = lowering;
  if (!with_graph.graph) with_graph.graph = &graph;
  s.program = lower_plan(s.analysis, plan, cluster, plan_mesh(plan, cluster), with_graph);
  s.result = sim::simulate(s.program, cluster, options);
  s.report = make_report(s.analysis, plan, cluster, s.result, bound_sequence_length(graph), palm_flops(graph));
  return s;
}

}  // namespace symtensor::compiler
