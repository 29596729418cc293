#pragma once
// Short constructors for tasks, for code that builds step programs (lowering, tests, bench).
#include <string>
#include <vector>

#include "simulator/program/program.h"

namespace symtensor::sim {

using Deps = std::vector<std::string>;

Task compute_task(std::string id, double flops, double bytes, hardware::Precision precision, Deps deps = {});
// A compute (or optimizer) task with an explicit duration.
Task timed_task(std::string id, double seconds, Deps deps = {}, TaskKind kind = TaskKind::compute);
Task collective_task(std::string id, std::string stream, hardware::Collective collective, double bytes,
                     std::vector<std::string> group, Deps deps = {},
                     hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::automatic);
Task send_task(std::string id, std::string stream, std::string peer, double bytes, Deps deps = {});
Task recv_task(std::string id, std::string stream, std::string peer, double bytes, Deps deps = {});
Task alloc_task(std::string id, std::string stream, double bytes, std::string tag, Deps deps = {});
Task free_task(std::string id, std::string stream, double bytes, std::string tag, Deps deps = {});

}  // namespace symtensor::sim
