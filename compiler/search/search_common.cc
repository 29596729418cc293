#include "compiler/search/search_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "compiler/cost/estimate_order.h"
#include "compiler/cost/plan_analysis.h"

namespace symtensor::compiler {

std::vector<int> prime_factors(int n) {
  std::vector<int> f;
  for (int p = 2; p * p <= n; ++p)
    while (n % p == 0) f.push_back(p), n /= p;
  if (n > 1) f.push_back(n);
  std::sort(f.rbegin(), f.rend());
  return f;
}

std::vector<int> divisors(long long n) {
  std::vector<int> d;
  for (long long k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(static_cast<int>(k));
  return d;
}

std::vector<int> proportional_parts(const std::vector<double>& weights, int total) {
  const int n = static_cast<int>(weights.size());
  std::vector<int> out(n, 1);
  int left = total - n;
  if (left < 0) return {};
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::pair<double, int>> remainder;
  int given = 0;
  for (int i = 0; i < n; ++i) {
    const double share = left * weights[i] / sum;
    const int whole = static_cast<int>(std::floor(share));
    out[i] += whole;
    given += whole;
    remainder.emplace_back(share - whole, i);
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int k = 0; k < left - given; ++k) ++out[remainder[k % n].second];
  return out;
}

std::vector<std::vector<int>> search_mesh_factors(const hardware::Cluster& cluster, int pipeline) {
  const int levels = static_cast<int>(cluster.levels.size());
  int pipeline_level = -1;
  if (pipeline > 1)
    for (int l = levels - 1; l >= 0; --l)
      if (cluster.levels[l].size > 1) {
        pipeline_level = l;
        break;
      }
  if (pipeline > 1 && (pipeline_level < 0 || cluster.levels[pipeline_level].size % pipeline != 0))
    throw std::runtime_error("search: " + std::to_string(pipeline) + " pipeline stages do not divide the outermost level of '" +
                             cluster.name + "'");
  std::vector<std::vector<int>> factors;
  for (int l = levels - 1; l >= 0; --l) {
    std::vector<int> f;
    int rest = cluster.levels[l].size;
    if (l == pipeline_level) f.push_back(pipeline), rest /= pipeline;
    for (int p : prime_factors(rest)) f.push_back(p);
    if (f.empty()) f.push_back(1);
    factors.push_back(f);
  }
  return factors;
}

bool Evaluation::better_than(const Evaluation& other) const {
  if (valid != other.valid) return valid;
  if (!valid) return false;
  return better_estimate(estimate, other.estimate);
}

UpwardWalk::UpwardWalk(int patience, double bar)
    : patience_(patience), best_(std::numeric_limits<double>::infinity()), bar_(bar) {}

bool UpwardWalk::stop(double step_time) {
  constexpr double kNothingFits = std::numeric_limits<double>::infinity();
  const double beat = std::min(best_, bar_);
  if (!(step_time < beat)) {
    // No better than the best before: counted once the walk has fit something, or, with a
    // bar, when this value fits (a value where nothing fits does not count against a bar).
    if (best_ < kNothingFits || (beat < kNothingFits && step_time < kNothingFits)) return ++worse_ >= patience_;
    return false;
  }
  worse_ = 0;
  best_ = step_time;
  return false;
}

Evaluation evaluate_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  const NumericGraph ng(graph);
  PlanAnalyzer analyzer(graph, cluster, ng);
  return evaluate_plan(analyzer, plan);
}

Evaluation evaluate_plan(PlanAnalyzer& analyzer, const Plan& plan) {
  Evaluation e;
  try {
    e.estimate = estimate_step(analyzer.totals(plan), plan, analyzer.cluster());
    e.valid = true;
  } catch (const std::exception& ex) {
    e.error = ex.what();
  }
  return e;
}

}  // namespace symtensor::compiler
