#include "simulator/program/task_index.h"

#include <functional>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::sim {

namespace {
constexpr int kRecentTasks = 4;  // tasks before the asking one compared first
}  // namespace

// At most three quarters full: linear probing stays short (about two slots a lookup), and a
// class of a few hundred thousand tasks takes half the slots that at most half full did (a
// step program's indexes were a hundred MB, each page of it faulted in anew).
bool TaskIndex::full(std::size_t count, std::size_t capacity) { return 4 * count > 3 * capacity; }

void TaskIndex::reserve(std::size_t n) {
  std::size_t capacity = 16;
  while (full(n, capacity)) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<value_type> old(capacity, value_type{std::string_view(), -1});
  old.swap(slots_);
  for (const value_type& e : old)
    if (e.second >= 0) slots_[slot_of(e.first)] = e;
}

std::size_t TaskIndex::slot_of(std::string_view key) const {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = std::hash<std::string_view>{}(key) & mask;
  while (slots_[i].second >= 0 && slots_[i].first != key) i = (i + 1) & mask;
  return i;
}

std::pair<const TaskIndex::value_type*, bool> TaskIndex::emplace(std::string_view key, int value) {
  if (value < 0) throw std::invalid_argument("task index: negative index");
  if (full(count_ + 1, slots_.size())) reserve(count_ + 1 > slots_.size() ? count_ + 1 : slots_.size());
  value_type& slot = slots_[slot_of(key)];
  if (slot.second >= 0) return {&slot, false};
  slot = {key, value};
  ++count_;
  return {&slot, true};
}

const TaskIndex::value_type* TaskIndex::find(std::string_view key) const {
  if (slots_.empty()) return end();
  const value_type& slot = slots_[slot_of(key)];
  return slot.second >= 0 ? &slot : end();
}

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
