#include "simulator/stats/chrome_trace.h"

#include "simulator/stats/atomic_write.h"

namespace symtensor::sim {

using nlohmann::json;

json chrome_trace(const Program& program, const SimResult& result) {
  json events = json::array();
  for (size_t p = 0; p < result.trace.size(); ++p) {
    const TraceProcess& proc = result.trace[p];
    int pid = static_cast<int>(p) + 1;
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", proc.name}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
    for (size_t s = 0; s < proc.streams.size(); ++s)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", static_cast<int>(s) + 1},
                        {"args", {{"name", proc.streams[s]}}}});
    const RankClass& rc = program.rank_classes[proc.rank_class];
    for (const TraceSlice& slice : proc.slices) {
      const Task& t = rc.tasks[slice.task];
      json e{{"ph", "X"},
             {"name", t.id},
             {"cat", std::string(to_string(t.kind))},
             {"pid", pid},
             {"tid", slice.stream + 1},
             {"ts", slice.start_s * 1e6},
             {"dur", (slice.end_s - slice.start_s) * 1e6}};
      if (t.bytes > 0) e["args"]["bytes"] = t.bytes;
      if (t.flops > 0) e["args"]["flops"] = t.flops;
      events.push_back(std::move(e));
    }
    for (const MemoryPoint& m : proc.memory)
      events.push_back({{"ph", "C"}, {"name", "memory"}, {"pid", pid}, {"ts", m.time_s * 1e6},
                        {"args", {{"bytes", m.bytes}}}});
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void write_chrome_trace(const Program& program, const SimResult& result, const std::string& path) {
  write_file_atomically(path, chrome_trace(program, result).dump() + "\n");
}

}  // namespace symtensor::sim
