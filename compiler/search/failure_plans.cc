#include "compiler/search/failure_plans.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "compiler/cost/estimate_order.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/search/megatron_search.h"
#include "hardware/cluster_loss.h"

namespace symtensor::compiler {
namespace {

// `left` with `nodes` whole nodes (itself when it has a single topology level).
hardware::Cluster with_nodes(const hardware::Cluster& left, int nodes) {
  if (left.levels.size() < 2 || nodes == hardware::node_count(left)) return left;
  return hardware::scale_cluster(left, nodes, std::nullopt);
}

GridPlan priced(Graph& graph, Plan plan, hardware::Cluster cluster, StepEstimate* estimate_out = nullptr) {
  GridPlan g;
  const PlanAnalysis analysis = analyze_plan(graph, cluster, plan);
  const StepEstimate step = estimate_step(analysis, plan, cluster);
  if (estimate_out) *estimate_out = step;
  g.plan = std::move(plan);
  g.step_time_s = step.step_time_s;
  g.fits = step.fits;
  g.gpus_used = cluster.num_devices();
  g.found = true;
  g.cluster = std::move(cluster);
  return g;
}

// The first node count from all of `left`'s down to one on which `make` builds a plan.
template <typename Make>
GridPlan on_largest_grid(Graph& graph, const hardware::Cluster& left, const std::string& who, Make make,
                         StepEstimate* estimate_out) {
  std::string why;
  const int nodes = hardware::node_count(left);
  for (int n = nodes; n >= 1; --n) {
    hardware::Cluster c = with_nodes(left, n);
    try {
      Plan plan = make(c);
      GridPlan g = priced(graph, std::move(plan), std::move(c), estimate_out);
      if (n < nodes)
        g.note = fmt::format("no {} plan on all {} nodes ({}); its largest valid grid is {} node{}", who, nodes, why, n,
                             n == 1 ? "" : "s");
      return g;
    } catch (const std::exception& e) {
      if (why.empty()) why = e.what();
    }
  }
  throw std::runtime_error(fmt::format("{}: no plan on any number of the {} nodes left of '{}' ({})", who, nodes, left.name, why));
}

GridPlan from_fleet_step(const FleetStep& step, const hardware::Cluster& fleet) {
  GridPlan g;
  g.plan = step.plan;
  g.cluster = cluster_of_plan(fleet, step.plan);
  g.step_time_s = step.step_time_s;
  g.fits = step.fits;
  g.simulated = true;
  g.found = step.found;
  g.gpus_used = g.cluster.num_devices();
  if (g.gpus_used < fleet.num_devices()) g.note = step.label;
  return g;
}

}  // namespace

void simulate_failure_plans(Graph& graph, FailurePlans& plans) {
  for (GridPlan* p : {&plans.symtensor, &plans.megatron}) {
    if (!p->found || p->simulated) continue;
    const PlanSimulation s = simulate_plan(graph, p->plan, p->cluster);
    p->step_time_s = s.report.step_time_s;
    p->fits = s.report.fits;
    p->simulated = true;
  }
}

FailurePlans failure_plans_of_fleet(const FleetSearchResult& r, const hardware::Cluster& left) {
  FailurePlans out;
  out.left = left;
  out.gpus_left = left.num_devices();
  out.symtensor = from_fleet_step(r.plan, left);
  try {
    out.megatron = from_fleet_step(r.megatron.best(), left);
  } catch (const std::exception& e) {
    out.megatron.note = e.what();
  }
  return out;
}

GridPlan megatron_largest_grid(Graph& graph, const hardware::Cluster& left, const StrategyOptions& options) {
  return on_largest_grid(
      graph, left, "Megatron", [&](const hardware::Cluster& c) { return make_megatron_best_plan(graph, c, options); }, nullptr);
}

FailurePlans plans_after_loss(Graph& graph, const hardware::Cluster& left, const StrategyOptions& options) {
  FailurePlans out;
  out.left = left;
  out.gpus_left = left.num_devices();
  if (left.mixed()) return failure_plans_of_fleet(fleet_search(graph, left, options), left);
  std::optional<GridPlan> megatron;
  StepEstimate megatron_step;
  std::string megatron_error;
  try {
    megatron = on_largest_grid(
        graph, left, "Megatron", [&](const hardware::Cluster& c) { return make_megatron_best_plan(graph, c, options); },
        &megatron_step);
  } catch (const std::exception& e) {
    megatron_error = e.what();
  }
  StepEstimate own_step;
  std::optional<GridPlan> own;
  std::string own_error;
  try {
    own = on_largest_grid(
        graph, left, "SymTensor", [&](const hardware::Cluster& c) { return make_symtensor_plan(graph, c, options); },
        &own_step);
  } catch (const std::exception& e) {
    own_error = e.what();
  }
  if (!own && !megatron) throw std::runtime_error(own_error);
  if (megatron) out.megatron = *megatron;
  else out.megatron.note = megatron_error;
  if (own && (!megatron || !better_estimate(megatron_step, own_step))) {
    out.symtensor = std::move(*own);
  } else {
    out.symtensor = out.megatron;  // SymTensor's space holds Megatron-best's plan; its own search found none faster
    out.symtensor.note = fmt::format("Megatron-best's plan{} is faster than the search's own", out.megatron.gpus_used < out.gpus_left ? " on its grid" : "");
  }
  out.symtensor.plan.strategy = "symtensor";
  return out;
}

}  // namespace symtensor::compiler
