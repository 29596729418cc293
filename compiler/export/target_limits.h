#pragma once
// What each export target cannot express of a recipe: one line per item, and the recipe
// changed to the nearest one the target can write (the world size stays: a degree that
// goes away is folded into data parallelism).
#include <string>
#include <vector>

#include "compiler/export/export.h"
#include "compiler/export/recipe.h"

namespace symtensor::compiler {

std::vector<std::string> apply_target_limits(ExportTarget target, ExecutionMode mode, ParallelRecipe& recipe);

}  // namespace symtensor::compiler
