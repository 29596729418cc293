#pragma once
// Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one process per
// simulated rank (class), one thread per stream, an "X" event per task (ts/dur in µs,
// name = task id, cat = task kind) and a "memory" counter track.
#include <string>

#include <nlohmann/json.hpp>

#include "simulator/program/program.h"
#include "simulator/stats/result.h"

namespace symtensor::sim {

nlohmann::json chrome_trace(const Program& program, const SimResult& result);
// Written to a temporary file, then renamed over `path`.
void write_chrome_trace(const Program& program, const SimResult& result, const std::string& path);

}  // namespace symtensor::sim
