#pragma once
// The simulated step of one plan as Gantt bars: one row per (rank class, stream) that did
// something, each task a bar coloured by what it is (forward, backward, recompute,
// collective, pipeline send/receive, optimizer).
#include <string>
#include <vector>

#include "simulator/program/program.h"
#include "simulator/stats/result.h"

namespace symtensor::compiler {

enum class BarKind { forward, backward, recompute, collective, p2p, optimizer, other };
std::string_view to_string(BarKind k);

struct TimelineBar {
  int row = 0;
  double start_s = 0, end_s = 0;
  BarKind kind = BarKind::other;
  std::string label;  // the task id
};

struct Timeline {
  std::vector<std::string> rows;  // "stage0 compute", "stage0 comm_tp", ...
  std::vector<TimelineBar> bars;
  double step_time_s = 0;
  bool truncated = false;  // more bars than kept
};

// The task's kind from its program entry (ids follow compiler/lowering/README.md).
BarKind classify_task(const sim::Task& task);
// Needs SimOptions::record_trace. Keeps at most `max_bars` bars (the report stays small).
Timeline build_timeline(const sim::Program& program, const sim::SimResult& result, std::size_t max_bars = 6000);

}  // namespace symtensor::compiler
