#include <algorithm>
#include <limits>

#include "compiler/report/charts.h"
#include "compiler/report/svg.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {

// The axis stops at this many times the capacity: a plan needing 800 GiB of an 80 GiB
// device would otherwise squash the ones that fit (64 against 74.5 GiB) to a few pixels.
constexpr double kMemoryAxisCapacities = 2.0;

namespace {

double stage_capacity(const MemoryGroup& g, std::size_t s, double capacity_bytes) {
  return s < g.stage_capacity_bytes.size() && g.stage_capacity_bytes[s] > 0 ? g.stage_capacity_bytes[s] : capacity_bytes;
}

}  // namespace

std::string memory_chart(const std::vector<MemoryGroup>& groups, double capacity_bytes) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  std::size_t bars = 0;
  double max_bytes = 0, most_capacity = 0, least_capacity = std::numeric_limits<double>::infinity();
  for (const auto& g : groups) {
    bars += std::max<std::size_t>(g.stage_bytes.size(), 1);
    for (std::size_t s = 0; s < g.stage_bytes.size(); ++s) {
      const double cap = stage_capacity(g, s, capacity_bytes);
      max_bytes = std::max(max_bytes, g.stage_bytes[s]);
      most_capacity = std::max(most_capacity, cap), least_capacity = std::min(least_capacity, cap);
    }
  }
  if (least_capacity > most_capacity) least_capacity = most_capacity = capacity_bytes;  // no stage
  const bool one_capacity = least_capacity == most_capacity;
  max_bytes = std::max(max_bytes, most_capacity);
  const std::size_t shown = std::min<std::size_t>(bars, 160);
  const double bar_w = std::clamp(560.0 / std::max<std::size_t>(shown + groups.size(), 1), 3.0, 40.0);
  const double left = 70, top = 20, plot_h = 240;
  const double plot_w = std::max(300.0, (shown + groups.size()) * bar_w);
  svg::Canvas c(left + plot_w + 30, top + plot_h + 90, "chart memory");
  const double clip_gib = most_capacity > 0 ? kMemoryAxisCapacities * most_capacity / kGiB
                                            : std::numeric_limits<double>::infinity();
  const double axis_max = std::max(std::min(max_bytes / kGiB, clip_gib) * 1.05, 1.0);
  svg::Frame frame(left, top, plot_w, plot_h, {0, 1, ""}, {0, axis_max, "peak memory per device (GiB)"});
  for (double t : svg::nice_ticks(0, axis_max)) {
    const double y = frame.py(t);
    c.line(left, y, left + plot_w, y, "#e4e4e4");
    c.text(left - 6, y + 4, svg::tick_label(t), "end", 11, "#444");
  }
  c.line(left, top, left, top + plot_h, "#444");
  c.line(left, top + plot_h, left + plot_w, top + plot_h, "#444");
  c.text(left - 48, top + plot_h / 2, "peak memory per device (GiB)", "middle", 12, "#222", -90);
  c.text(left + plot_w / 2, top + plot_h + 62, "pipeline stage, per strategy", "middle", 12);

  double x = left + bar_w / 2;
  std::size_t drawn = 0;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    const double start = x;
    for (std::size_t s = 0; s < g.stage_bytes.size() && drawn < shown; ++s, ++drawn) {
      const double b = g.stage_bytes[s];
      const double cap = stage_capacity(g, s, capacity_bytes);
      const bool fits = cap <= 0 || b <= cap;
      const bool clipped = b / kGiB > axis_max;
      const std::string fill = fits ? svg::palette(static_cast<int>(gi)) : "#D55E00";
      const double bar_top = frame.py(std::min(b / kGiB, axis_max));
      c.rect(x, bar_top, bar_w * 0.85, top + plot_h - bar_top, fill,
             g.label + " stage " + std::to_string(s) + ": " + format_bytes(b) + (one_capacity ? "" : " of " + format_bytes(cap)) +
                 (fits ? "" : " (does not fit)"),
             clipped ? "stage-memory clipped" : "stage-memory");
      if (clipped) {  // a break across the bar's top: it goes on past the axis
        c.line(x - 1, top + 8, x + bar_w * 0.85 + 1, top + 4, "#fff", 2);
        c.line(x - 1, top + 14, x + bar_w * 0.85 + 1, top + 10, "#fff", 2);
      }
      if (!one_capacity && cap > 0) {  // this stage's own capacity, over its bar
        const double cap_y = frame.py(std::min(cap / kGiB, axis_max));
        c.line(x - 1, cap_y, x + bar_w * 0.85 + 1, cap_y, "#CC0000", 2, true);
      }
      if (!fits)
        c.text(x + bar_w * 0.425 + 4, top + plot_h - 6, "does not fit: " + format_bytes(b), "start", 10, "#222", -90);
      x += bar_w;
    }
    c.text((start + x) / 2, top + plot_h + 16, g.label.substr(0, 28), "middle", 11);
    x += bar_w;
  }
  if (one_capacity) {
    const double cap_y = frame.py(most_capacity / kGiB);
    c.line(left, cap_y, left + plot_w, cap_y, "#CC0000", 2, true);
  }
  // Named above the plot, as a legend: on the line it ran through the bars past the capacity
  // and their "does not fit" labels.
  const std::string capacity = one_capacity ? "capacity " + format_bytes(most_capacity)
                                            : "capacity by stage (its GPUs): " + format_bytes(least_capacity) + " to " +
                                                  format_bytes(most_capacity);
  const double label_x = left + plot_w - svg::text_width(capacity, 11);
  c.line(label_x - 30, top - 9, label_x - 6, top - 9, "#CC0000", 2, true);
  c.text(label_x, top - 5, capacity, "start", 11, "#CC0000");
  return c.str();
}

}  // namespace symtensor::compiler
