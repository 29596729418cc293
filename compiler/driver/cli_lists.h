#pragma once
// Comma-separated list flags shared by the report commands.
#include <string>
#include <vector>

namespace symtensor::driver {

// "a,b,,c" -> {a, b, c}; throws "FLAG: the list is empty" when nothing is left.
std::vector<std::string> split_list(const std::string& text, const char* flag);

// The strategies of `--strategies`: split_list, and every name one make_plan knows
// (the plan-file strategy aside), and megatron-mimo or symtensor-mimo with `with_mimo` (compare only,
// compiler/report/mimo.h); throws naming the first unknown one.
std::vector<std::string> strategy_list(const std::string& text, const char* flag, bool with_mimo = false);

}  // namespace symtensor::driver
