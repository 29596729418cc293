#pragma once
// A small SVG layer for the report's charts: a canvas that collects elements, and a plot
// frame that maps data to pixels and draws labelled axes with units. Self-contained output
// (no fonts or scripts fetched): every chart is inline SVG in report.html.
#include <string>
#include <string_view>
#include <vector>

namespace symtensor::compiler::svg {

std::string escape(std::string_view text);  // XML text and attribute escaping
std::string number(double v);               // compact coordinate ("12.5")
// The i-th colour of the report's palette (distinguishable, colour-blind friendly order).
std::string palette(int i);

class Canvas {
 public:
  Canvas(double width, double height, std::string css_class);
  // `title` becomes a <title> child: the browser shows it on hover.
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "",
            const std::string& css_class = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            bool dashed = false);
  void text(double x, double y, std::string_view text, std::string_view anchor = "start", double size = 12,
            const std::string& fill = "#222", double rotate = 0);
  // `dash`: an SVG stroke-dasharray ("7,4"); empty draws a solid line.
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke, double width = 2,
                const std::string& dash = "");
  // A data point of class "point" centred on (cx, cy), of radius about r: a circle, square,
  // diamond or triangle by `shape` (cycling), so that series drawn on one another stay apart.
  void marker(int shape, double cx, double cy, double r, const std::string& fill, const std::string& title = "");
  // A legend row of coloured squares from (x, y), wrapping at the canvas width.
  void legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& label_colors);
  std::string str() const;

  double width() const { return width_; }
  double height() const { return height_; }

 private:
  double width_, height_;
  std::string css_class_;
  std::string body_;
};

// Ticks covering [lo, hi] at 1/2/5 x 10^k steps (about `count` of them).
std::vector<double> nice_ticks(double lo, double hi, int count = 5);
// A tick label: "0", "250 ms" style is up to the caller; this prints the number compactly.
std::string tick_label(double v);
// The width a sans-serif text of `size` px takes at most (0.6 em per character: digits,
// '.', '+' and 'e' are narrower), for keeping labels apart.
double text_width(std::string_view text, double size);

struct Axis {
  double min = 0, max = 1;
  std::string label;  // with the unit: "step time (s)"
  bool log2 = false;  // powers of two (GPU counts)
};

// A plotting area inside a canvas: left/top margin and size in pixels.
class Frame {
 public:
  Frame(double left, double top, double width, double height, Axis x, Axis y);
  double px(double x) const;
  double py(double y) const;
  // Axis lines, ticks, tick labels, grid and axis titles.
  void draw(Canvas& canvas) const;
  double left() const { return left_; }
  double top() const { return top_; }
  double width() const { return width_; }
  double height() const { return height_; }

 private:
  double left_, top_, width_, height_;
  Axis x_, y_;
};

}  // namespace symtensor::compiler::svg
