#include "compiler/report/results.h"

#include "compiler/base/units.h"

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

double StrategyResult::stage_capacity_bytes(std::size_t s) const {
  // Simulated: each stage's own devices, as the simulator held it (a fleet's batch shares
  // make one stage per pipeline stage and group, which the estimate's stages are not).
  if (simulated && s < simulation.stages.size() && simulation.stages[s].memory_capacity_bytes > 0)
    return simulation.stages[s].memory_capacity_bytes;
  return estimate.stage_memory_capacity.empty() ? memory_capacity_bytes : estimate.stage_capacity(s);
}

std::size_t StrategyResult::tightest_stage() const {
  return compiler::tightest_stage(stage_peak_memory(), [this](std::size_t s) { return stage_capacity_bytes(s); });
}

double StrategyResult::peak_memory_bytes() const {
  const std::vector<double> peaks = stage_peak_memory();
  return peaks.empty() ? 0 : peaks[tightest_stage()];
}

std::vector<DeviceKind> device_kinds(const hardware::Cluster& cluster) {
  if (!cluster.mixed()) return {{cluster.device.name, cluster.num_devices(), cluster.device.memory_bytes}};
  std::vector<DeviceKind> kinds;
  for (const hardware::DeviceGroup& g : cluster.groups) kinds.push_back({g.device.name, g.devices, g.device.memory_bytes});
  return kinds;
}

std::string describe_devices(const std::vector<DeviceKind>& kinds) {
  int devices = 0;
  for (const DeviceKind& d : kinds) devices += d.devices;
  if (kinds.size() == 1) return std::to_string(devices) + " devices, " + format_bytes(kinds[0].memory_bytes) + " each";
  std::string out = std::to_string(devices) + " devices:";
  for (std::size_t k = 0; k < kinds.size(); ++k)
    out += (k ? ", " : " ") + std::to_string(kinds[k].devices) + " " + kinds[k].name + " of " + format_bytes(kinds[k].memory_bytes);
  return out;
}

}  // namespace symtensor::compiler
