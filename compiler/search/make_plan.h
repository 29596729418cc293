#pragma once
// make_plan: one entry point for every way of making a Plan, the dispatcher above the
// searches it names (the strategy names and options are below, in
// compiler/strategies/strategy.h).
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// "symtensor", "ilp", "megatron" (options.megatron's knobs, or Megatron's best when empty),
// "dp", "zero3", "file" (options.plan_file). Throws one line for an unknown strategy
// (listing the known ones) and for a plan that cannot be built (naming the knob or node).
Plan make_plan(const std::string& strategy, Graph& graph, const hardware::Cluster& cluster,
               const StrategyOptions& options);

}  // namespace symtensor::compiler
