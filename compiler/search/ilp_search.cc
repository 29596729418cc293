#include "compiler/search/ilp_search.h"

#include <stdexcept>

#include "compiler/analysis/model_stats.h"

namespace symtensor::compiler {

SearchResult ilp_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  int heavy = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id)
    heavy += is_heavy(iteration_space_of(graph, id).kind) ? 1 : 0;
  if (heavy > kMaxIlpHeavyOperators)
    throw std::runtime_error("ilp: '" + graph.source + "' has " + std::to_string(heavy) + " heavy operators, above the limit of " +
                             std::to_string(kMaxIlpHeavyOperators) + " for the exact search (use --strategy symtensor)");
  SearchOptions s;
  s.solver = LevelSolver::ilp;
  s.refine = false;
  return symtensor_search(graph, cluster, options, s);
}

Plan make_ilp_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  return ilp_search(graph, cluster, options).plan;
}

}  // namespace symtensor::compiler
