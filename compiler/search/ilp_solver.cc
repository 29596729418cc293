#include "compiler/search/ilp_solver.h"

#include <stdexcept>

#include <coin/CbcModel.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

namespace symtensor::compiler {

IlpSolution solve_cut_problem_ilp(const CutProblem& problem) {
  problem.validate();
  const int n = static_cast<int>(problem.nodes.size());
  std::vector<int> x_base(n);
  int vars = 0;
  for (int v = 0; v < n; ++v) x_base[v] = vars, vars += static_cast<int>(problem.nodes[v].choices.size());
  const int x_count = vars;
  std::vector<int> y_base(problem.edges.size());
  for (std::size_t e = 0; e < problem.edges.size(); ++e) {
    y_base[e] = vars;
    vars += static_cast<int>(problem.nodes[problem.edges[e].from].choices.size() * problem.nodes[problem.edges[e].to].choices.size());
  }
  if (vars > kMaxIlpVariables)
    throw std::runtime_error("ilp: the problem has " + std::to_string(vars) + " variables, above the limit of " +
                             std::to_string(kMaxIlpVariables) + " (use --strategy symtensor for graphs this large)");

  std::vector<double> obj(vars, 0.0), col_lb(vars, 0.0), col_ub(vars, 1.0);
  for (int v = 0; v < n; ++v)
    for (std::size_t c = 0; c < problem.nodes[v].choices.size(); ++c) obj[x_base[v] + c] = problem.nodes[v].choices[c].cost;
  CoinPackedMatrix rows(false, 0, 0);
  std::vector<double> row_lb, row_ub;
  auto add_row = [&](const std::vector<int>& idx, const std::vector<double>& val, double lb, double ub) {
    rows.appendRow(static_cast<int>(idx.size()), idx.data(), val.data());
    row_lb.push_back(lb);
    row_ub.push_back(ub);
  };
  rows.setDimensions(0, vars);
  for (int v = 0; v < n; ++v) {
    std::vector<int> idx;
    for (std::size_t c = 0; c < problem.nodes[v].choices.size(); ++c) idx.push_back(x_base[v] + static_cast<int>(c));
    add_row(idx, std::vector<double>(idx.size(), 1.0), 1.0, 1.0);
  }
  for (std::size_t e = 0; e < problem.edges.size(); ++e) {
    const auto& edge = problem.edges[e];
    const int ca = static_cast<int>(problem.nodes[edge.from].choices.size());
    const int cb = static_cast<int>(problem.nodes[edge.to].choices.size());
    auto y = [&](int a, int b) { return y_base[e] + a * cb + b; };
    for (int a = 0; a < ca; ++a)
      for (int b = 0; b < cb; ++b) obj[y(a, b)] = edge.cost[a][b];
    for (int a = 0; a < ca; ++a) {  // sum_b y[a][b] = x_from[a]
      std::vector<int> idx;
      std::vector<double> val;
      for (int b = 0; b < cb; ++b) idx.push_back(y(a, b)), val.push_back(1.0);
      idx.push_back(x_base[edge.from] + a), val.push_back(-1.0);
      add_row(idx, val, 0.0, 0.0);
    }
    for (int b = 0; b < cb; ++b) {  // sum_a y[a][b] = x_to[b]
      std::vector<int> idx;
      std::vector<double> val;
      for (int a = 0; a < ca; ++a) idx.push_back(y(a, b)), val.push_back(1.0);
      idx.push_back(x_base[edge.to] + b), val.push_back(-1.0);
      add_row(idx, val, 0.0, 0.0);
    }
  }
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(rows, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(), row_ub.data());
  for (int i = 0; i < x_count; ++i) solver.setInteger(i);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.branchAndBound();
  const double* best = model.bestSolution();
  if (!best) throw std::runtime_error("ilp: CBC found no solution for the cut problem");
  IlpSolution s;
  s.choice.assign(n, 0);
  for (int v = 0; v < n; ++v) {
    double top = -1;
    for (std::size_t c = 0; c < problem.nodes[v].choices.size(); ++c)
      if (best[x_base[v] + c] > top) top = best[x_base[v] + c], s.choice[v] = static_cast<int>(c);
  }
  s.objective = problem.objective(s.choice);
  s.proven_optimal = model.isProvenOptimal();
  return s;
}

}  // namespace symtensor::compiler
