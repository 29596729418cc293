#include "compiler/search/ilp_search.h"

namespace symtensor::compiler {

SearchResult ilp_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  SearchOptions s;
  s.max_heavy_operators = kMaxIlpHeavyOperators;
  s.solver = LevelSolver::ilp;
  s.refine = false;
  return symtensor_search(graph, cluster, options, s);
}

Plan make_ilp_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  return ilp_search(graph, cluster, options).plan;
}

}  // namespace symtensor::compiler
