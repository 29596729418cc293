#include <algorithm>

#include "compiler/report/charts.h"
#include "compiler/report/svg.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

std::string bar_color(BarKind k) {
  switch (k) {
    case BarKind::forward: return "#0072B2";
    case BarKind::backward: return "#009E73";
    case BarKind::recompute: return "#56B4E9";
    case BarKind::collective: return "#E69F00";
    case BarKind::p2p: return "#CC79A7";
    case BarKind::optimizer: return "#D55E00";
    case BarKind::other: break;
  }
  return "#999999";
}

}  // namespace

std::string gantt_chart(const Timeline& t) {
  const double row_h = 18, left = 200, top = 40, plot_w = 760;
  const double plot_h = std::max<double>(t.rows.size(), 1) * row_h;
  svg::Canvas c(left + plot_w + 30, top + plot_h + 60, "chart gantt");
  double end = t.step_time_s;
  for (const auto& b : t.bars) end = std::max(end, b.end_s);
  if (end <= 0) end = 1;
  svg::Frame frame(left, top, plot_w, plot_h, {0, end, "time in the step (s)"}, {0, 1, ""});
  for (double tick : svg::nice_ticks(0, end)) {
    const double x = frame.px(tick);
    c.line(x, top, x, top + plot_h, "#eeeeee");
    c.text(x, top + plot_h + 16, svg::tick_label(tick), "middle", 11, "#444");
  }
  c.line(left, top + plot_h, left + plot_w, top + plot_h, "#444");
  c.text(left + plot_w / 2, top + plot_h + 36, "time in the step (s)", "middle", 12);
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    c.text(left - 6, top + r * row_h + row_h * 0.7, t.rows[r], "end", 11);
  std::vector<std::pair<std::string, std::string>> legend;
  for (BarKind k : {BarKind::forward, BarKind::backward, BarKind::recompute, BarKind::collective, BarKind::p2p,
                    BarKind::optimizer})
    legend.emplace_back(std::string(to_string(k)), bar_color(k));
  c.legend(left, 18, legend);
  for (const auto& b : t.bars) {
    const double x0 = frame.px(b.start_s), x1 = frame.px(b.end_s);
    c.rect(x0, top + b.row * row_h + 2, std::max(x1 - x0, 0.5), row_h - 4, bar_color(b.kind),
           b.label + " " + format_seconds(b.start_s) + " .. " + format_seconds(b.end_s), "task");
  }
  return c.str();
}

}  // namespace symtensor::compiler
