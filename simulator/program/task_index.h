#pragma once
// Task ids resolved to indices once per program: the validation and the engine's compiled
// form both need every dependency's index (a step program of GPT-3 on 1024 GPUs has half a
// million tasks, so each hash lookup counts).
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "simulator/program/program.h"

namespace symtensor::sim {

// Task id -> index in its rank class; the keys point into the program's task ids.
using TaskIndex = std::unordered_map<std::string_view, int>;

struct ProgramIndex {
  std::vector<TaskIndex> tasks;         // per rank class
  std::vector<std::vector<int>> deps;   // per rank class: each task's dependencies' indices, flat, in program order
};

// The index of dependency `id` of task `task` (ids unique in the class), -1 when no task has
// that id. A dependency is most often one of the few tasks just before: those are compared
// before the index is asked.
int find_dependency(const RankClass& rc, const TaskIndex& index, int task, const std::string& id);

// Indexes a program without checking it (duplicate ids keep the first; an unknown
// dependency throws std::out_of_range naming it).
ProgramIndex index_program(const Program& program);

}  // namespace symtensor::sim
