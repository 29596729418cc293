#pragma once
// One emitter per export target (compiler/export/emit_<target>.cc): the recipe (already
// adjusted to what the target can express) as the target's own file. `header` is the
// export's notes (plan, predicted costs, what is not expressible), one line each; targets
// whose format has comments write them on top.
#include <string>
#include <string_view>
#include <vector>

#include "compiler/export/model_architecture.h"
#include "compiler/export/recipe.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct ExportContext {
  Graph& graph;
  const hardware::Cluster& cluster;
  const Plan& plan;  // the plan the file expresses (the nearest one when the original is not expressible)
  const ParallelRecipe& recipe;
  const ModelArchitecture& arch;  // what the model is, read from the graph
  std::vector<std::string> header;
};

// Each line prefixed by `prefix` ("# ").
std::string comment_block(const std::vector<std::string>& lines, std::string_view prefix);
// Megatron/NeMo precision flag name: "bf16", "fp16" or "" (fp32/tf32: none).
std::string_view megatron_precision(hardware::Precision p);

std::string emit_megatron(const ExportContext& c);
std::string emit_nemo(const ExportContext& c);
std::string emit_torchtitan(const ExportContext& c);
// The Python module that adds the model's flavor to torchtitan's llama3 (experimental.
// custom_import), or "" when a bundled flavor is the model.
std::string emit_torchtitan_flavor(const ExportContext& c);
inline constexpr const char* kTitanFlavorModule = "symtensor_flavor";
std::string emit_deepspeed(const ExportContext& c);
std::string emit_deepspeed_pipeline(const ExportContext& c);  // Python, beside the JSON
std::string emit_dtensor(const ExportContext& c);
std::string emit_jax(const ExportContext& c);

}  // namespace symtensor::compiler
