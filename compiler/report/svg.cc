#include "compiler/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace symtensor::compiler::svg {

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string palette(int i) {
  // Okabe-Ito, then a few extra.
  static const char* colors[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                                 "#56B4E9", "#F0E442", "#000000", "#999999", "#882255"};
  return colors[((i % 10) + 10) % 10];
}

Canvas::Canvas(double width, double height, std::string css_class)
    : width_(width), height_(height), css_class_(std::move(css_class)) {}

void Canvas::rect(double x, double y, double w, double h, const std::string& fill, const std::string& title,
                  const std::string& css_class) {
  body_ += "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(std::max(w, 0.0)) +
           "\" height=\"" + number(std::max(h, 0.0)) + "\" fill=\"" + fill + "\"";
  if (!css_class.empty()) body_ += " class=\"" + escape(css_class) + "\"";
  body_ += title.empty() ? "/>\n" : "><title>" + escape(title) + "</title></rect>\n";
}

void Canvas::line(double x1, double y1, double x2, double y2, const std::string& stroke, double width,
                  bool dashed) {
  body_ += "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) + "\" y2=\"" +
           number(y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + number(width) + "\"" +
           (dashed ? " stroke-dasharray=\"6,4\"" : "") + "/>\n";
}

void Canvas::text(double x, double y, std::string_view text, std::string_view anchor, double size,
                  const std::string& fill, double rotate) {
  body_ += "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" font-size=\"" + number(size) +
           "\" text-anchor=\"" + std::string(anchor) + "\" fill=\"" + fill + "\"";
  if (rotate != 0) body_ += " transform=\"rotate(" + number(rotate) + " " + number(x) + " " + number(y) + ")\"";
  body_ += ">" + escape(text) + "</text>\n";
}

void Canvas::polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                      double width, const std::string& dash) {
  std::string pts;
  for (const auto& [x, y] : points) pts += number(x) + "," + number(y) + " ";
  body_ += "<polyline fill=\"none\" stroke=\"" + stroke + "\" stroke-width=\"" + number(width) + "\"" +
           (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + " points=\"" + pts + "\"/>\n";
}

void Canvas::marker(int shape, double cx, double cy, double r, const std::string& fill, const std::string& title) {
  const auto at = [&](double dx, double dy) { return number(cx + dx) + "," + number(cy + dy); };
  std::string element;
  switch (((shape % 4) + 4) % 4) {
    case 0: element = "circle cx=\"" + number(cx) + "\" cy=\"" + number(cy) + "\" r=\"" + number(r) + "\""; break;
    case 1:
      element = "rect x=\"" + number(cx - r) + "\" y=\"" + number(cy - r) + "\" width=\"" + number(2 * r) + "\" height=\"" +
                number(2 * r) + "\"";
      break;
    case 2: element = "path d=\"M" + at(0, -1.3 * r) + " L" + at(1.3 * r, 0) + " L" + at(0, 1.3 * r) + " L" + at(-1.3 * r, 0) + " Z\""; break;
    default: element = "path d=\"M" + at(0, -1.4 * r) + " L" + at(1.3 * r, r) + " L" + at(-1.3 * r, r) + " Z\"";
  }
  const std::string tag = element.substr(0, element.find(' '));
  body_ += "<" + element + " class=\"point\" fill=\"" + fill + "\"" +
           (title.empty() ? "/>\n" : "><title>" + escape(title) + "</title></" + tag + ">\n");
}

void Canvas::legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& label_colors) {
  double cx = x, cy = y;
  for (const auto& [label, color] : label_colors) {
    const double w = 22 + 7.0 * label.size();
    if (cx + w > width_ && cx > x) {
      cx = x;
      cy += 18;
    }
    rect(cx, cy - 10, 12, 12, color);
    text(cx + 16, cy, label, "start", 12);
    cx += w;
  }
}

std::string Canvas::str() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" + escape(css_class_) + "\" width=\"" +
         number(width_) + "\" height=\"" + number(height_) + "\" viewBox=\"0 0 " + number(width_) + " " +
         number(height_) + "\" font-family=\"sans-serif\">\n" + body_ + "</svg>\n";
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= raw) {
      step = f * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

std::string tick_label(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e6 || a < 1e-3) std::snprintf(buf, sizeof buf, "%.2g", v);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double text_width(std::string_view text, double size) { return 0.6 * size * static_cast<double>(text.size()); }

Frame::Frame(double left, double top, double width, double height, Axis x, Axis y)
    : left_(left), top_(top), width_(width), height_(height), x_(std::move(x)), y_(std::move(y)) {}

namespace {
double fraction(const Axis& a, double v) {
  if (a.log2) {
    const double lo = std::log2(std::max(a.min, 1e-300)), hi = std::log2(std::max(a.max, 1e-300));
    return hi > lo ? (std::log2(std::max(v, 1e-300)) - lo) / (hi - lo) : 0.5;
  }
  return a.max > a.min ? (v - a.min) / (a.max - a.min) : 0.5;
}
std::vector<double> axis_ticks(const Axis& a) {
  if (!a.log2) return nice_ticks(a.min, a.max);
  std::vector<double> t;
  for (double v = std::exp2(std::ceil(std::log2(std::max(a.min, 1e-300)))); v <= a.max * (1 + 1e-9); v *= 2)
    t.push_back(v);
  return t;
}
}  // namespace

double Frame::px(double x) const { return left_ + fraction(x_, x) * width_; }
double Frame::py(double y) const { return top_ + height_ - fraction(y_, y) * height_; }

void Frame::draw(Canvas& c) const {
  double widest = 0;  // of the y tick labels: the axis title goes left of them
  for (double t : axis_ticks(y_)) {
    const double y = py(t);
    c.line(left_, y, left_ + width_, y, "#e4e4e4");
    c.text(left_ - 6, y + 4, tick_label(t), "end", 11, "#444");
    widest = std::max(widest, text_width(tick_label(t), 11));
  }
  for (double t : axis_ticks(x_)) {
    const double x = px(t);
    c.line(x, top_ + height_, x, top_ + height_ + 5, "#444");
    c.text(x, top_ + height_ + 18, tick_label(t), "middle", 11, "#444");
  }
  c.line(left_, top_ + height_, left_ + width_, top_ + height_, "#444");
  c.line(left_, top_, left_, top_ + height_, "#444");
  c.text(left_ + width_ / 2, top_ + height_ + 36, x_.label, "middle", 12);
  // Turned a quarter left, the title's glyphs rise leftwards from x and descend 0.25 em right of it.
  const double title_x = std::max(left_ - 6 - widest - 4 - 0.25 * 12, 0.75 * 12);
  c.text(title_x, top_ + height_ / 2, y_.label, "middle", 12, "#222", -90);
}

}  // namespace symtensor::compiler::svg
