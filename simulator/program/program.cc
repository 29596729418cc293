#include "simulator/program/program.h"

#include <array>

namespace symtensor::sim {

namespace {
constexpr std::array<std::pair<TaskKind, std::string_view>, 7> kKindNames{{
    {TaskKind::compute, "compute"},
    {TaskKind::optimizer, "optimizer"},
    {TaskKind::collective, "collective"},
    {TaskKind::send, "send"},
    {TaskKind::recv, "recv"},
    {TaskKind::alloc, "alloc"},
    {TaskKind::free, "free"},
}};
}  // namespace

std::string_view to_string(TaskKind k) {
  for (const auto& [kind, name] : kKindNames)
    if (kind == k) return name;
  return "?";
}

std::optional<TaskKind> parse_task_kind(std::string_view text) {
  for (const auto& [kind, name] : kKindNames)
    if (name == text) return kind;
  return std::nullopt;
}

int Program::num_ranks() const {
  int n = 1;
  for (const auto& a : mesh) n *= a.size;
  return n;
}

const RankClass* Program::find_class(std::string_view name) const {
  for (const auto& c : rank_classes)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace symtensor::sim
