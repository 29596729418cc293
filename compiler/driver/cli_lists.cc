#include "compiler/driver/cli_lists.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/report/mimo.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::driver {

std::vector<std::string> split_list(const std::string& text, const char* flag) {
  std::vector<std::string> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ','))
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw std::runtime_error(std::string(flag) + ": the list is empty");
  return out;
}

std::vector<std::string> strategy_list(const std::string& text, const char* flag, bool with_mimo) {
  std::vector<std::string> names = split_list(text, flag);
  std::vector<std::string> known = compiler::strategy_names();
  known.erase(std::remove(known.begin(), known.end(), "file"), known.end());
  if (with_mimo) known.push_back(compiler::kMimoStrategy);
  for (const auto& name : names) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw std::runtime_error(std::string(flag) + ": unknown strategy '" + name + "' (known: " + list + ")");
  }
  return names;
}

}  // namespace symtensor::driver
