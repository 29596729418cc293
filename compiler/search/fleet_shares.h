#pragma once
// The batch-shares plan shape on a mixed fleet (issue #32): a uniform tp x pp grid per
// data-parallel replica, as Megatron-LM would use, data parallelism spanning the groups, and
// each group's replicas running their own count of micro-batches per step
// (Plan::group_micro_batches), in proportion to their speed. The gradient reduction spans
// every replica, so each waits for the slowest at the step's end.
#include <limits>
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// Micro-batches per replica for each group: `replicas[g]` replicas in group g, each taking a
// micro-batch in `seconds[g]`, over `total` micro-batches in all (sum of replicas x count =
// total), each count >= 1. The counts that make the slowest group's count x seconds the
// shortest (ties: the first found, counts near the proportional ones tried); empty when no
// whole counts add up to `total`.
std::vector<int> share_counts(const std::vector<int>& replicas, const std::vector<double>& seconds, int total);

struct SharesCandidate {
  Plan plan;             // with group_micro_batches set
  MegatronKnobs knobs;
  std::vector<int> replicas;  // per group: data-parallel replicas
  double estimate = 0;   // fleet_step_estimate's step
  double bound = 0;      // no simulated step is shorter: the slowest group's count x its compute per micro-batch
};

// The grids (tp, pp, micro-batch size, the least recomputation that fits) whose shares plan fits
// every group by the analytic estimate, shares by hardware::device_pace, ranked by estimate.
// A grid whose compute lower bound (shares_compute_bound) is no shorter than `beat` (the step
// to beat) is left out before it is estimated: more recomputation only adds to it. Training
// only; a fleet of one group gives none.
std::vector<SharesCandidate> batch_share_candidates(Graph& graph, const hardware::Cluster& fleet,
                                                    const StrategyOptions& options, const NumericGraph& ng,
                                                    double beat = std::numeric_limits<double>::infinity());

// A lower bound on the simulated step of `plan` (its shares set) on `fleet`: every rank runs its
// compute blocks one after another, its group's count of micro-batches of forward and backward
// (with recomputation) timed on its device. 0 when the analysis refuses the plan.
double shares_compute_bound(Graph& graph, const hardware::Cluster& fleet, const Plan& plan, const NumericGraph& ng);

}  // namespace symtensor::compiler
