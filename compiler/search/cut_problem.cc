#include "compiler/search/cut_problem.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace symtensor::compiler {

void CutProblem::validate() const {
  for (const auto& n : nodes)
    if (n.choices.empty()) throw std::runtime_error("cut problem: node '" + n.name + "' has no choice");
  for (const auto& e : edges) {
    if (e.from < 0 || e.to < 0 || e.from >= static_cast<int>(nodes.size()) || e.to >= static_cast<int>(nodes.size()))
      throw std::runtime_error("cut problem: an edge names a node that does not exist");
    if (e.cost.size() != nodes[e.from].choices.size())
      throw std::runtime_error("cut problem: edge " + nodes[e.from].name + " -> " + nodes[e.to].name + " has " +
                               std::to_string(e.cost.size()) + " rows for " + std::to_string(nodes[e.from].choices.size()) +
                               " choices");
    for (const auto& row : e.cost)
      if (row.size() != nodes[e.to].choices.size())
        throw std::runtime_error("cut problem: edge " + nodes[e.from].name + " -> " + nodes[e.to].name +
                                 " has a row of the wrong width");
  }
}

double CutProblem::objective(const std::vector<int>& choice) const {
  if (choice.size() != nodes.size()) throw std::runtime_error("cut problem: assignment of the wrong size");
  double total = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) total += nodes[i].choices.at(choice[i]).cost;
  for (const auto& e : edges) total += e.cost[choice[e.from]][choice[e.to]];
  return total;
}

namespace {

// pair_cost of the greedy solver for every (choice of u, choice of v) of an edge u -> v, the
// other nodes' choices fixed, summed in another order: u's costs against the nodes but v,
// v's against the nodes but u, and the edges between them. Where the costs are non-negative
// the estimate is within a relative 1e-9 of pair_cost (n terms summed in two orders differ
// by at most 2n x 2^-53 of their sum), so a pair estimated above that margin over the best
// cannot beat it; with a negative cost nothing is ruled out.
class PairEstimates {
 public:
  PairEstimates(const CutProblem& problem, const std::vector<std::vector<int>>& incident, const std::vector<int>& choice)
      : p_(problem), incident_(incident), choice_(choice) {}

  void fill(int u, int v) {
    negative_ = false;
    cvs_ = static_cast<int>(p_.nodes[v].choices.size());
    side(u, v, u_);
    side(v, u, v_);
    between_.assign(u_.size() * cvs_, 0.0);
    for (int e : incident_[u]) {
      const CutProblemEdge& edge = p_.edges[e];
      if (edge.from != v && edge.to != v) continue;
      for (std::size_t cu = 0; cu < u_.size(); ++cu)
        for (int cv = 0; cv < cvs_; ++cv) add(between_[cu * cvs_ + cv], edge.from == u ? edge.cost[cu][cv] : edge.cost[cv][cu]);
    }
  }

  bool rules_out(int cu, int cv, double best) const {
    const double estimate = u_[cu] + v_[cv] + between_[static_cast<std::size_t>(cu) * cvs_ + cv];
    return !negative_ && estimate * (1 - 1e-9) > best;
  }

 private:
  void add(double& sum, double cost) {
    negative_ = negative_ || cost < 0;
    sum += cost;
  }

  // Per choice of `w`: its unary cost and its edges to every node but `other`.
  void side(int w, int other, std::vector<double>& out) {
    const auto& choices = p_.nodes[w].choices;
    out.assign(choices.size(), 0.0);
    for (std::size_t c = 0; c < choices.size(); ++c) add(out[c], choices[c].cost);
    for (int e : incident_[w]) {
      const CutProblemEdge& edge = p_.edges[e];
      if (edge.from == other || edge.to == other) continue;
      for (std::size_t c = 0; c < choices.size(); ++c)
        add(out[c], edge.from == edge.to ? edge.cost[c][c]
                    : edge.from == w     ? edge.cost[c][choice_[edge.to]]
                                         : edge.cost[choice_[edge.from]][c]);
    }
  }

