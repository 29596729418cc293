#include "compiler/cost/group_analyzers.h"

namespace symtensor::compiler {

GroupAnalyzers::GroupAnalyzers(Graph& graph, const hardware::Cluster& fleet, const NumericGraph& ng) {
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    views_.push_back(std::make_unique<hardware::Cluster>(hardware::fleet_on_group_device(fleet, static_cast<int>(g))));
    analyzers_.push_back(std::make_unique<PlanAnalyzer>(graph, *views_.back(), ng));
  }
}

GroupAnalyzers::~GroupAnalyzers() = default;

}  // namespace symtensor::compiler
