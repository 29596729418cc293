#pragma once
#include <string>

#include "simulator/stats/result.h"

namespace symtensor::sim {

// A short human-readable table: step time, then one line per rank class.
std::string summary_text(const SimResult& result);

}  // namespace symtensor::sim
