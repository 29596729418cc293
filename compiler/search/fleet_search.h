#pragma once
// Plans for a mixed fleet (hardware::Cluster::groups: dgx-h100x2+dgx-a100x4), priced by the
// simulator, which plays each rank on its own group's device (issue #32).
//
// Megatron-best on a mixed fleet, honestly: Megatron-LM gives every rank the same layers,
// batch share and TP degree, so it either runs on one group alone or runs the whole fleet at
// the slowest group's pace. megatron_fleet_best returns the better of (a) its exhaustively
// searched best plan on the fastest usable group alone (usable: a plan fits its memory) and
// (b) its best plan over every GPU of the fleet priced on the fleet's uniform view (the
// slowest device, the least memory, the slowest links).
//
// Exact prunings keep both fast without changing what they find: the groups are searched for
// (a) in the order of their step time lower bound (step_time_lower_bound), and a group whose
// bound is no shorter than the best group's simulated step is not searched; a pipeline
// candidate (or a refinement's split) whose busiest stage's compute over the micro-batches is
// no shorter than the step to beat is not simulated; and the simulation of a plan on a fleet
// lowers it once, each stage timed by the analysis on its own group's device
// (LoweringOptions::stage_timing). Two shortcuts are not exact: the pipelines' splits are
// refereed on shortened simulations (simulate_shortened, search_simulation.h: exact where the
// schedule has reached its period by 2p micro-batches, which nothing checks there; the split
// adopted is simulated again as reported), and a refinement move that the simulated stage
// speeds predict leaves the busiest stage's compute as long is not tried (the 70B fleet's
// 0.09%). Every step reported has the whole simulation's figures (simulate_periodic: extended
// from steps of 2p, 3p and 4p micro-batches where their increments agree to 1e-9, else
// simulated whole).
//
// fleet_search places work by speed in two shapes. Batch shares (fleet_shares.h): a uniform
// tp x pp grid per replica, data parallelism over the groups, each group's replicas running
// micro-batches in proportion to their pace, then rebalanced from the simulated time per
// micro-batch of each group while the step drops; a grid whose compute lower bound
// (shares_compute_bound) is no shorter than the plan so far is not simulated. And a pipeline whose stages each lie inside one group (the
// nodes of the pipeline axis are cut so that no stage straddles two groups), with uneven layer
// counts: first in proportion to the pace of the stage's device (hardware::device_pace), then
// rebalanced from the simulated compute time of each stage, while the step time drops. The
// tensor- and context-parallel degrees (uniform, and per group where the groups' fastest
// fitting layouts differ: refine_to_common_mesh, take_stage_cuts) and recomputation are
// searched; each candidate is first checked to fit memory by the analytic model, each stage
// against its own group's devices (fleet_step_estimate), and under full recomputation each
// stage recomputes only as many of its layers as that memory needs (recompute_fewest_layers:
// an L4 stage some, an H100 stage beside it none). Megatron-best's two plans are candidates too, so the
// result is never slower than it.
//
// The ceiling: the sum of the groups' speeds (devices x device_pace) over that of the fastest
// usable group, the most a perfect placement could gain over running on that group alone; the
// share reached is (subset step time / plan step time) / ceiling.
#include <string>
#include <vector>

#include "compiler/export/export.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// One plan simulated on the cluster it runs on (the fleet, or one group of it).
struct FleetStep {
  Plan plan;
  std::string cluster;   // the cluster the plan runs on (a group's name, "dgx-h100x2", or the fleet's)
  std::string label;     // what it is, one line
  double step_time_s = 0;
  bool fits = false;
  bool found = false;    // a plan was made at all
  std::string missing;   // when none was: why, one line
};

struct MegatronFleetBest {
  FleetStep subset;      // (a) the fastest usable group alone
  int subset_group = -1; // its index in the fleet's groups; -1 when no group alone fits
  FleetStep uniform;     // (b) every GPU at the slowest group's pace
  int simulations = 0;   // plans simulated: (b) and the groups searched (a group whose step time
                         // lower bound is no shorter than a faster group's step is not searched)
  // The faster of the two that fit (throws when neither does).
  const FleetStep& best() const;
};

struct FleetSearchResult {
  FleetStep plan;                 // the search's choice
  bool heterogeneous = false;     // a pipeline over the groups with uneven layers (else (a) or (b) won)
  std::vector<int> stage_groups;  // per pipeline stage of `plan`: its group (heterogeneous plans)
  std::vector<int> stage_layers;  // per pipeline stage: transformer layers
  // The plan's shape is batch shares (compiler/search/fleet_shares.h): a uniform grid of
  // `shares_dp` data-parallel replicas over the groups, each group's running its own count of
  // micro-batches (Plan::group_micro_batches), by speed.
  bool batch_shares = false;
  int shares_dp = 0;
  std::vector<int> share_groups;  // per entry of the plan's group_micro_batches: its group in the fleet
  MegatronFleetBest megatron;
  double ceiling = 0;             // sum of group speeds / the fastest usable group's (0: none usable)
  double ceiling_share = 0;       // (megatron.subset step / plan step) / ceiling
  int simulations = 0;
};

MegatronFleetBest megatron_fleet_best(Graph& graph, const hardware::Cluster& fleet, const StrategyOptions& options);
// `batch_shares`: false leaves out the batch-shares shape (the pipelines' tests).
FleetSearchResult fleet_search(Graph& graph, const hardware::Cluster& fleet, const StrategyOptions& options,
                               bool batch_shares = true);

// The group of each pipeline stage of a plan on a mixed fleet (-1 for a stage whose ranks lie
// in several groups); one entry per stage.
std::vector<int> plan_stage_groups(const Plan& plan, const hardware::Cluster& fleet);

// The plan with its transformer layers reassigned to pipeline stages: `layers[s]` consecutive
// decoder layers to stage s, multi-token prediction layers on the last (nodes between layers
// follow their producers, as Megatron's layout does). Throws when the counts do not add up to
// the model's decoder layers or a stage gets none.
Plan restage_layers(Graph& graph, Plan plan, const std::vector<int>& layers);

// The cluster a plan made on `loaded` runs on: `loaded`, or the group of a mixed fleet the
// plan names (Plan::cluster, a plan on that group alone). Throws when it names neither.
hardware::Cluster cluster_of_plan(const hardware::Cluster& loaded, const Plan& plan);

// The export of a fleet search's plan to `target`. A heterogeneous plan (stages of several GPU
// types with their own layer counts) is not expressible in Megatron-LM, torchtitan or any
// target: every rank of theirs does the same work. What is written is the nearest homogeneous
// plan, Megatron-best on the fleet (its fastest group alone, or every GPU at the slowest
// pace), with both simulated predictions, the difference first among the items not
// expressible and, in targets with comments, in the config's first lines. A plan that is
// already homogeneous exports as export_plan does on its own cluster.
ExportResult export_fleet_plan(ExportTarget target, Graph& graph, const hardware::Cluster& fleet,
                               const FleetSearchResult& result);

// "dgx-h100 x16 (8 layers/stage ...)": one line per group of a fleet search's result, then the
// comparison with Megatron-best and the ceiling (what `compile` prints on a mixed fleet).
std::string describe_fleet_result(const FleetSearchResult& result, const hardware::Cluster& fleet);

}  // namespace symtensor::compiler
