#pragma once
// The simulations a search referees its candidates with: what it reads of one (the step, each
// stage's busy time, whether it fits), made at a fraction of a long step's cost.
#include <optional>
#include <vector>

#include "compiler/cost/group_analyzers.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct SearchSimulation {
  double step_time_s = 0;
  bool fits = false;
  std::vector<double> stage_compute_s;  // per stage report (simulate_plan's order), compute without the optimizer
  std::vector<int> stage_group;         // the group each stage report's ranks lie in (-1: several or none)
  bool extended = false;                // extended from shorter steps (below)
};

// What a search's simulations of plans on one cluster share: the plans' analyzers on the
// cluster and on each group's device (simulate_plan_report), kept across the simulations, so
// that a plan's shorter steps price its operator work once.
struct SimulationAnalyzers {
  // `graph`, `cluster` and `ng` (NumericGraph(graph)) must outlive them.
  SimulationAnalyzers(Graph& graph, const hardware::Cluster& cluster, const NumericGraph& ng)
      : uniform(graph, cluster, ng), on_groups(graph, cluster, ng) {}
  PlanAnalyzer uniform;
  GroupAnalyzers on_groups;
};

// The plan's step simulated whole on the analyzers' cluster, without a trace, lowered straight
// into the engine's form (simulate_plan_report). Throws what the lowering or the simulator throws.
SearchSimulation simulate_for_search(SimulationAnalyzers& on, const Plan& plan);

// The two shorter steps (of 2p and 3p micro-batches) a shortened simulation is made of, and
// the plan's pipeline stages and micro-batches they were made for.
struct ShorterSteps {
  SearchSimulation at_2p, at_3p;
  int p = 0, micro_batches = 0;
};

// simulate_for_search shortened for refereeing candidates: a training step of many micro-batches
// under a 1F1B schedule is simulated as two steps of the same micro-batch, of 2 and 3 micro-batches
// per stage (2p and 3p), and extended along their difference to the plan's micro-batches (the step
// and each stage's compute; the activations in flight do not grow past 2p). Exact where the
// schedule has reached its period by 2p: within 1e-9 on every plan of
// tests/compiler/search_simulation_test.cc, uneven pipelines over an H100 and two A100 stages
// included (under 1e-12 on those). Nothing certifies it (stop 52 saw a fleet plan of LLaMA-2 7B
// over such stages run 0.8% short at 24 micro-batches; the search no longer makes that plan), so a
// search only referees with it and reports simulate_periodic's figures. Batch shares (uneven
// micro-batch counts per group), GPipe (every micro-batch in flight), inference, graphs without a
// batch dim and steps of at most 4p micro-batches are simulated whole. `steps`, where given and the
// step was shortened, gets the two shorter steps (simulate_periodic reuses them for the same plan).
SearchSimulation simulate_shortened(SimulationAnalyzers& on, const Plan& plan, ShorterSteps* steps = nullptr);

// The whole step's figures for a step a search reports, at less cost where the schedule shows
// its period: steps of 2p, 3p and 4p micro-batches are simulated and, where they grow evenly
// (periodic_extension), extended to the plan's micro-batches; else, and for steps of at most 9p
// micro-batches or of micro-batches no multiple of p, the plans simulate_shortened leaves
// whole and shorter steps the simulator refuses, the step is simulated whole. `known`: the
// steps at 2p and 3p that simulate_shortened made of this same plan (only the 4p one is
// simulated then; steps made for another p or micro-batch count are not used).
SearchSimulation simulate_periodic(SimulationAnalyzers& on, const Plan& plan, const ShorterSteps* known = nullptr);

// The check: where every figure of the steps at 2p, 3p and 4p micro-batches (the step, each
// stage's compute) grows by the same amount from 3p to 4p as from 2p to 3p, to
// kPeriodTolerance of the 4p figure, and the three fit alike, the schedule is taken to repeat
// every p micro-batches from 2p on (a necessary condition, which every plan measured meets
// exactly where it holds), and the figures at m micro-batches (m a multiple of p) are the 4p
// ones plus (m - 4p)/p times that growth; else none.
inline constexpr double kPeriodTolerance = 1e-9;
std::optional<SearchSimulation> periodic_extension(const SearchSimulation& at_2p, const SearchSimulation& at_3p,
                                                   const SearchSimulation& at_4p, int p, int m);

}  // namespace symtensor::compiler
