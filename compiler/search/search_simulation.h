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

// The plan's step simulated whole, without a trace, lowered straight into the engine's form
// (simulate_plan_lean). Throws what the lowering or the simulator throws.
SearchSimulation simulate_for_search(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                     const NumericGraph& ng);

// The same, shortened for refereeing candidates: a training step of many micro-batches under
// a 1F1B schedule is simulated as two steps of the same micro-batch, of 2 and 3 micro-batches
// per stage (2p and 3p), and extended along their difference to the plan's micro-batches (the
// step and each stage's compute; the activations in flight do not grow past 2p). Exact to
// rounding where the stages' pace is even; where it is not, the pipeline's start-up lasts
// longer and the extension runs short (LLaMA-2 7B on an H100 stage and two A100 stages, pp=3:
// 0.8% at 24 micro-batches): so a step reported is simulated whole (simulate_for_search).
// Batch shares (uneven micro-batch counts per group), GPipe (every micro-batch in flight),
// inference, graphs without a batch dim and steps of at most 4p micro-batches are simulated
// whole.
SearchSimulation simulate_shortened(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                    const NumericGraph& ng);

}  // namespace symtensor::compiler
