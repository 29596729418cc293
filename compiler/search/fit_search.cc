#include "compiler/search/fit_search.h"

#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/analysis/transformer_structure.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/target_limits.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/search_common.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/propagation.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {
namespace {

Graph import_with(const FitQuery& q, const std::map<std::string, double>& overrides) {
  ImportOptions io;
  io.bindings = parse_bindings(q.bind);
  for (const auto& [k, v] : overrides) io.bindings[k] = v;
  io.fusion = q.fusion;
  io.batch_dim = q.batch_dim;
  io.sequence_dim = q.sequence_dim;
  io.warn_opaque = false;
  return import_onnx_file(q.model, io);
}

// Keeps the fastest fitting plan, else the least memory any plan needed; returns whether it took this one.
bool keep_better(FitPlan& best, const std::string& label, const StepEstimate& e, const Graph& graph) {
  best.capacity = e.memory_capacity;
  const bool better = e.fits ? !best.fits || e.step_time_s < best.step_time_s
                             : !best.fits && (best.label.empty() || e.peak_memory < best.peak_memory);
  if (!better) return false;
  best.fits = e.fits, best.label = label, best.step_time_s = e.step_time_s, best.peak_memory = e.peak_memory;
  best.samples_per_s = e.samples_per_s, best.mfu = e.mfu, best.tokens_per_sample = bound_sequence_length(graph);
  return true;
}

// Doubling from `start` while `fits`, then bisection; values are multiples of `step`.
FitAnswer bisect_largest(double start, double step, double limit, const std::function<FitPlan(double)>& at) {
  FitAnswer a;
  double lo = 0, hi = 0;
  FitPlan lo_plan, hi_plan;
  for (double v = start; v <= limit; v *= 2) {
    FitPlan p = at(v);
    if (p.fits) {
      lo = v, lo_plan = p;
    } else {
      hi = v, hi_plan = p;
      break;
    }
  }
  if (lo == 0) {  // not even the start fits
    a.next = start, a.next_plan = hi_plan;
    return a;
  }
  if (hi == 0) {  // the limit fits
    a.found = true, a.value = lo, a.plan = lo_plan;
    return a;
  }
  while (hi - lo > step) {
    const double mid = std::floor((lo + hi) / 2 / step) * step;
    if (mid <= lo) break;
    FitPlan p = at(mid);
    if (p.fits) lo = mid, lo_plan = p;
    else hi = mid, hi_plan = p;
  }
  a.found = true, a.value = lo, a.plan = lo_plan, a.next = hi, a.next_plan = hi_plan;
  return a;
}

}  // namespace

