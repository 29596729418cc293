#include <algorithm>
#include <cmath>
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
  // Series that cost or run the same lie on one another: each has its own dash and marker
  // shape (a smaller one over a larger), so both colours show, and the legend names the
  // series a line lies on.
  static const char* dashes[] = {"", "7,4", "2,3", "9,3,2,3"};
  std::vector<std::vector<std::pair<double, double>>> drawn;
  std::vector<std::pair<std::string, std::string>> legend;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const std::string color = svg::palette(static_cast<int>(i));
    std::vector<std::pair<double, double>> pts;
    for (const auto& [x, y] : series[i].points) pts.emplace_back(frame.px(x), frame.py(y));
    std::string label = series[i].label;
    for (std::size_t j = 0; j < i; ++j)
      if (!pts.empty() && std::equal(pts.begin(), pts.end(), drawn[j].begin(), drawn[j].end(), [](const auto& a, const auto& b) {
            return std::abs(a.first - b.first) < 1.5 && std::abs(a.second - b.second) < 1.5;
          })) {
        label += " (same as " + series[j].label + ")";
        break;
      }
    legend.emplace_back(label, color);
    if (pts.size() > 1) c.polyline(pts, color, 2, dashes[i % 4]);
    for (std::size_t k = 0; k < pts.size(); ++k)
      c.marker(static_cast<int>(i), pts[k].first, pts[k].second, 4.5 - 0.6 * static_cast<double>(i % 4), color,
               series[i].label + ": " + svg::tick_label(series[i].points[k].first) + " -> " +
                   svg::tick_label(series[i].points[k].second));
    drawn.push_back(std::move(pts));
  }
  c.legend(left, 18, legend);
  return c.str();
}

}  // namespace symtensor::compiler
