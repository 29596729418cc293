#pragma once
// A search's analyzers of one fleet on each group's device (hardware::fleet_on_group_device):
// what prices a stage or a batch share lying in that group, and times it in a simulation.
#include <cstddef>
#include <memory>
#include <vector>

#include "compiler/cost/plan_analysis.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

class GroupAnalyzers {
 public:
  // `graph`, `fleet` and `ng` (NumericGraph(graph)) must outlive it.
  GroupAnalyzers(Graph& graph, const hardware::Cluster& fleet, const NumericGraph& ng);
  ~GroupAnalyzers();
  PlanAnalyzer& operator[](std::size_t g) { return *analyzers_.at(g); }
  const hardware::Cluster& view(std::size_t g) const { return *views_.at(g); }

 private:
  std::vector<std::unique_ptr<hardware::Cluster>> views_;
  std::vector<std::unique_ptr<PlanAnalyzer>> analyzers_;
};

}  // namespace symtensor::compiler
