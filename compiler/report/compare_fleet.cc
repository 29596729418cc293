#include "compiler/report/compare_fleet.h"

#include <chrono>
#include <stdexcept>

#include "compiler/report/plan_label.h"
#include "compiler/search/fleet_estimate.h"

namespace symtensor::compiler {
namespace {

// A plan the fleet search made (and simulated), priced analytically on the cluster it runs on,
// each stage on its own group's device.
FleetEvaluatedPlan from_fleet_step(const FleetStep& step, const std::string& strategy, Graph& graph,
                                   const hardware::Cluster& fleet, double search_time_s, int simulations) {
  if (!step.found) throw std::runtime_error("no " + strategy + " plan was found on the mixed fleet " + fleet.name);
  FleetEvaluatedPlan out{EvaluatedPlan{}, cluster_of_plan(fleet, step.plan)};
  EvaluatedPlan& e = out.plan;
  e.plan = step.plan;
  e.label = strategy.empty() ? step.label : strategy + " " + step.label;
  e.search_time_s = search_time_s;
  e.evaluations = simulations;
  e.analysis = analyze_plan(graph, out.cluster, e.plan);
  e.estimate = fleet_step_estimate(graph, out.cluster, e.plan);
  return out;
}

}  // namespace

FleetEvaluatedPlan evaluate_on_fleet(const std::string& strategy, Graph& graph, const hardware::Cluster& fleet,
                                     const StrategyOptions& options, std::optional<FleetSearchResult>& search,
                                     double& search_time_s) {
  const bool searched = strategy == "symtensor" || (strategy == "megatron" && options.megatron.empty());
  if (searched) {
    if (!search) {
      const auto t0 = std::chrono::steady_clock::now();
      search = fleet_search(graph, fleet, options);
      search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (strategy == "symtensor") return from_fleet_step(search->plan, "symtensor", graph, fleet, search_time_s, search->simulations);
    const MegatronFleetBest& m = search->megatron;
    // Its labels say which: "Megatron-best on dgx-h100x1 alone (...)" or "... uniform over all 24 GPUs ...".
    const FleetStep& best = m.subset.fits || m.uniform.fits ? m.best() : (m.subset.found ? m.subset : m.uniform);
    return from_fleet_step(best, "", graph, fleet, search_time_s, m.simulations);
  }
  // Every rank the same share: the fleet's uniform view.
  try {
    return FleetEvaluatedPlan{evaluate_strategy(strategy, graph, fleet, options), fleet};
  } catch (const std::exception& ex) {
    throw std::runtime_error("on the mixed fleet " + fleet.name + " " + strategy +
                             " gives every rank the same share at the slowest group's pace: " + ex.what());
  }
}

}  // namespace symtensor::compiler
