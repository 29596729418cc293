#include "compiler/report/html_page.h"

#include "compiler/report/svg.h"

namespace symtensor::compiler::html {

std::string esc(const std::string& text) { return svg::escape(text); }
std::string raw(const std::string& html) { return "\x01" + html; }

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + esc(title) +
         "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.45;padding:0 16px}\n"
         "h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}\n"
         "table{border-collapse:collapse;margin:8px 0;font-size:0.9em}\n"
         "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\n"
         "th{background:#f2f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
         "tr.chosen td{background:#eaf6ea;font-weight:bold}tr.failed td{color:#888}\n"
         ".bad{color:#b00020}.note{color:#555;font-size:0.9em}code{background:#f4f4f4;padding:1px 4px}\n"
         "svg{display:block;margin:8px 0;background:#fff}\n"
         "</style>\n</head>\n<body>\n" +
         body + "</body>\n</html>\n";
}

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::string& css_class) {
  std::string out = "<table" + (css_class.empty() ? "" : " class=\"" + esc(css_class) + "\"") + ">\n<tr>";
  for (const auto& h : header) out += "<th>" + esc(h) + "</th>";
  out += "</tr>\n";
  for (const auto& row : rows) {
    std::string cls;
    std::size_t first = 0;
    // A leading "\x02class" cell sets the row's class.
    if (!row.empty() && !row[0].empty() && row[0][0] == '\x02') {
      cls = row[0].substr(1);
      first = 1;
    }
    out += cls.empty() ? "<tr>" : "<tr class=\"" + esc(cls) + "\">";
    for (std::size_t i = first; i < row.size(); ++i) {
      const std::string& cell = row[i];
      if (!cell.empty() && cell[0] == '\x01') out += "<td>" + cell.substr(1) + "</td>";
      else out += "<td>" + esc(cell) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace symtensor::compiler::html