  const CutProblem& p_;
  const std::vector<std::vector<int>>& incident_;
  const std::vector<int>& choice_;
  int cvs_ = 0;
  bool negative_ = false;  // some cost of the pair is negative
  std::vector<double> u_, v_, between_;
};

}  // namespace

std::vector<int> solve_cut_problem_greedy(const CutProblem& problem, int passes) {
  problem.validate();
  const int n = static_cast<int>(problem.nodes.size());
  std::vector<std::vector<int>> incident(n);
  for (int e = 0; e < static_cast<int>(problem.edges.size()); ++e) {
    incident[problem.edges[e].from].push_back(e);
    incident[problem.edges[e].to].push_back(e);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return problem.nodes[a].weight > problem.nodes[b].weight; });
  std::vector<int> choice(n, -1);
  // Cost of node v taking choice c against the decided neighbours.
  auto local_cost = [&](int v, int c) {
    double cost = problem.nodes[v].choices[c].cost;
    for (int e : incident[v]) {
      const auto& edge = problem.edges[e];
      const int other = edge.from == v ? edge.to : edge.from;
      if (other == v || choice[other] < 0) continue;
      cost += edge.from == v ? edge.cost[c][choice[other]] : edge.cost[choice[other]][c];
    }
    return cost;
  };
  auto best_choice = [&](int v) {
    int best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (int c = 0; c < static_cast<int>(problem.nodes[v].choices.size()); ++c) {
      const double cost = local_cost(v, c);
      if (cost < best_cost) best = c, best_cost = cost;
    }
    return best;
  };
  // Node and edge costs that involve u or v, under the current choices.
  auto pair_cost = [&](int u, int v) {
    double cost = problem.nodes[u].choices[choice[u]].cost + problem.nodes[v].choices[choice[v]].cost;
    for (int w : {u, v})
      for (int e : incident[w]) {
        const auto& edge = problem.edges[e];
        if (w == v && (edge.from == u || edge.to == u)) continue;  // counted from u
        cost += edge.cost[choice[edge.from]][choice[edge.to]];
      }
    return cost;
  };
  PairEstimates estimates(problem, incident, choice);
  for (int v : order) choice[v] = best_choice(v);
  for (int pass = 0; pass < passes; ++pass) {
    bool changed = false;
    for (int v : order) {
      const int keep = choice[v];
      const double before = local_cost(v, keep);
      const int best = best_choice(v);
      if (best != keep && local_cost(v, best) < before - 1e-15 * std::max(1.0, before)) choice[v] = best, changed = true;
    }
    // Two neighbours changing together: what one node's move cannot reach when a layout
    // only pays once both ends of an edge take it (a redistribution avoided on both sides).
    // Each pair is first estimated from its separable parts (pair_estimates); only the pairs
    // the estimate cannot rule out are priced by pair_cost, so the choices are those of
    // pricing every pair.
    for (const auto& edge : problem.edges) {
      const int u = edge.from, v = edge.to;
      const int cus = static_cast<int>(problem.nodes[u].choices.size());
      const int cvs = static_cast<int>(problem.nodes[v].choices.size());
      if (u == v || cus * cvs == 1) continue;
      const int keep_u = choice[u], keep_v = choice[v];
      const double before = pair_cost(u, v);
      double best = before;
      int best_u = keep_u, best_v = keep_v;
      estimates.fill(u, v);
      for (int cu = 0; cu < cus; ++cu)
        for (int cv = 0; cv < cvs; ++cv) {
          if (estimates.rules_out(cu, cv, best)) continue;
          choice[u] = cu, choice[v] = cv;
          const double cost = pair_cost(u, v);
          if (cost < best - 1e-15 * std::max(1.0, best)) best = cost, best_u = cu, best_v = cv;
        }
      choice[u] = best_u, choice[v] = best_v;
      changed = changed || best_u != keep_u || best_v != keep_v;
    }
    if (!changed) break;
  }
  return choice;
}

}  // namespace symtensor::compiler
