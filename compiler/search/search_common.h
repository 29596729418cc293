#pragma once
// Pieces shared by the searches: prime factoring of the mesh levels, divisors, and one
// evaluation of a plan (analyze_plan + estimate_step) that never throws.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::vector<int> prime_factors(int n);  // descending: 12 -> {3, 2, 2}
std::vector<int> divisors(long long n); // ascending
// `total` split in proportion to `weights`, each part at least 1 (largest remainders); empty
// when `total` is less than the parts.
std::vector<int> proportional_parts(const std::vector<double>& weights, int total);

// Per topology level, outermost first: `pipeline` (> 1) as the first factor of the
// outermost level with more than one device, the rest of every level as its prime
// factors ({1} for a level of one). Throws when pipeline divides no such level.
std::vector<std::vector<int>> search_mesh_factors(const hardware::Cluster& cluster, int pipeline);

struct Evaluation {
  bool valid = false;  // the analysis accepted the plan
  std::string error;   // why not
  StepEstimate estimate;
  // Fits first, then step time.
  bool better_than(const Evaluation& other) const;
};

// A knob walked upwards (micro-batch counts, pipeline depths) while the step time drops.
// After each value, stop(t) with its best step time (infinity when none of its plans
// fits) says whether to stop: once something has fit, after `patience` values in a row
// that are no better than the best so far. `bar`: a step time already reached by a plan
// found elsewhere (a seed); a value that fits and is no better than it counts as not
// better, from the first value on (one where nothing fits counts only once the walk's own
// values have fit).
class UpwardWalk {
 public:
  explicit UpwardWalk(int patience = 1, double bar = std::numeric_limits<double>::infinity());
  bool stop(double step_time);
  bool stopped() const { return worse_ >= patience_; }  // whether stop() has said so
  double best() const { return best_; }  // the walk's own best; infinity until something fits

 private:
  int patience_;
  int worse_ = 0;
  double best_;
  double bar_;
};

Evaluation evaluate_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan);
// With one analyzer for every plan of the graph (what searches call: it keeps the graph's
// numeric form and every priced redistribution between plans).
Evaluation evaluate_plan(PlanAnalyzer& analyzer, const Plan& plan);

}  // namespace symtensor::compiler
