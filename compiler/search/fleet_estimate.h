#pragma once
// The analytic step estimate of a plan on a mixed fleet (#32): each pipeline stage lying in
// one group priced on that group's device, as the fleet search balances its stages and as
// simulate_plan times them, so that the two evaluators price a plan that places work by speed
// alike.
#include <vector>

#include "compiler/cost/group_analyzers.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

class Graph;
class NumericGraph;
class PlanAnalyzer;
struct Plan;

// On a cluster of one device type: estimate_step of the plan's analysis. On a mixed fleet:
// the stages inside one group take their kernels, exposed collectives, parameter collectives
// and memory from the analysis on that group's device (the fleet's mesh and links); a stage
// spanning groups keeps the fleet's uniform view (the slowest group's pace and least memory).
// The step is assembled from those stage totals (estimate_step); fits when every stage fits
// its own devices (stage_memory_capacity; peak_memory and memory_capacity are the tightest
// stage's), and MFU is over the sum of the devices' peaks. A plan with batch shares
// (Plan::group_micro_batches): each group priced on its own device over its own count of
// micro-batches (plan_for_group); the step is the slowest group's (its count x its
// micro-batch time, plus its exposed gradient reduction), fits when every group fits.
StepEstimate fleet_step_estimate(Graph& graph, const hardware::Cluster& fleet, const Plan& plan);
// A batch-shares plan's estimate from each group's (in the fleet's group order): estimate_step
// of plan_for_group(plan, g) on group g's device. The slowest group's step and breakdown, the
// tightest group's memory, fits when every group fits; flops and MFU over the whole fleet.
StepEstimate combine_share_estimates(const hardware::Cluster& fleet, const Plan& plan, std::vector<StepEstimate> per_group);
// The same with the graph's NumericGraph at hand (a search's).
StepEstimate fleet_step_estimate(Graph& graph, const hardware::Cluster& fleet, const Plan& plan, const NumericGraph& ng);

// A plan's stage totals with each stage lying in one group (stage_groups[st] >= 0) taking its
// kernels, exposed collectives, parameter collectives and peak memory from the analysis on its
// group's device; where a stage spans groups (-1) the rest keep the fleet's uniform view, else
// the first stage's group's analysis gives them (the sends' bytes and the FLOPs are the same on
// any device). `stage_memory`: each stage's device memory. Throws as the analysis does.
struct GroupedStageTotals {
  StageTotals totals;
  std::vector<double> stage_memory;
};
GroupedStageTotals stage_totals_on_groups(const hardware::Cluster& fleet, const Plan& plan,
                                          const std::vector<int>& stage_groups, PlanAnalyzer& uniform,
                                          GroupAnalyzers& on_group);

// A plan without batch shares, priced by a search's analyzers: `uniform` on the fleet's
// uniform view, `on_group` on its groups' devices; throws as the analysis does.
StepEstimate fleet_step_estimate(const hardware::Cluster& fleet, const Plan& plan, PlanAnalyzer& uniform,
                                 GroupAnalyzers& on_group);

}  // namespace symtensor::compiler
