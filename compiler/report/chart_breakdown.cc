#include <algorithm>

#include "compiler/report/charts.h"
#include "compiler/report/svg.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {

std::string breakdown_chart(const std::vector<std::string>& components, const std::vector<StackedBar>& bars) {
  const double bar_h = 26, gap = 10, left = 190, top = 40;
  const double plot_w = 560;
  const double height = top + bars.size() * (bar_h + gap) + 60;
  svg::Canvas c(left + plot_w + 40, height, "chart breakdown");
  double max_total = 0;
  for (const auto& b : bars) {
    double total = 0;
    for (double v : b.values) total += std::max(v, 0.0);
    max_total = std::max(max_total, total);
  }
  if (max_total <= 0) max_total = 1;
  const std::vector<double> ticks = svg::nice_ticks(0, max_total);
  const double axis_max = std::max(max_total, ticks.empty() ? max_total : ticks.back());
  svg::Frame frame(left, top, plot_w, bars.size() * (bar_h + gap), {0, axis_max, "step time (s)"}, {0, 1, ""});
  // Only the x axis: the y axis carries the strategy names.
  for (double t : svg::nice_ticks(0, axis_max)) {
    const double x = frame.px(t);
    c.line(x, top, x, frame.top() + frame.height(), "#e4e4e4");
    c.text(x, frame.top() + frame.height() + 16, svg::tick_label(t), "middle", 11, "#444");
  }
  c.line(left, frame.top() + frame.height(), left + plot_w, frame.top() + frame.height(), "#444");
  c.text(left + plot_w / 2, frame.top() + frame.height() + 34, "step time (s)", "middle", 12);

  std::vector<std::pair<std::string, std::string>> legend;
  for (std::size_t k = 0; k < components.size(); ++k) legend.emplace_back(components[k], svg::palette(static_cast<int>(k)));
  c.legend(left, 18, legend);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = top + i * (bar_h + gap) + gap / 2;
    c.text(left - 8, y + bar_h / 2 + 4, bars[i].label, "end", 12);
    double x0 = 0, total = 0;
    for (std::size_t k = 0; k < bars[i].values.size() && k < components.size(); ++k) {
      const double v = std::max(bars[i].values[k], 0.0);
      c.rect(frame.px(x0), y, frame.px(x0 + v) - frame.px(x0), bar_h, svg::palette(static_cast<int>(k)),
             bars[i].label + " " + components[k] + ": " + format_seconds(v), "segment");
      x0 += v;
      total += v;
    }
    c.text(frame.px(x0) + 4, y + bar_h / 2 + 4, format_seconds(total), "start", 11, "#444");
  }
  return c.str();
}

}  // namespace symtensor::compiler
