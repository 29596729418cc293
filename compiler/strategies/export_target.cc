// The export targets' names (compiler/strategies/export_target.h).
#include "compiler/strategies/export_target.h"

#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::compiler {
namespace {

constexpr ExportTarget kTargets[] = {ExportTarget::megatron,  ExportTarget::nemo,    ExportTarget::torchtitan,
                                     ExportTarget::deepspeed, ExportTarget::dtensor, ExportTarget::jax};

}  // namespace

std::string_view to_string(ExportTarget t) {
  switch (t) {
    case ExportTarget::megatron: return "megatron";
    case ExportTarget::nemo: return "nemo";
    case ExportTarget::torchtitan: return "torchtitan";
    case ExportTarget::deepspeed: return "deepspeed";
    case ExportTarget::dtensor: return "dtensor";
    case ExportTarget::jax: return "jax";
  }
  return "?";
}

std::vector<std::string> export_target_names() {
  std::vector<std::string> names;
  for (ExportTarget t : kTargets) names.emplace_back(to_string(t));
  return names;
}

ExportTarget parse_export_target(std::string_view text) {
  for (ExportTarget t : kTargets)
    if (to_string(t) == text) return t;
  throw std::runtime_error(fmt::format("--to: unknown target '{}' ({})", text, fmt::join(export_target_names(), ", ")));
}

std::optional<ExportTarget> stack_export_target(std::string_view stack_name) {
  for (ExportTarget t : {ExportTarget::megatron, ExportTarget::nemo, ExportTarget::torchtitan, ExportTarget::deepspeed, ExportTarget::jax})
    if (to_string(t) == stack_name) return t;
  return std::nullopt;
}

}  // namespace symtensor::compiler
