#pragma once
#include <nlohmann/json.hpp>

#include "simulator/stats/result.h"

namespace symtensor::sim {

// Step time and per-class statistics (memory timelines included) as JSON.
nlohmann::json result_to_json(const SimResult& result);

}  // namespace symtensor::sim
