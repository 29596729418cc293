#pragma once
// Public entry point: play a step program on a cluster.
#include "hardware/cluster.h"
#include "simulator/program/program.h"
#include "simulator/stats/result.h"

namespace symtensor::sim {

enum class SimMode {
  symmetric,  // one simulated rank per rank class; collectives priced from the group's shape
  full,       // every rank of every class (small clusters; the check of symmetric mode)
};

struct SimOptions {
  SimMode mode = SimMode::symmetric;
  bool record_trace = true;  // keep per-task slices for the Chrome trace
};

// Validates the program against the cluster, then simulates one step. Throws
// std::runtime_error (one line) on invalid input or when the program deadlocks.
SimResult simulate(const Program& program, const hardware::Cluster& cluster, const SimOptions& options = {});

}  // namespace symtensor::sim
