// Turns the entities' task times into step time, per-class statistics and trace slices.
#include <algorithm>

#include <fmt/format.h>

#include "simulator/engine/engine.h"
#include "simulator/program/program_json.h"
#include "simulator/stats/intervals.h"

namespace symtensor::sim {

namespace {

ClassResult summarize(const EntityState& st, const RankClass& rc, const CompiledClass& cc, double step_time,
                      double device_memory) {
  ClassResult r;
  r.name = rc.name;
  r.num_ranks = static_cast<int>(rc.ranks.size());
  r.device_groups = cc.device_groups;
  std::vector<Interval> compute, comm;
  std::map<hardware::Collective, std::vector<Interval>> by_kind;  // named at the end (not a string per task)
  for (size_t i = 0; i < cc.kind.size(); ++i) {
    r.finish_s = std::max(r.finish_s, st.end[i]);
    const TaskKind kind = cc.kind[i];
    double d = st.end[i] - st.start[i];
    if (kind == TaskKind::compute || kind == TaskKind::optimizer) {
      r.compute_busy_s += d;
      compute.emplace_back(st.start[i], st.end[i]);
    }
    if (kind == TaskKind::optimizer) r.optimizer_s += d;
    if (kind == TaskKind::collective) {
      comm.emplace_back(st.start[i], st.end[i]);
      by_kind[cc.collective[i]].emplace_back(st.start[i], st.end[i]);
    }
  }
  for (auto& [kind, intervals] : by_kind)
    r.collective_busy_s[std::string(collective_name(kind))] = total_length(merge_intervals(std::move(intervals)));
  auto merged_compute = merge_intervals(std::move(compute));
  auto merged_comm = merge_intervals(std::move(comm));
  r.comm_busy_s = total_length(merged_comm);
  r.exposed_comm_s = uncovered_length(merged_comm, merged_compute);
  r.bubble_s = std::max(0.0, step_time - total_length(merged_compute) - r.exposed_comm_s);
  r.static_memory_bytes = rc.static_memory.total();
  r.peak_memory_bytes = st.peak_bytes;
  r.memory_capacity_bytes = device_memory;
  r.out_of_memory = device_memory > 0 && st.peak_bytes > device_memory;
  r.memory_overage_bytes = r.out_of_memory ? st.peak_bytes - device_memory : 0;
  r.memory_timeline = st.memory;
  return r;
}

void keep_max(ClassResult& into, const ClassResult& r) {
  into.finish_s = std::max(into.finish_s, r.finish_s);
  into.compute_busy_s = std::max(into.compute_busy_s, r.compute_busy_s);
  into.optimizer_s = std::max(into.optimizer_s, r.optimizer_s);
  into.comm_busy_s = std::max(into.comm_busy_s, r.comm_busy_s);
  into.exposed_comm_s = std::max(into.exposed_comm_s, r.exposed_comm_s);
  for (const auto& [kind, busy] : r.collective_busy_s)
    into.collective_busy_s[kind] = std::max(into.collective_busy_s[kind], busy);
  into.bubble_s = std::max(into.bubble_s, r.bubble_s);
  if (r.peak_memory_bytes > into.peak_memory_bytes) {
    into.peak_memory_bytes = r.peak_memory_bytes;
    into.out_of_memory = r.out_of_memory;
    into.memory_overage_bytes = r.memory_overage_bytes;
    into.memory_timeline = r.memory_timeline;
  }
}

}  // namespace

SimResult Engine::build_result() const {
  SimResult result;
  result.full_mode = options_.mode == SimMode::full;
  result.device_memory_bytes = cluster_.device.usable_memory();  // what a plan may use (the headroom left free)
  result.events = queue_.scheduled();
  result.simulated_ranks = static_cast<int>(entities_.size());
  for (const auto& st : entities_)
    for (double end : st.end) result.step_time_s = std::max(result.step_time_s, end);
  std::vector<char> seen(program_.rank_classes.size(), 0);
  result.classes.resize(program_.rank_classes.size());
  for (const auto& st : entities_) {
    const RankClass& rc = program_.rank_classes[st.rank_class];
    const CompiledClass& cc = compiled_.classes[st.rank_class];
    ClassResult r = summarize(st, rc, cc, result.step_time_s, usable_memory(cluster_, cc.device_groups));
    if (!seen[st.rank_class]) {
      result.classes[st.rank_class] = std::move(r);
      seen[st.rank_class] = 1;
    } else {
      keep_max(result.classes[st.rank_class], r);
    }
    if (!options_.record_trace) continue;
    TraceProcess p;
    p.name = result.full_mode ? fmt::format("{} rank {}", rc.name, st.rank) : rc.name;
    p.rank_class = st.rank_class;
    p.streams = cc.streams;
    for (size_t i = 0; i < cc.kind.size(); ++i) {
      TaskKind k = cc.kind[i];
      if (k == TaskKind::alloc || k == TaskKind::free) continue;
      p.slices.push_back({cc.task_stream[i], static_cast<int>(i), st.start[i], st.end[i]});
    }
    p.memory = st.memory;
    result.trace.push_back(std::move(p));
  }
  return result;
}

}  // namespace symtensor::sim
