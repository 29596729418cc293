#pragma once
// The report's charts, each drawn from plain data with the SVG layer (compiler/report/svg.h)
// and returned as one <svg> element. One file per chart type.
#include <string>
#include <vector>

#include "compiler/report/timeline.h"

namespace symtensor::compiler {

// Horizontal stacked bars: one bar per strategy, one segment per component (seconds).
struct StackedBar {
  std::string label;
  std::vector<double> values;  // same order as the component names
};
std::string breakdown_chart(const std::vector<std::string>& components, const std::vector<StackedBar>& bars);

// Per-stage peak memory per device, grouped by strategy, against the device capacity.
struct MemoryGroup {
  std::string label;
  std::vector<double> stage_bytes;
  // Each stage's capacity, its own GPUs' usable memory (a mixed fleet's stages differ);
  // empty, or 0 for a stage: memory_chart's capacity_bytes.
  std::vector<double> stage_capacity_bytes;
};
// A bar per stage, held against its capacity: one line when every stage has the same, else a
// mark over each bar at its own.
std::string memory_chart(const std::vector<MemoryGroup>& groups, double capacity_bytes);

// The simulated step as a Gantt chart: a row per (stage, stream), bars coloured by kind.
std::string gantt_chart(const Timeline& timeline);

// Lines over a log2 x axis (GPU counts): scaling curves, cost curves.
struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), y > 0
};
std::string line_chart(const std::vector<Series>& series, const std::string& x_label, const std::string& y_label,
                       const std::string& css_class);

}  // namespace symtensor::compiler
