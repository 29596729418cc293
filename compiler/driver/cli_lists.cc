#include "compiler/driver/cli_lists.h"

#include <sstream>
#include <stdexcept>

#include "compiler/report/compare.h"

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
  for (const auto& name : names) compiler::check_compare_strategy(name, flag, with_mimo);
  return names;
}

}  // namespace symtensor::driver
