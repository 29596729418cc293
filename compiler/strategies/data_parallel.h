#pragma once
// Data parallelism: every node's batch loop (the loop whose extent has the `batch` dim as
// a factor) cut over every mesh axis, one axis per topology level, no pipeline; the nodes
// without a batch loop take their cut by propagation. ZeRO-3 is the same plan with the
// model states sharded (zero_stage 3).
#include <vector>

#include "compiler/strategies/propagation.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

// Throws when the graph has no `batch` dim or the bound batch is not divisible by the
// device count.
Plan make_data_parallel_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             int zero_stage);
// The same with the graph's iteration spaces (node_iteration_spaces) at hand and, from a
// caller that propagates many plans of the graph (the search), its propagation cache.
Plan make_data_parallel_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             int zero_stage, const std::vector<IterationSpace>& spaces, PropagationCache* cache = nullptr);

}  // namespace symtensor::compiler
