#include "compiler/search/search_simulation.h"

#include <algorithm>

#include "compiler/lowering/simulate_plan.h"

namespace symtensor::compiler {
namespace {

SearchSimulation read(const PlanSimulation& s) {
  SearchSimulation out;
  out.step_time_s = s.report.step_time_s;
  out.fits = s.report.fits;
  for (const StageReport& r : s.report.stages) {
    out.stage_compute_s.push_back(r.compute_s);
    out.stage_group.push_back(r.group);
  }
  return out;
}

}  // namespace

SearchSimulation simulate_for_search(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                     const NumericGraph& ng) {
  sim::SimOptions o;
  o.record_trace = false;  // the rank classes' summaries give all the search reads
  o.trusted_program = true;  // valid by construction (tests/compiler/lean_simulation_test.cc)
  return read(simulate_plan_lean(graph, plan, cluster, {}, o, &ng));
}

SearchSimulation simulate_shortened(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                    const NumericGraph& ng) {
  const int per_round = std::max(plan.pipeline_stages(), 1);
  const int m = plan.micro_batches;
  const double global_batch = plan.global_batch > 0 ? plan.global_batch : ng.batch_binding();
  const bool extend = plan.mode == ExecutionMode::train && plan.group_micro_batches.empty() &&
                      plan.schedule != Schedule::gpipe && ng.batch_symbol() && global_batch > 0 && m > 4 * per_round;
  if (!extend) return simulate_for_search(graph, plan, cluster, ng);
  // Two shorter steps of the same micro-batch: the global batch shrinks with their count.
  const int m1 = 2 * per_round, m2 = 3 * per_round;
  Plan shorter = plan;
  auto at = [&](int micro_batches) {
    shorter.micro_batches = micro_batches;
    shorter.global_batch = global_batch / m * micro_batches;
    return simulate_for_search(graph, shorter, cluster, ng);
  };
  const SearchSimulation a = at(m1);
  SearchSimulation b = at(m2);
  const double rest = static_cast<double>(m - m2) / (m2 - m1);
  auto extended = [&](double x1, double x2) { return x2 + rest * (x2 - x1); };
  b.step_time_s = extended(a.step_time_s, b.step_time_s);
  for (std::size_t s = 0; s < b.stage_compute_s.size() && s < a.stage_compute_s.size(); ++s)
    b.stage_compute_s[s] = extended(a.stage_compute_s[s], b.stage_compute_s[s]);
  b.fits = a.fits && b.fits;
  b.extended = true;
  return b;
}

}  // namespace symtensor::compiler
