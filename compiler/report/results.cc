#include "compiler/report/results.h"

namespace symtensor::compiler {

double StrategyResult::step_time_s() const { return simulated ? simulation.step_time_s : estimate.step_time_s; }
double StrategyResult::samples_per_s() const { return simulated ? simulation.samples_per_s : estimate.samples_per_s; }
double StrategyResult::mfu() const { return simulated ? simulation.mfu : estimate.mfu; }
std::optional<double> StrategyResult::mfu_6n() const { return simulated ? simulation.mfu_6n : estimate.mfu_6n; }
bool StrategyResult::fits() const { return ok && (simulated ? simulation.fits : estimate.fits); }
std::string StrategyResult::evaluator() const { return simulated ? "simulation" : "analytic"; }

std::vector<double> StrategyResult::stage_peak_memory() const {
  if (!simulated) return estimate.stage_peak_memory;
  std::vector<double> out;
  for (const auto& stage : simulation.stages) out.push_back(stage.peak_memory_bytes);
  return out;
}

double StrategyResult::peak_memory_bytes() const {
  double peak = 0;
  for (double m : stage_peak_memory()) peak = std::max(peak, m);
  return peak;
}

}  // namespace symtensor::compiler
