#pragma once
// Exact minimization of a CutProblem with CBC (Alpa-style): one binary per (node, choice),
// one-hot per node, and per edge a continuous y[a][b] in [0,1] whose row sums are the
// from-node's one-hot and column sums the to-node's, so y is the product of the two and
// the edge cost is linear in it.
#include <vector>

#include "compiler/search/cut_problem.h"

namespace symtensor::compiler {

// Variables above which solve_cut_problem_ilp refuses (the ILP is the small-graph check).
inline constexpr int kMaxIlpVariables = 20000;

struct IlpSolution {
  std::vector<int> choice;
  double objective = 0;
  bool proven_optimal = false;
};

// Throws (one line) when the problem is malformed, exceeds kMaxIlpVariables, or CBC
// finds no solution.
IlpSolution solve_cut_problem_ilp(const CutProblem& problem);

}  // namespace symtensor::compiler
