#include "simulator/program/lean_program.h"

#include <algorithm>
#include <stdexcept>

namespace symtensor::sim {

int LeanClass::push(const LeanTask& task, const std::vector<int>& task_deps) {
  tasks.push_back(task);
  deps.insert(deps.end(), task_deps.begin(), task_deps.end());
  dep_start.push_back(static_cast<int>(deps.size()));
  return static_cast<int>(tasks.size()) - 1;
}

int LeanClass::stream_index(std::string_view name) {
  const auto found = std::find(streams.begin(), streams.end(), name);
  if (found != streams.end()) return static_cast<int>(found - streams.begin());
  streams.emplace_back(name);
  return static_cast<int>(streams.size()) - 1;
}

int LeanClass::group_index(const std::vector<int>& axes) {
  const auto found = std::find(groups.begin(), groups.end(), axes);
  if (found != groups.end()) return static_cast<int>(found - groups.begin());
  groups.push_back(axes);
  return static_cast<int>(groups.size()) - 1;
}

Program to_program(LeanProgram lean) {
  Program p = std::move(lean.shape);
  for (std::size_t c = 0; c < lean.classes.size(); ++c) {
    LeanClass& lc = lean.classes[c];
    if (lc.ids.size() != lc.tasks.size()) throw std::logic_error("to_program: a lean class kept no task ids");
    std::vector<Task>& tasks = p.rank_classes.at(c).tasks;
    tasks.reserve(lc.tasks.size());
    for (std::size_t i = 0; i < lc.tasks.size(); ++i) {
      const LeanTask& l = lc.tasks[i];
      Task t;
      t.id = lc.ids[i];  // copied: a dependency may come later (a receive)
      t.kind = l.kind;
      t.stream = lc.streams[l.stream];
      for (int k = lc.dep_start[i]; k < lc.dep_start[i + 1]; ++k) t.deps.push_back(lc.ids.at(lc.deps[k]));
      t.flops = l.flops;
      t.precision = l.precision;
      if (l.duration_s >= 0) t.duration_s = l.duration_s;
      t.bytes = l.bytes;
      t.collective = l.collective;
      t.algorithm = l.algorithm;
      if (l.group >= 0)
        for (int axis : lc.groups[l.group]) t.group.push_back(p.mesh.at(axis).name);
      if (l.peer >= 0) t.peer = p.rank_classes.at(l.peer).name;
      if (l.tag >= 0) t.tag = lc.tags[l.tag];
      tasks.push_back(std::move(t));
    }
  }
  return p;
}

}  // namespace symtensor::sim
