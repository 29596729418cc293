#pragma once
// The analytic step time of a plan (the search's evaluator): per-stage forward and
// backward times from the PlanAnalysis, the pipeline schedule's bubble, data-parallel
// gradient synchronisation overlapped with backward where the framework overlaps it,
// the optimizer step, and memory against capacity.
#include <optional>
#include <vector>

#include "compiler/cost/plan_analysis.h"

namespace symtensor::compiler {

struct StepEstimate {
  double step_time_s = 0;
  double compute_s = 0;         // forward + backward (+ recompute) of the slowest stage, all micro-batches
  double exposed_comm_s = 0;    // tensor-parallel and redistribution collectives on the critical path
  double bubble_s = 0;          // pipeline fill and drain
  double dp_exposed_s = 0;      // gradient synchronisation not hidden behind backward
  double optimizer_s = 0;       // the step, and under ZeRO-1/2 or the distributed optimizer the weights' all-gather after it
  double p2p_s = 0;             // pipeline sends on the critical path
  std::vector<double> stage_peak_memory;  // bytes per device
  double peak_memory = 0;
  double memory_capacity = 0;
  // Per stage where the stages' devices differ (a mixed fleet, fleet_step_estimate); empty:
  // every stage has memory_capacity.
  std::vector<double> stage_memory_capacity;
  // The memory of stage s's devices: stage_memory_capacity's, else memory_capacity.
  double stage_capacity(std::size_t s) const {
    return s < stage_memory_capacity.size() ? stage_memory_capacity[s] : memory_capacity;
  }
  bool fits = true;
  double model_flops = 0;       // per step, all devices: forward+backward without recompute
  double hardware_flops = 0;    // with recompute
  double mfu = 0, hfu = 0;
  // MFU under 6N + 12Lhs (palm_mfu): left unset here, without the graph; compare and sweep
  // set it.
  std::optional<double> mfu_6n;
  double samples_per_s = 0;
};

// The stage whose peak comes closest to its own devices' memory, or furthest over it (the
// largest peak[s] - capacity(s); the first of equals): on one GPU type the fullest stage. A
// mixed fleet's memory figure is that stage's peak beside that stage's capacity.
template <class Capacity>
std::size_t tightest_stage(const std::vector<double>& peak, const Capacity& capacity) {
  std::size_t tightest = 0;
  for (std::size_t s = 1; s < peak.size(); ++s)
    if (peak[s] - capacity(s) > peak[tightest] - capacity(tightest)) tightest = s;
  return tightest;
}

// ZeRO-3's parameter all-gathers of one pass (forward or backward) that stay on the critical
// path: they are prefetched one block ahead on their own stream, as the lowering does
// (FSDP's prefetch), so only the first and whatever exceeds the stage's forward + backward
// compute `compute` (per micro-batch) are exposed. `gather`: all of a pass's gathers;
// `first`: the largest single one.
double exposed_gather_seconds(double gather, double first, double compute);

// What ZeRO-2/3's gradient reduce-scatter of one micro-batch (`scatter`; the gradients kept
// sharded, CommOp::every_micro_batch) adds to the exposed gathers of its two passes: it shares
// their links and stream, behind the same compute (`gather`, `first`, `compute` as above).
double exposed_scatter_seconds(double scatter, double gather, double first, double compute);

// Per micro-batch of stage `s`: its exposed gathers (both passes) and reduce-scatter, as
// estimate_step prices them.
double exposed_parameter_seconds(const StageTotals& a, int s);

// A lower bound on a pipeline's step from each stage's compute of one micro-batch (`fwd`,
// `bwd`: seconds per stage, recomputation included): each rank runs its compute blocks one
// after another, so no step is shorter than the busiest stage's `micro_batches` forwards and
// backwards. Without interleaving (`chained`), stage k's first block is a micro-batch's
// forward, which waits for that micro-batch's forward on every stage before it, and its last
// a backward, after which that micro-batch's backward runs on every stage before it in turn:
// the earlier stages' forward and backward of one micro-batch (the fill and drain) add to it.
double pipeline_compute_bound(const std::vector<double>& fwd, const std::vector<double>& bwd, int micro_batches, bool chained);

StepEstimate estimate_step(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster);
// The same from the analysis' per-stage sums (PlanAnalyzer::totals: a search's fast path).
StepEstimate estimate_step(const StageTotals& totals, const Plan& plan, const hardware::Cluster& cluster);

}  // namespace symtensor::compiler
