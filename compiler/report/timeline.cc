#include "compiler/report/timeline.h"

namespace symtensor::compiler {

std::string_view to_string(BarKind k) {
  switch (k) {
    case BarKind::forward: return "forward";
    case BarKind::backward: return "backward";
    case BarKind::recompute: return "recompute";
    case BarKind::collective: return "collective";
    case BarKind::p2p: return "p2p";
    case BarKind::optimizer: return "optimizer";
    case BarKind::other: return "other";
  }
  return "other";
}

BarKind classify_task(const sim::Task& task) {
  using sim::TaskKind;
  switch (task.kind) {
    case TaskKind::optimizer: return BarKind::optimizer;
    case TaskKind::collective: return BarKind::collective;
    case TaskKind::send:
    case TaskKind::recv: return BarKind::p2p;
    case TaskKind::alloc:
    case TaskKind::free: return BarKind::other;
    case TaskKind::compute: break;
  }
  if (task.id.rfind("optimizer", 0) == 0) return BarKind::optimizer;
  if (!task.id.empty() && task.id[0] == 'f') return BarKind::forward;
  if (!task.id.empty() && task.id[0] == 'b') return BarKind::backward;
  if (!task.id.empty() && task.id[0] == 'r') return BarKind::recompute;
  return BarKind::other;
}

Timeline build_timeline(const sim::Program& program, const sim::SimResult& result, std::size_t max_bars) {
  Timeline t;
  t.step_time_s = result.step_time_s;
  for (const sim::TraceProcess& process : result.trace) {
    if (process.rank_class < 0 || process.rank_class >= static_cast<int>(program.rank_classes.size())) continue;
    const auto& tasks = program.rank_classes[process.rank_class].tasks;
    std::vector<int> row_of_stream(process.streams.size(), -1);
    for (const sim::TraceSlice& slice : process.slices) {
      if (slice.task < 0 || slice.task >= static_cast<int>(tasks.size())) continue;
      const sim::Task& task = tasks[slice.task];
      const BarKind kind = classify_task(task);
      if (kind == BarKind::other || slice.end_s <= slice.start_s) continue;
      if (slice.stream < 0 || slice.stream >= static_cast<int>(row_of_stream.size())) continue;
      if (t.bars.size() >= max_bars) {
        t.truncated = true;
        return t;
      }
      int& row = row_of_stream[slice.stream];
      if (row < 0) {
        row = static_cast<int>(t.rows.size());
        t.rows.push_back(process.name + " " + process.streams[slice.stream]);
      }
      t.bars.push_back({row, slice.start_s, slice.end_s, kind, task.id});
    }
  }
  return t;
}

}  // namespace symtensor::compiler