FitPlan fit_micro_batch(const FitQuery& q, const hardware::Cluster& cluster, int b, int* evaluations) {
  FitPlan best;
  const int devices = cluster.num_devices();
  const int per_node = cluster.levels.empty() ? 1 : cluster.levels.front().size;
  std::map<double, std::unique_ptr<Graph>> graphs;  // by global batch
  int layers = -1;
  // The best plan, named at the end by q.label (its degrees) beside its knobs.
  std::optional<Plan> best_plan;
  Graph* best_graph = nullptr;
  for (int tp : divisors(per_node)) {
    for (int pp : divisors(devices / tp)) {
      const int dp = devices / (tp * pp);
      const double batch = static_cast<double>(b) * dp * pp;
      auto& g = graphs[batch];
      if (!g) g = std::make_unique<Graph>(import_with(q, {{q.batch_dim.empty() ? std::string("batch") : q.batch_dim, batch}}));
      if (layers < 0) layers = find_transformer_structure(*g, node_iteration_spaces(*g)).decoder_layers();
      if ((tp > 1 || pp > 1) && layers == 0) continue;
      // Depths that do not divide the layers run as Megatron-LM splits them, both orders of an
      // odd rest (the first stage holds the most micro-batches in flight).
      std::vector<std::pair<int, int>> splits = megatron_uneven_splits(layers, pp);
      if (pp > 1 && layers % pp != 0 && splits.empty()) continue;
      if (splits.empty()) splits.emplace_back(0, 0);
      MegatronLayouts layouts(*g);
      for (const auto& [first, last] : splits) {
        for (int sp : tp > 1 ? std::vector<int>{1} : std::vector<int>{0}) {
          for (RecomputePolicy r : {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
            for (bool distopt : {false, true}) {
              MegatronKnobs k;
              k.tp = tp, k.pp = pp, k.mb = b, k.sp = sp, k.recompute = r, k.distopt = distopt && dp > 1;
              k.first = first, k.last = last;
              MegatronKnobs layout = k;
              layout.dp = dp;
              // Inside the bound of `fit --stack T` only the layouts T runs as written.
              const bool inside =
                  !q.options.bound ||
                  recipe_within_target(*q.options.bound, megatron_layout_recipe(layout, layers, cluster.stack.selective_recompute));
              if ((!distopt || dp > 1) && inside) {
                try {
                  const Plan plan = layouts.make(cluster, k, q.options);
                  const StepEstimate e = estimate_step(analyze_plan(*g, cluster, plan), plan, cluster);
                  if (evaluations) ++*evaluations;
                  if (keep_better(best, "megatron " + to_string(k), e, *g)) best_plan = plan, best_graph = g.get();
                } catch (const std::exception&) {
                  // a layout this model does not allow (heads not divisible ...): not a candidate
                }
              }
            }
          }
        }
      }
    }
  }
  if (best.label.empty()) best.label = fmt::format("no Megatron layout of micro-batch {} is valid", b);
  else if (q.label && best_plan) best.label = q.label(*best_graph, *best_plan, cluster) + " (--megatron " + best.label.substr(9) + ")";
  return best;
}

FitAnswer largest_micro_batch(const FitQuery& q, const hardware::Cluster& cluster) {
  int evaluations = 0;
  FitAnswer a = bisect_largest(1, 1, q.max_micro_batch, [&](double b) {
    FitPlan p = fit_micro_batch(q, cluster, static_cast<int>(b), &evaluations);
    if (q.progress) q.progress(fmt::format("fit: micro-batch {}: {}", b, p.fits ? "fits" : "does not fit"));
    return p;
  });
  a.evaluations = evaluations;
  return a;
}

FitPlan fit_strategy(const FitQuery& q, const hardware::Cluster& cluster, const std::map<std::string, double>& overrides) {
  FitPlan best;
  Graph g = import_with(q, overrides);
  try {
    const Plan plan = make_plan(q.strategy, g, cluster, q.options);
    const StepEstimate e = estimate_step(analyze_plan(g, cluster, plan), plan, cluster);
    keep_better(best, q.label ? q.label(g, plan, cluster) : q.strategy, e, g);
  } catch (const std::exception& e) {
    best.label = std::string("no plan: ") + e.what();
  }
  return best;
}

FitAnswer longest_sequence(const FitQuery& q, const hardware::Cluster& cluster) {
  const std::string name = q.sequence_dim.empty() ? kDefaultSequenceDim : q.sequence_dim;
  const auto bound = parse_bindings(q.bind);
  const auto seq = bound.find(name);
  const double start = seq != bound.end() ? std::max<double>(q.seq_step, std::floor(seq->second / q.seq_step) * q.seq_step) : q.seq_step;
  int evaluations = 0;
  FitAnswer a = bisect_largest(start, q.seq_step, 1 << 24, [&](double s) {
    ++evaluations;
    FitPlan p = fit_strategy(q, cluster, {{name, s}});
    if (q.progress) q.progress(fmt::format("fit: sequence {}: {}", s, p.fits ? "fits" : "does not fit"));
    return p;
  });
  if (!a.found && start > q.seq_step) {  // the bound sequence does not fit: walk down from it
    a = bisect_largest(q.seq_step, q.seq_step, start, [&](double s) {
      ++evaluations;
      return fit_strategy(q, cluster, {{name, s}});
    });
  }
  a.evaluations = evaluations;
  return a;
}

FitAnswer fewest_devices(const FitQuery& q, const hardware::Cluster& base) {
  const int per_node = base.levels.empty() ? 1 : base.levels.front().size;
  std::vector<std::pair<int, int>> sizes;  // (nodes, gpus per node)
  for (int g = 1; g < per_node; g *= 2) sizes.emplace_back(1, g);
  for (int n = 1; n <= q.max_nodes; ++n) sizes.emplace_back(n, per_node);
  FitAnswer a;
  FitPlan previous;
  double previous_devices = 0;
  for (const auto& [nodes, gpus] : sizes) {
    const hardware::Cluster c = hardware::scale_cluster(base, nodes, gpus);
    ++a.evaluations;
    FitPlan p = fit_strategy(q, c, {});
    if (q.progress) q.progress(fmt::format("fit: {} devices: {}", c.num_devices(), p.fits ? "fits" : "does not fit"));
    if (p.fits) {
      a.found = true, a.value = c.num_devices(), a.plan = p;
      a.next = previous_devices, a.next_plan = previous;  // the largest size tried below that does not fit
      return a;
    }
    previous = p, previous_devices = c.num_devices();
  }
  a.next = previous_devices, a.next_plan = previous;
  return a;
}

}  // namespace symtensor::compiler
