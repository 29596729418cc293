#pragma once
// `symtensor merge`: the results.json of `sweep --shard K/N` runs joined into one sweep, as
// if it had run whole: the same model, bindings, tokens, clusters and GPU counts in every
// part, each shard 1..N present once, points back in sweep order (clusters, then sizes).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/report/results.h"

namespace symtensor::compiler {

// A sweep's results.json read back; throws "SOURCE: key 'K': problem".
SweepResults sweep_from_json(const nlohmann::json& j, const std::string& source);

// Throws naming the source that disagrees, a shard given twice or one missing.
SweepResults merge_sweeps(const std::vector<SweepResults>& parts, const std::vector<std::string>& sources);

// DIR/results.json of each folder, merged.
SweepResults merge_sweep_dirs(const std::vector<std::string>& dirs);

}  // namespace symtensor::compiler
