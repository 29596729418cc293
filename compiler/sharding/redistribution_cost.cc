#include "compiler/sharding/redistribution_cost.h"

#include <sstream>
#include <stdexcept>

namespace symtensor::compiler {

double redistribution_time(const Redistribution& r, const hardware::Cluster& cluster, const GiNaC::exmap& bindings,
                           hardware::CollectiveAlgorithm algorithm) {
  double seconds = 0;
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const auto& step = r.steps[i];
    const auto kind = step.collective();
    if (!kind) continue;
    const GiNaC::ex bytes = GiNaC::evalf(step.bytes.subs(bindings));
    if (!GiNaC::is_a<GiNaC::numeric>(bytes) || !GiNaC::ex_to<GiNaC::numeric>(bytes).is_real()) {
      std::ostringstream os;
      os << "redistribution step " << i << " (" << to_string(step.kind) << "): bytes " << step.bytes
         << " still symbolic after binding";
      throw std::runtime_error(os.str());
    }
    seconds += hardware::collective_time(cluster, *kind, step.group, GiNaC::ex_to<GiNaC::numeric>(bytes).to_double(),
                                         algorithm)
                   .seconds;
  }
  return seconds;
}

std::vector<hardware::LevelSymbols> numeric_levels(const hardware::Cluster& cluster) {
  std::vector<hardware::LevelSymbols> levels;
  for (const auto& level : cluster.levels)
    levels.push_back({GiNaC::numeric(level.size), GiNaC::numeric(level.bandwidth), GiNaC::numeric(level.latency_s),
                      level.mesh_links()});
  return levels;
}

GiNaC::ex redistribution_time_expr(const Redistribution& r, const hardware::DeviceMesh& mesh,
                                   const std::vector<hardware::LevelSymbols>& levels,
                                   hardware::CollectiveAlgorithm algorithm) {
  GiNaC::ex total = 0;
  for (const auto& step : r.steps) {
    const auto kind = step.collective();
    if (!kind) continue;
    if (levels.size() != step.group.ranks_per_level.size())
      throw std::runtime_error("redistribution cost: " + std::to_string(levels.size()) + " levels given for a cluster of " +
                               std::to_string(step.group.ranks_per_level.size()));
    std::vector<hardware::LevelSymbols> spanned;
    for (std::size_t l = 0; l < levels.size(); ++l) {
      if (step.group.ranks_per_level[l] <= 1) continue;
      GiNaC::ex ranks = 1;
      for (int a : step.axes)
        if (mesh.axes().at(static_cast<std::size_t>(a)).level == static_cast<int>(l))
          ranks *= r.axis_sizes.at(static_cast<std::size_t>(a));
      spanned.push_back({ranks, levels[l].bandwidth, levels[l].latency, levels[l].mesh_links});
    }
    total += hardware::collective_time_expr(*kind, algorithm, spanned, step.bytes);
  }
  return total;
}

}  // namespace symtensor::compiler
