#pragma once
// The simulations a search referees its candidates with: what it reads of one (the step, each
// stage's busy time, whether it fits), made at a fraction of a long step's cost.
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct SearchSimulation {
  double step_time_s = 0;
  bool fits = false;
  std::vector<double> stage_compute_s;  // per stage report (simulate_plan's order), compute without the optimizer
  std::vector<int> stage_group;         // the group each stage report's ranks lie in (-1: several or none)
  bool extended = false;                // simulated as two shorter steps (below)
};

// The plan's training step simulated without a trace, lowered straight into the engine's form
// (simulate_plan_lean). A step of many micro-batches under a 1F1B schedule is simulated as two
// steps of the same micro-batch, of 2 and 3 micro-batches per stage (2p and 3p), and extended
// along their difference to the plan's micro-batches: past the warm-up the schedule repeats, so
// each further micro-batch adds the same time to the step and to each stage's compute, and the
// activations in flight do not grow (exact to rounding: tests/compiler/search_simulation_test.cc).
// Batch shares (uneven micro-batch counts per group), GPipe (every micro-batch in flight) and
// short steps are simulated whole. Throws what the lowering or the simulator throws.
SearchSimulation simulate_for_search(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                     const NumericGraph& ng);

}  // namespace symtensor::compiler
