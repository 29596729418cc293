#pragma once
// Public entry point: play a step program on a cluster.
#include "hardware/cluster.h"
#include "simulator/program/lean_program.h"
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
  // The program comes from code that builds it valid (compiler::lower_plan, whose tests check
  // its programs): the engine only indexes its task ids, without validate_program's checks
  // (ids, fields, cycles, collective peers, send/recv pairs). The cluster checks and the
  // symmetry check still run. Never for programs from a user (program_from_json validates those).
  bool trusted_program = false;
};

// Validates the program (unless SimOptions::trusted_program) and checks it against the
// cluster, then simulates one step. Throws
// std::runtime_error (one line) on invalid input or when the program deadlocks.
SimResult simulate(const Program& program, const hardware::Cluster& cluster, const SimOptions& options = {});
// A lean program (built valid by code: SimOptions::trusted_program is implied), the same
// result as simulating to_program(program). Consumed: its task lists are freed once
// compiled, before the engine's per-task state is allocated (a smaller peak, fewer pages
// to fault in).
SimResult simulate(LeanProgram program, const hardware::Cluster& cluster, const SimOptions& options = {});

}  // namespace symtensor::sim
