#pragma once
// The per-level cut problem as plain data: each heavy operator picks one choice (a loop
// to cut on the level's mesh axis, or none); a choice has a unary cost (compute,
// intra-operator communication, memory term) and each folded edge between two operators
// a cost matrix (redistribution between the producer's output layout and the consumer's
// wanted input layout). The SymTensor level step solves it greedily, heaviest operator
// first; the ILP strategy solves it exactly (compiler/search/ilp_solver.h). Both minimize
// objective().
#include <string>
#include <vector>

namespace symtensor::compiler {

struct CutChoice {
  std::string label;  // "m", "n", "k", "-" (no cut) ...
  int loop = -1;      // loop index cut on this level's axis, -1 for none
  double cost = 0;    // seconds per step
};

struct CutProblemNode {
  std::string name;
  double weight = 0;  // visiting priority (FLOPs): heaviest first
  std::vector<CutChoice> choices;
};

struct CutProblemEdge {
  int from = 0, to = 0;                  // node indices
  std::vector<std::vector<double>> cost;  // [choice of from][choice of to], seconds per step
};

struct CutProblem {
  std::vector<CutProblemNode> nodes;
  std::vector<CutProblemEdge> edges;

  // Sum of the chosen unary costs and edge costs; throws on a malformed assignment.
  double objective(const std::vector<int>& choice) const;
  // Throws (one line) when an edge matrix does not match its nodes' choice counts or a
  // node has no choice.
  void validate() const;
};

// D-Rec's inner recursion: nodes by descending weight (ties: index), each picking the
// choice minimizing its unary cost plus the edges to nodes already decided; then passes
// that re-pick each node given all others while the objective drops (at most `passes`).
std::vector<int> solve_cut_problem_greedy(const CutProblem& problem, int passes = 4);

}  // namespace symtensor::compiler
