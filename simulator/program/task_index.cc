#include "simulator/program/task_index.h"

#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::sim {

namespace {
constexpr int kRecentTasks = 4;  // tasks before the asking one compared first
}  // namespace

int find_dependency(const RankClass& rc, const TaskIndex& index, int task, const std::string& id) {
  for (int k = task - 1; k >= 0 && k >= task - kRecentTasks; --k)
    if (rc.tasks[k].id == id) return k;
  const auto it = index.find(id);
  return it == index.end() ? -1 : it->second;
}

ProgramIndex index_program(const Program& program) {
  ProgramIndex out;
  out.tasks.resize(program.rank_classes.size());
  out.deps.resize(program.rank_classes.size());
  for (size_t c = 0; c < program.rank_classes.size(); ++c) {
    const RankClass& rc = program.rank_classes[c];
    TaskIndex& index = out.tasks[c];
    index.reserve(rc.tasks.size());
    for (size_t i = 0; i < rc.tasks.size(); ++i) index.emplace(rc.tasks[i].id, static_cast<int>(i));
    for (size_t i = 0; i < rc.tasks.size(); ++i)
      for (const auto& d : rc.tasks[i].deps) {
        const int k = find_dependency(rc, index, static_cast<int>(i), d);
        if (k < 0) throw std::out_of_range(fmt::format("rank class '{}': unknown task '{}'", rc.name, d));
        out.deps[c].push_back(k);
      }
  }
  return out;
}

}  // namespace symtensor::sim
