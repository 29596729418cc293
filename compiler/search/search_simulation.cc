#include "compiler/search/search_simulation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "compiler/lowering/simulate_plan.h"

namespace symtensor::compiler {
namespace {

SearchSimulation read(const SimulationReport& report) {
  SearchSimulation out;
  out.step_time_s = report.step_time_s;
  out.fits = report.fits;
  for (const StageReport& r : report.stages) {
    out.stage_compute_s.push_back(r.compute_s);
    out.stage_group.push_back(r.group);
  }
  return out;
}

}  // namespace

SearchSimulation simulate_for_search(SimulationAnalyzers& on, const Plan& plan) {
  sim::SimOptions o;
  o.record_trace = false;  // the rank classes' summaries give all the search reads
  o.trusted_program = true;  // valid by construction (tests/compiler/lean_simulation_test.cc)
  return read(simulate_plan_report(plan, on.uniform, on.on_groups, {}, o));
}

namespace {

// Whether a training step of the plan's micro-batches may be simulated as shorter steps of the
// same micro-batch: 1F1B (GPipe holds every micro-batch in flight), one count for every
// replica (batch shares differ per group), a batch dim to shorten, and more than `least`
// micro-batches per stage.
bool shortenable(const Plan& plan, const NumericGraph& ng, int least) {
  const double global_batch = plan.global_batch > 0 ? plan.global_batch : ng.batch_binding();
  return plan.mode == ExecutionMode::train && plan.group_micro_batches.empty() && plan.schedule != Schedule::gpipe &&
         ng.batch_symbol() && global_batch > 0 && plan.micro_batches > least * std::max(plan.pipeline_stages(), 1);
}

// The plan's step at `micro_batches` micro-batches of its own size (the global batch shrinks with their count).
SearchSimulation simulate_at(SimulationAnalyzers& on, const Plan& plan, int micro_batches) {
  const double global_batch = plan.global_batch > 0 ? plan.global_batch : on.uniform.numeric().batch_binding();
  Plan shorter = plan;
  shorter.micro_batches = micro_batches;
  shorter.global_batch = global_batch / plan.micro_batches * micro_batches;
  return simulate_for_search(on, shorter);
}

// The plan's steps at 2p and 3p micro-batches of its own size.
ShorterSteps shorter_steps(SimulationAnalyzers& on, const Plan& plan, int p) {
  return {simulate_at(on, plan, 2 * p), simulate_at(on, plan, 3 * p), p, plan.micro_batches};
}

// `b` extended to the plan's m micro-batches along its difference from `a` (a and b: steps of
// ma < mb micro-batches).
SearchSimulation extended(const SearchSimulation& a, int ma, SearchSimulation b, int mb, int m) {
  const double rest = static_cast<double>(m - mb) / (mb - ma);
  auto extend = [&](double x1, double x2) { return x2 + rest * (x2 - x1); };
  b.step_time_s = extend(a.step_time_s, b.step_time_s);
  for (std::size_t s = 0; s < b.stage_compute_s.size() && s < a.stage_compute_s.size(); ++s)
    b.stage_compute_s[s] = extend(a.stage_compute_s[s], b.stage_compute_s[s]);
  b.fits = a.fits && b.fits;
  b.extended = true;
  return b;
}

}  // namespace

SearchSimulation simulate_shortened(SimulationAnalyzers& on, const Plan& plan, ShorterSteps* steps) {
  if (!shortenable(plan, on.uniform.numeric(), 4)) return simulate_for_search(on, plan);
  const int p = std::max(plan.pipeline_stages(), 1);
  ShorterSteps made = shorter_steps(on, plan, p);
  const SearchSimulation e = extended(made.at_2p, 2 * p, made.at_3p, 3 * p, plan.micro_batches);
  if (steps) *steps = std::move(made);
  return e;
}

std::optional<SearchSimulation> periodic_extension(const SearchSimulation& at_2p, const SearchSimulation& at_3p,
                                                   const SearchSimulation& at_4p, int p, int m) {
  auto evenly_spaced = [](double x1, double x2, double x3) {
    return std::abs((x3 - x2) - (x2 - x1)) <= kPeriodTolerance * std::abs(x3);
  };
  const std::size_t stages = at_4p.stage_compute_s.size();
  if (at_2p.fits != at_4p.fits || at_3p.fits != at_4p.fits || at_2p.stage_compute_s.size() != stages ||
      at_3p.stage_compute_s.size() != stages || !evenly_spaced(at_2p.step_time_s, at_3p.step_time_s, at_4p.step_time_s))
    return std::nullopt;
  for (std::size_t s = 0; s < stages; ++s)
    if (!evenly_spaced(at_2p.stage_compute_s[s], at_3p.stage_compute_s[s], at_4p.stage_compute_s[s])) return std::nullopt;
  return extended(at_3p, 3 * p, at_4p, 4 * p, m);
}

SearchSimulation simulate_periodic(SimulationAnalyzers& on, const Plan& plan, const ShorterSteps* known) {
  const int p = std::max(plan.pipeline_stages(), 1);
  // Three shortened steps cost 9p micro-batches: cheaper than the whole step above that. The
  // extension adds whole periods of p micro-batches.
  if (!shortenable(plan, on.uniform.numeric(), 9) || plan.micro_batches % p != 0) return simulate_for_search(on, plan);
  if (known && (known->p != p || known->micro_batches != plan.micro_batches)) known = nullptr;
  std::optional<SearchSimulation> e;
  try {
    std::optional<ShorterSteps> made;
    if (!known) known = &made.emplace(shorter_steps(on, plan, p));
    e = periodic_extension(known->at_2p, known->at_3p, simulate_at(on, plan, 4 * p), p, plan.micro_batches);
  } catch (const std::exception&) {
    e.reset();  // a shorter step the simulator refuses: the whole one says why, or runs
  }
  return e ? *e : simulate_for_search(on, plan);
}

}  // namespace symtensor::compiler
