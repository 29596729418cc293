#include "compiler/search/fleet_estimate.h"

#include <algorithm>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/search/fleet_search.h"

namespace symtensor::compiler {

StepEstimate fleet_step_estimate(Graph& graph, const hardware::Cluster& fleet, const Plan& plan) {
  if (!fleet.mixed()) return estimate_step(analyze_plan(graph, fleet, plan), plan, fleet);
  const NumericGraph ng(graph);
  const std::vector<int> stage_groups = plan_stage_groups(plan, fleet);
  PlanAnalyzer uniform(graph, fleet, ng);
  StageTotals merged = uniform.totals(plan);
  std::vector<double> capacity(stage_groups.size(), merged.device_memory);
  double after_step = 0;
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    if (std::find(stage_groups.begin(), stage_groups.end(), static_cast<int>(g)) == stage_groups.end()) continue;
    hardware::Cluster view = fleet;
    view.device = fleet.groups[g].device;
    PlanAnalyzer on_group(graph, view, ng);
    const StageTotals& t = on_group.totals(plan);
    for (std::size_t st = 0; st < stage_groups.size(); ++st) {
      if (stage_groups[st] != static_cast<int>(g)) continue;
      for (auto field : {&StageTotals::fwd_compute, &StageTotals::fwd_comm, &StageTotals::bwd_compute, &StageTotals::bwd_comm,
                         &StageTotals::grad_sync, &StageTotals::gather, &StageTotals::first_gather, &StageTotals::peak_memory})
        (merged.*field).at(st) = (t.*field).at(st);
      capacity[st] = t.device_memory;
    }
    after_step = std::max(after_step, t.after_step_s);
  }
  // The optimizer step waits for the slowest stage's: the uniform view's where a stage spans groups.
  if (std::find(stage_groups.begin(), stage_groups.end(), -1) == stage_groups.end()) merged.after_step_s = after_step;
  // One memory figure for the estimate: every stage's peak measured against its own devices,
  // the tightest margin kept (the capacity reported is that stage's).
  std::size_t tightest = 0;
  for (std::size_t st = 1; st < capacity.size(); ++st)
    if (merged.peak_memory[st] - capacity[st] > merged.peak_memory[tightest] - capacity[tightest]) tightest = st;
  StepEstimate e = estimate_step(merged, plan, fleet);
  e.memory_capacity = capacity.empty() ? merged.device_memory : capacity[tightest];
  if (!capacity.empty()) e.peak_memory = merged.peak_memory[tightest];  // peak and capacity of one stage
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
