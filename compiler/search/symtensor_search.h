#pragma once
// The SymTensor search (`--strategy symtensor`; with LevelSolver::ilp, `--strategy ilp`).
//
// Inner part, per level: the device count is factored over the mesh hierarchy (slow
// inter-node axes first, every level into its prime factors, so 6, 12, 24 or 96 devices
// work); for each mesh axis in turn the CutProblem of compiler/search/level_problem.h is
// built over the heavy operators and solved (greedy heaviest-first with re-pick passes,
// or exactly with CBC); the cheap operators take their cuts by propagate_cuts.
//
// Outer part: pipeline stages (divisors of the outermost level, cost-balanced contiguous
// stages), micro-batch counts (divisors of the batch, geometrically spaced), interleaving,
// then recomputation and ZeRO level tried cheapest first until the plan fits; every
// candidate is priced by analyze_plan + estimate_step on the whole plan. Counts and depths
// go up while they help (step time is close to unimodal in both). Two seeds are priced
// next to the level step's plans: pure data parallelism and the cheap part of Megatron-
// LM's space (MegatronSpace::seed), points a per-axis choice misses. Finally local
// refinement from the best of all: move one mesh axis of one class of identical heavy
// operators (same op, extents and cut: repeated layers move together) to another loop,
// kept while the step time drops.
//
// A device count no heavy operator can be cut by on some axis (a prime such as 7 with a
// batch it does not divide) is refused with an error naming the axis: the search never
// returns a plan that computes everything redundantly on a whole mesh axis.
#include <string>
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/search/cut_problem.h"
#include "compiler/search/folded_graph.h"
#include "compiler/search/level_problem.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

enum class LevelSolver { greedy, ilp };

struct SearchOptions {
  LevelSolver solver = LevelSolver::greedy;
  int micro_batch_candidates = 5;  // per pipeline depth
  int refine_budget = 48;          // whole-plan evaluations spent on refinement moves (about
                                   // 15 per class of operators for a 3-axis mesh)
  bool refine = true;
  int max_heavy_operators = 0;     // refused above (0: no limit): the exact solver's bound
};

// Cuts of the heavy operators after all levels, the per-level problems and their solutions.
struct LevelSearchResult {
  std::vector<NodeCut> heavy_cuts;  // per heavy operator (FoldedGraph::heavy)
  std::vector<CutProblem> problems;
  std::vector<std::vector<int>> choices;
  double objective = 0;             // sum of the levels' objectives
};

// Throws when an axis can cut no heavy operator (see above).
LevelSearchResult search_levels(const LevelContext& ctx, const std::vector<int>& axes, LevelSolver solver);

struct SearchResult {
  Plan plan;
  PlanAnalysis analysis;      // of the plan (the search's analyzer has most of it at hand)
  StepEstimate estimate;
  int evaluations = 0;        // analyze_plan + estimate_step calls
  // The refinement: moves priced, moves kept, and the fraction of the step they saved.
  int refine_moves = 0, refine_kept = 0;
  double refine_gain = 0;
  double level_objective = 0; // of the chosen plan's level search
  std::string summary;        // one line: the chosen knobs
};

SearchResult symtensor_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                              const SearchOptions& search = {});

// make_plan's entry point.
Plan make_symtensor_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);

}  // namespace symtensor::compiler
