#include "compiler/cost/step_bound.h"

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/strategies/data_parallel.h"

namespace symtensor::compiler {

double step_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  hardware::Cluster one = cluster;
  for (hardware::TopologyLevel& level : one.levels) level.size = 1;
  Plan plan = make_data_parallel_plan(graph, one, options, 0);
  plan.micro_batches = 1;
  plan.recompute = RecomputePolicy::none;
  const StepEstimate e = estimate_step(analyze_plan(graph, one, plan), plan, one);
  return (e.compute_s + e.optimizer_s) / cluster.num_devices();
}

}  // namespace symtensor::compiler
