#pragma once
// The plan a recipe stands for: the Megatron layout of its knobs (compiler/strategies/
// megatron.h) with its ZeRO stage, and how it differs from another plan of the same graph,
// operator by operator (cut ways per loop, pipeline stage).
#include <optional>
#include <string>
#include <vector>

#include "compiler/export/recipe.h"

namespace symtensor::compiler {

struct RecipePlan {
  std::optional<Plan> plan;  // empty when the recipe has no Megatron layout (error says why)
  std::string error;
};

RecipePlan build_recipe_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& original, const ParallelRecipe& recipe);

// One line per GEMM or attention operator whose cut differs (at most `max_lines`, then a
// count), one line for the other operators that differ, one for nodes on other stages.
std::vector<std::string> plan_differences(Graph& graph, const hardware::Cluster& cluster, const Plan& original,
                                          const Plan& recipe_plan, std::size_t max_lines = 20);

}  // namespace symtensor::compiler
