#pragma once
// Plan -> analysis -> step program -> simulation -> report, in one call (the `simulate`
// command, the validation tests and the bench share it).
#include "compiler/cost/plan_analysis.h"
#include "compiler/ir/graph.h"
#include "compiler/lowering/lower_plan.h"
#include "compiler/lowering/simulation_report.h"
#include "simulator/engine/simulator.h"

namespace symtensor::compiler {

class GroupAnalyzers;

struct PlanSimulation {
  PlanAnalysis analysis;
  sim::Program program;  // simulate_plan_lean: its shape alone (no tasks)
  sim::SimResult result;
  SimulationReport report;
};

// Tokens per sample come from the graph's sequence dim (bound_sequence_length) when it is bound.
PlanSimulation simulate_plan(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                             const LoweringOptions& lowering = {}, const sim::SimOptions& options = {});

// The same simulation with the plan lowered straight into the engine's form (lower_plan_lean,
// no text program, trusted as built valid): the searches' path, the same result and report.
// The program it returns has no tasks. `numeric`: NumericGraph(graph) when the caller has one
// (else it is made here).
PlanSimulation simulate_plan_lean(Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                                  const LoweringOptions& lowering = {}, const sim::SimOptions& options = {},
                                  const NumericGraph* numeric = nullptr);

// simulate_plan_lean's report, the analyses made by a caller's analyzers of one graph's plans
// (a search's, kept across its simulations: a plan's shorter steps share its operator work,
// its candidates their layers' collectives): `uniform` on the cluster, `on_groups` (of the
// same cluster: built on uniform.cluster()) on each group's device, read on a mixed fleet. The
// same report; the analyzers' earlier analyze_in_place results are no longer valid after it.
SimulationReport simulate_plan_report(const Plan& plan, PlanAnalyzer& uniform, GroupAnalyzers& on_groups,
                                      const LoweringOptions& lowering = {}, const sim::SimOptions& options = {});

}  // namespace symtensor::compiler
