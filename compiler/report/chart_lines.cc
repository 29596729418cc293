#include <algorithm>
#include <limits>

#include "compiler/report/charts.h"
#include "compiler/report/svg.h"

namespace symtensor::compiler {

std::string line_chart(const std::vector<Series>& series, const std::string& x_label, const std::string& y_label,
                       const std::string& css_class) {
  const double left = 80, top = 40, plot_w = 560, plot_h = 260;
  svg::Canvas c(left + plot_w + 40, top + plot_h + 60, "chart " + css_class);
  double xmin = std::numeric_limits<double>::infinity(), xmax = 0, ymax = 0;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  if (!(xmax > 0)) xmin = 1, xmax = 2;
  if (xmin >= xmax) xmax = xmin * 2;
  if (ymax <= 0) ymax = 1;
  const auto yt = svg::nice_ticks(0, ymax * 1.05);
  svg::Frame frame(left, top, plot_w, plot_h, {xmin, xmax, x_label, true}, {0, std::max(ymax * 1.05, yt.back()), y_label});
  frame.draw(c);
  std::vector<std::pair<std::string, std::string>> legend;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const std::string color = svg::palette(static_cast<int>(i));
    legend.emplace_back(series[i].label, color);
    std::vector<std::pair<double, double>> pts;
    for (const auto& [x, y] : series[i].points) pts.emplace_back(frame.px(x), frame.py(y));
    if (pts.size() > 1) c.polyline(pts, color);
    for (std::size_t k = 0; k < pts.size(); ++k)
      c.circle(pts[k].first, pts[k].second, 3.5, color,
               series[i].label + ": " + svg::tick_label(series[i].points[k].first) + " -> " +
                   svg::tick_label(series[i].points[k].second));
  }
  c.legend(left, 18, legend);
  return c.str();
}

}  // namespace symtensor::compiler
