#pragma once
// JSON form of the step program (keys documented in simulator/README.md). Parsing is
// strict: unknown keys, missing required keys and wrong types are one-line errors naming
// the rank class and task. Parsing also validates (validate.h).
#include <string>

#include <nlohmann/json.hpp>

#include "simulator/program/program.h"

namespace symtensor::sim {

std::string_view collective_name(hardware::Collective c);
hardware::Collective parse_collective(std::string_view text);  // throws on unknown
std::string_view algorithm_name(hardware::CollectiveAlgorithm a);
hardware::CollectiveAlgorithm parse_algorithm(std::string_view text);  // throws on unknown

Program program_from_json(const nlohmann::json& j);
nlohmann::json program_to_json(const Program& program);

Program load_program(const std::string& path);
// Writes to a temporary file in the same folder, then renames it over `path`.
void save_program(const Program& program, const std::string& path);

}  // namespace symtensor::sim
