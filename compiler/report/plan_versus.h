#pragma once
// Why compare's chosen plan beats the next one (the fastest other plan that fits): by how much,
// in which parts of the step, and what the two plans do differently; and which faster plans
// were left out because they do not fit. Lines of text for report.md and report.html's "plan
// explained" section.
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/report/results.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// Empty when no plan was chosen. `layers`: the model's transformer layers (0: none found).
std::vector<std::string> why_chosen(const CompareResults& results, Graph& graph, const hardware::Cluster& cluster,
                                    int layers);

}  // namespace symtensor::compiler
