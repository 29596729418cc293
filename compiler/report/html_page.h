#pragma once
// HTML building blocks for report.html: the page shell (inline CSS only: the file opens
// offline) and tables.
#include <string>
#include <vector>

namespace symtensor::compiler::html {

std::string page(const std::string& title, const std::string& body);
// Cells are escaped; a cell starting with "\x01" is raw HTML (the marker is dropped).
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  const std::string& css_class = "");
std::string raw(const std::string& html);  // marks a cell as raw HTML
std::string esc(const std::string& text);

}  // namespace symtensor::compiler::html
