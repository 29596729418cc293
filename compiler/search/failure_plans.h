#pragma once
// What-if after a failure (issue #32): the plans SymTensor and Megatron-best make on what is
// left of a cluster once nodes are lost (hardware::without_nodes), and how many of the GPUs
// left each one uses.
//
// Megatron-LM needs tp x pp x cp x dp to be the whole world, with tp dividing the heads and dp
// the batch (pipelines whose depth does not divide the layers take uneven first and last stages,
// megatron_search.h): on 3 nodes of 8 with a batch of 64 and 32 layers pp=3 (11/11/10) takes all
// 24 GPUs, but where nothing does, it relaunches on the largest grid that is valid and idles
// the rest. megatron_largest_grid tries the whole nodes left, then one fewer, and so on, and
// returns the first on which Megatron's search (make_megatron_best_plan: options.megatron's
// knobs as constraints) finds a plan.
//
// SymTensor's plans are not tied to that grid: its search factors the GPUs left by their prime
// factors and may cut the node axis into pipeline stages of any depth
// (compiler/search/symtensor_search.h). Its plan is the faster of its own (on fewer nodes only
// when no plan on all of them can be made) and Megatron-best's plan on its grid (a plan
// SymTensor's space holds as well), by better_estimate: fits first, then faster.
// On a mixed fleet both come from fleet_search (simulated): SymTensor's plan and Megatron-best
// (the faster of its plan on one group alone and its uniform plan over every GPU).
#include <optional>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/search/fleet_search.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// One plan on part of the cluster left.
struct GridPlan {
  Plan plan;
  hardware::Cluster cluster;  // the cluster it runs on (the GPUs left, or fewer nodes of them)
  double step_time_s = 0;     // analytic estimate (simulated on a mixed fleet)
  bool fits = false;
  bool simulated = false;
  int gpus_used = 0;          // cluster.num_devices()
  bool found = false;         // a plan was made (else `note` says why not)
  std::string note;           // why it runs on fewer GPUs than are left ("" when on all of them)
};

struct FailurePlans {
  hardware::Cluster left;  // the cluster left after the loss
  int gpus_left = 0;
  GridPlan symtensor, megatron;
  int idle(const GridPlan& p) const { return gpus_left - p.gpus_used; }
};

// Megatron-best on its largest valid grid of whole nodes within `left` (a cluster of one
// type). Throws when no node count holds a valid configuration (naming the last reason).
GridPlan megatron_largest_grid(Graph& graph, const hardware::Cluster& left, const StrategyOptions& options);

// Both plans re-priced by the simulator (each on its own cluster), where they were estimated:
// a sweep that starts on a mixed fleet and loses a whole group compares its rows on one footing.
void simulate_failure_plans(Graph& graph, FailurePlans& plans);

// Both plans of a fleet search's result on the fleet `left` (its plan, and Megatron-best's).
FailurePlans failure_plans_of_fleet(const FleetSearchResult& result, const hardware::Cluster& left);

// Both plans on `left` (a cluster of one type, or a mixed fleet). Throws when SymTensor's
// cannot be made; Megatron-best's may be missing (found false, `note` saying why).
FailurePlans plans_after_loss(Graph& graph, const hardware::Cluster& left, const StrategyOptions& options);

}  // namespace symtensor::compiler
