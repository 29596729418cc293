#include "compiler/search/fleet_estimate.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/plan/batch_shares.h"
#include "compiler/search/fleet_search.h"

namespace symtensor::compiler {

namespace {

// Batch shares (Plan::group_micro_batches): each group priced on its own device as if every
// replica ran its count (plan_for_group), combined by combine_share_estimates.
StepEstimate shares_step_estimate(Graph& graph, const hardware::Cluster& fleet, const Plan& plan, const NumericGraph& ng) {
  std::vector<StepEstimate> per_group;
  GroupAnalyzers on_group(graph, fleet, ng);
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    const Plan pg = plan_for_group(plan, static_cast<int>(g));
    per_group.push_back(estimate_step(on_group[g].totals(pg), pg, on_group.view(g)));
  }
  return combine_share_estimates(fleet, plan, std::move(per_group));
}

}  // namespace

StepEstimate combine_share_estimates(const hardware::Cluster& fleet, const Plan& plan, std::vector<StepEstimate> per_group) {
  StepEstimate worst;
  bool first = true, fits = true;
  double model = 0, hardware_flops = 0, tightest = -std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < per_group.size(); ++g) {
    StepEstimate& e = per_group[g];
    const int m = group_micro_batch_count(plan, static_cast<int>(g));
    const double share = static_cast<double>(fleet.groups.at(g).devices) / fleet.num_devices();
    model += e.model_flops * share * plan.micro_batches / m;
    hardware_flops += e.hardware_flops * share * plan.micro_batches / m;
    fits = fits && e.fits;
    const double margin = e.peak_memory - e.memory_capacity;
    const double peak = e.peak_memory, capacity = e.memory_capacity;
    if (first || e.step_time_s > worst.step_time_s) worst = std::move(e);
    if (margin > tightest) tightest = margin, worst.peak_memory = peak, worst.memory_capacity = capacity;
    first = false;
  }
  worst.fits = fits;
  worst.model_flops = model, worst.hardware_flops = hardware_flops;
  const double peak = hardware::total_peak(fleet, plan.precision);
  if (worst.step_time_s > 0 && peak > 0) {
    worst.mfu = model / (worst.step_time_s * peak);
    worst.hfu = hardware_flops / (worst.step_time_s * peak);
    worst.samples_per_s = plan.global_batch / worst.step_time_s;
  }
  return worst;
}

StepEstimate fleet_step_estimate(Graph& graph, const hardware::Cluster& fleet, const Plan& plan) {
  if (!fleet.mixed()) return estimate_step(analyze_plan(graph, fleet, plan), plan, fleet);
  return fleet_step_estimate(graph, fleet, plan, NumericGraph(graph));
}

StepEstimate fleet_step_estimate(Graph& graph, const hardware::Cluster& fleet, const Plan& plan, const NumericGraph& ng) {
  if (!fleet.mixed()) return estimate_step(PlanAnalyzer(graph, fleet, ng).totals(plan), plan, fleet);
  if (!plan.group_micro_batches.empty()) return shares_step_estimate(graph, fleet, plan, ng);
  PlanAnalyzer uniform(graph, fleet, ng);
  GroupAnalyzers on_group(graph, fleet, ng);
  return fleet_step_estimate(fleet, plan, uniform, on_group);
}

GroupedStageTotals stage_totals_on_groups(const hardware::Cluster& fleet, const Plan& plan,
                                          const std::vector<int>& stage_groups, PlanAnalyzer& uniform,
                                          GroupAnalyzers& on_group) {
  // Where every stage lies in one group, the uniform view is not analysed.
  const bool spanning = std::find(stage_groups.begin(), stage_groups.end(), -1) != stage_groups.end();
  GroupedStageTotals out;
  StageTotals& merged = out.totals;
  merged = spanning || stage_groups.empty() ? uniform.totals(plan) : on_group[stage_groups.front()].totals(plan);
  out.stage_memory.assign(stage_groups.size(), merged.device_memory);
  double after_step = 0;
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    if (std::find(stage_groups.begin(), stage_groups.end(), static_cast<int>(g)) == stage_groups.end()) continue;
    const StageTotals& t = on_group[g].totals(plan);
    for (std::size_t st = 0; st < stage_groups.size(); ++st) {
      if (stage_groups[st] != static_cast<int>(g)) continue;
      for (auto field : {&StageTotals::fwd_compute, &StageTotals::fwd_comm, &StageTotals::bwd_compute, &StageTotals::bwd_comm,
                         &StageTotals::grad_sync, &StageTotals::micro_batch_grad_sync, &StageTotals::gather,
                         &StageTotals::first_gather, &StageTotals::peak_memory})
        (merged.*field).at(st) = (t.*field).at(st);
      out.stage_memory[st] = t.device_memory;
    }
    after_step = std::max(after_step, t.after_step_s);
  }
  // The optimizer step waits for the slowest stage's: the uniform view's where a stage spans groups.
  if (!spanning) merged.after_step_s = after_step;
  return out;
}

StepEstimate fleet_step_estimate(const hardware::Cluster& fleet, const Plan& plan, PlanAnalyzer& uniform,
                                 GroupAnalyzers& on_group) {
  const GroupedStageTotals grouped = stage_totals_on_groups(fleet, plan, plan_stage_groups(plan, fleet), uniform, on_group);
  const StageTotals& merged = grouped.totals;
  const std::vector<double>& capacity = grouped.stage_memory;
  // One memory figure for the estimate: every stage's peak measured against its own devices,
  // the tightest margin kept (the capacity reported is that stage's).
  const std::size_t tightest =
      tightest_stage(merged.peak_memory, [&](std::size_t st) { return st < capacity.size() ? capacity[st] : merged.device_memory; });
  StepEstimate e = estimate_step(merged, plan, fleet);
  const bool per_stage = tightest < capacity.size();
  e.memory_capacity = per_stage ? capacity[tightest] : merged.device_memory;
  if (per_stage) e.peak_memory = merged.peak_memory[tightest];  // peak and capacity of one stage
  e.stage_memory_capacity = capacity;
  e.fits = true;
  for (std::size_t st = 0; st < capacity.size(); ++st) e.fits = e.fits && merged.peak_memory[st] <= capacity[st];
  const double peak = hardware::total_peak(fleet, plan.precision);
  if (e.step_time_s > 0 && peak > 0) {
    e.mfu = e.model_flops / (e.step_time_s * peak);
    e.hfu = e.hardware_flops / (e.step_time_s * peak);
  }
  return e;
}

}  // namespace symtensor::compiler
