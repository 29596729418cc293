// The per-level cut problem alone: a hand-written 5-node problem solved greedily and by
// CBC, with the optimum worked out by hand; malformed problems are refused.
#include <gtest/gtest.h>

#include "compiler/search/cut_problem.h"
#include "compiler/search/ilp_solver.h"

namespace symtensor::compiler {
namespace {

// A chain a - b - c - d - e with a side edge a - c. Two choices each ("x", "y").
//   unary:  a: x 1, y 3   b: x 4, y 2   c: x 5, y 5   d: x 1, y 6   e: x 2, y 2
//   weights (visiting order): c 50, b 40, a 30, d 20, e 10
//   edges (cost when the ends differ, 0 when equal):
//     a-b 3,  b-c 1,  c-d 4,  d-e 10,  a-c 2
// Optimum by enumeration (32 assignments): all x costs 1+4+5+1+2 = 13 with no edge cost;
// all y: 3+2+5+6+2 = 18; a,b = x,y others x: 1+2+5+1+2 + ab 3 + bc 1 = 15. So 13 (all x).
// Greedy heaviest first: c alone: x 5 = y 5, tie -> first (x). b: x 4 + bc 0 = 4, y 2 + 1 = 3 -> y.
// a: x 1 + ab 3 + ac 0 = 4, y 3 + 0 + ac 2 = 5 -> x. d: x 1 + cd 0 = 1 -> x. e: x 2 -> x.
// Greedy pass 1 gives x,y,x,x,x = 1+2+5+1+2 + ab 3 + bc 1 = 15; the re-pick pass moves b
// back to x (4 + 0 + 0 = 4 < 2 + 3 + 1 = 6): 13, the optimum.
CutProblem five_nodes() {
  CutProblem p;
  const double unary[5][2] = {{1, 3}, {4, 2}, {5, 5}, {1, 6}, {2, 2}};
  const double weight[5] = {30, 40, 50, 20, 10};
  const char* names[5] = {"a", "b", "c", "d", "e"};
  for (int i = 0; i < 5; ++i) {
    CutProblemNode n;
    n.name = names[i];
    n.weight = weight[i];
    n.choices = {{"x", 0, unary[i][0]}, {"y", 1, unary[i][1]}};
    p.nodes.push_back(n);
  }
  auto edge = [&](int a, int b, double differ) { p.edges.push_back({a, b, {{0, differ}, {differ, 0}}}); };
  edge(0, 1, 3);
  edge(1, 2, 1);
  edge(2, 3, 4);
  edge(3, 4, 10);
  edge(0, 2, 2);
  return p;
}

TEST(SearchCutProblem, ObjectiveAddsUnaryAndEdgeCosts) {
  const CutProblem p = five_nodes();
  EXPECT_DOUBLE_EQ(p.objective({0, 0, 0, 0, 0}), 13);
  EXPECT_DOUBLE_EQ(p.objective({1, 1, 1, 1, 1}), 18);
  EXPECT_DOUBLE_EQ(p.objective({0, 1, 0, 0, 0}), 15);
  // a=y only: 3+4+5+1+2 + ab 3 + ac 2 = 20
  EXPECT_DOUBLE_EQ(p.objective({1, 0, 0, 0, 0}), 20);
}

TEST(SearchCutProblem, GreedyFirstPassThenRepickReachesOptimum) {
  const CutProblem p = five_nodes();
  EXPECT_EQ(solve_cut_problem_greedy(p, 0), (std::vector<int>{0, 1, 0, 0, 0}));
  EXPECT_EQ(solve_cut_problem_greedy(p, 4), (std::vector<int>{0, 0, 0, 0, 0}));
}

TEST(SearchCutProblem, IlpFindsTheEnumeratedOptimum) {
  const IlpSolution s = solve_cut_problem_ilp(five_nodes());
  EXPECT_TRUE(s.proven_optimal);
  EXPECT_EQ(s.choice, (std::vector<int>{0, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(s.objective, 13);
}

TEST(SearchCutProblem, IlpBeatsGreedyWhereGreedyIsMyopic) {
  // Two nodes: p (heavy) has x 0, y 1; q has x 10, y 0; edge costs 5 when they differ.
  // Greedy: p picks x (0); q: x 10 vs y 0 + 5 -> y: total 5. Optimum: p=y, q=y: 1.
  CutProblem p;
  p.nodes = {{"p", 2, {{"x", 0, 0}, {"y", 1, 1}}}, {"q", 1, {{"x", 0, 10}, {"y", 1, 0}}}};
  p.edges = {{0, 1, {{0, 5}, {5, 0}}}};
  EXPECT_DOUBLE_EQ(p.objective(solve_cut_problem_greedy(p, 0)), 5);
  const IlpSolution s = solve_cut_problem_ilp(p);
  EXPECT_DOUBLE_EQ(s.objective, 1);
  EXPECT_EQ(s.choice, (std::vector<int>{1, 1}));
}

TEST(SearchCutProblem, MalformedProblemsAreRefused) {
  CutProblem p = five_nodes();
  p.edges[0].cost.pop_back();
  EXPECT_THROW(p.validate(), std::runtime_error);
  CutProblem q = five_nodes();
  q.nodes[2].choices.clear();
  EXPECT_THROW(solve_cut_problem_greedy(q), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
