#pragma once
// `--strategy ilp`: the SymTensor search with every level's CutProblem solved exactly by
// CBC (compiler/search/ilp_solver.h) instead of greedily, and no refinement moves: the
// optimality check of the level step on small graphs. Graphs with more than
// kMaxIlpHeavyOperators heavy operators are refused.
#include "compiler/search/symtensor_search.h"

namespace symtensor::compiler {

inline constexpr int kMaxIlpHeavyOperators = 256;

SearchResult ilp_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);
Plan make_ilp_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);

}  // namespace symtensor::compiler
