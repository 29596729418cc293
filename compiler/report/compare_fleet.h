#pragma once
// `compare` on a mixed fleet (hardware::Cluster::groups, issue #32): the rows a fleet gets.
// symtensor is the fleet search's plan (fleet_search: stages placed by speed, uneven layers,
// or Megatron-best's own plan when that wins); megatron without knobs is Megatron-best as the
// issue defines it, the faster of (a) its best plan on the fastest usable group alone and (b)
// its best plan over every GPU at the slowest group's pace (megatron_fleet_best, computed by
// the same search); the others (dp, zero3, megatron with knobs) give every rank the same share
// and so run on the fleet's uniform view (the slowest device, the least memory, the slowest
// links), or are refused in one line saying so.
#include <optional>
#include <string>

#include "compiler/report/evaluate.h"
#include "compiler/search/fleet_search.h"

namespace symtensor::compiler {

struct FleetEvaluatedPlan {
  EvaluatedPlan plan;
  hardware::Cluster cluster;  // what the plan runs on: the fleet, or one group of it
};

// One row's plan on the fleet. `search` is the fleet search's result, made on the first call
// that needs it (symtensor, or megatron without knobs) and kept for the others and the report.
// Throws one line when no plan can be made.
FleetEvaluatedPlan evaluate_on_fleet(const std::string& strategy, Graph& graph, const hardware::Cluster& fleet,
                                     const StrategyOptions& options, std::optional<FleetSearchResult>& search,
                                     double& search_time_s);

}  // namespace symtensor::compiler
