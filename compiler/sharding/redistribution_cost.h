#pragma once
// The time a redistribution takes: the sum of its collectives' alpha-beta costs
// (hardware::collective_time, or hardware::collective_time_expr for formulas).
#include <vector>

#include "compiler/sharding/redistribution.h"
#include "hardware/collective_expr.h"

namespace symtensor::compiler {

// Seconds, bytes evaluated after substituting `bindings`; throws naming the step if some
// bytes stay symbolic.
double redistribution_time(const Redistribution& r, const hardware::Cluster& cluster,
                           const GiNaC::exmap& bindings = {},
                           hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::automatic);

// Bandwidth, latency and mesh links of every cluster level as numbers, innermost first
// (ranks unset).
std::vector<hardware::LevelSymbols> numeric_levels(const hardware::Cluster& cluster);

// The same cost as an expression. `levels`: one entry per cluster level, innermost first,
// whose bandwidth and latency are used (numbers from numeric_levels, or symbols from
// hardware::make_level_symbols); each step's ranks per level are the product of its axes'
// sizes in r.axis_sizes, so symbolic mesh sizes stay symbolic.
GiNaC::ex redistribution_time_expr(const Redistribution& r, const hardware::DeviceMesh& mesh,
                                   const std::vector<hardware::LevelSymbols>& levels,
                                   hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::automatic);

}  // namespace symtensor::compiler
