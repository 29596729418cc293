#pragma once
// The training frameworks a plan exports to (`export --to`, `compile --export`), and which of
// them a software stack (`--stack`) is: the target whose limits bound the searches
// (StrategyOptions::bound; compiler/export/target_limits.h states them).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace symtensor::compiler {

enum class ExportTarget { megatron, nemo, torchtitan, deepspeed, dtensor, jax };
std::string_view to_string(ExportTarget t);
// Throws "--to: unknown target 'x' (megatron, nemo, torchtitan, deepspeed, dtensor, jax)".
ExportTarget parse_export_target(std::string_view text);
std::vector<std::string> export_target_names();

// The target a stack writes (hardware::Stack::name): megatron, nemo, torchtitan, deepspeed and
// jax are their own; any other stack (a serving engine, a stack file of another name) none.
std::optional<ExportTarget> stack_export_target(std::string_view stack_name);

}  // namespace symtensor::compiler
