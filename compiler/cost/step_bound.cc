#include "compiler/cost/step_bound.h"

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/strategies/data_parallel.h"

namespace symtensor::compiler {

namespace {

// The whole step on one device of the cluster, on the whole global batch.
StepEstimate one_device_step(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             const NumericGraph& ng) {
  hardware::Cluster one = cluster;
  for (hardware::TopologyLevel& level : one.levels) level.size = 1;
  Plan plan = make_data_parallel_plan(graph, one, options, 0, ng.spaces());
  plan.micro_batches = 1;
  plan.recompute = RecomputePolicy::none;
  return estimate_step(analyze_plan(graph, one, plan, ng), plan, one);
}

}  // namespace

double step_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  return step_time_lower_bound(graph, cluster, options, NumericGraph(graph));
}

double step_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             const NumericGraph& ng) {
  const StepEstimate e = one_device_step(graph, cluster, options, ng);
  return (e.compute_s + e.optimizer_s) / cluster.num_devices();
}

double compute_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                                const NumericGraph& ng) {
  return one_device_step(graph, cluster, options, ng).compute_s / cluster.num_devices();
}

}  // namespace symtensor::compiler
