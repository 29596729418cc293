#pragma once
// Task ids resolved to indices once per program: the validation and the engine's compiled
// form both need every dependency's index (a step program of GPT-3 on 1024 GPUs has half a
// million tasks, so each hash lookup counts).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "simulator/program/program.h"

namespace symtensor::sim {

// Task id -> index in its rank class; the keys point into the program's task ids. An open-
// addressing table (linear probing, at most three quarters full) in one array: a step program's million
// ids go in without a node allocation each, which std::unordered_map made the bulk of the
// validation's time.
class TaskIndex {
 public:
  using value_type = std::pair<std::string_view, int>;
  void reserve(std::size_t n);
  // Inserts unless the key is present; the entry and whether it was inserted.
  std::pair<const value_type*, bool> emplace(std::string_view key, int value);
  const value_type* find(std::string_view key) const;  // end() when absent
  const value_type* end() const { return nullptr; }
  std::size_t size() const { return count_; }

 private:
  std::size_t slot_of(std::string_view key) const;  // the key's slot, or the empty one it would take
  static bool full(std::size_t count, std::size_t capacity);  // more than the load allowed
  std::vector<value_type> slots_;  // an empty slot holds index -1
  std::size_t count_ = 0;
};

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
