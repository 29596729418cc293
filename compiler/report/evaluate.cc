#include "compiler/report/evaluate.h"

#include <chrono>

#include "compiler/report/plan_label.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/symtensor_search.h"

namespace symtensor::compiler {

EvaluatedPlan evaluate_strategy(const std::string& strategy, Graph& graph, const hardware::Cluster& cluster,
                                const StrategyOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  EvaluatedPlan e;
  e.label = strategy;
  bool analysed = false;  // the searches hand back their plan's analysis
  if (strategy == "symtensor") {
    SearchResult r = symtensor_search(graph, cluster, options);
    e.plan = std::move(r.plan);
    e.analysis = std::move(r.analysis);
    analysed = true;
    e.evaluations = r.evaluations;
    if (!r.summary.empty()) e.label = "symtensor " + r.summary;
  } else if (strategy == "megatron" && options.megatron.empty()) {
    MegatronSearchResult r = megatron_search(graph, cluster, options);
    e.plan = std::move(r.plan);
    e.analysis = std::move(r.analysis);
    analysed = true;
    e.evaluations = r.evaluations;
    e.label = "megatron " + to_string(r.knobs);
  } else {
    e.plan = make_plan(strategy, graph, cluster, options);
    if (strategy == "megatron") e.label = "megatron " + options.megatron;
  }
  // The label every report shows: degrees and batching in words ("8 micro-batches of 4 samples"),
  // else the search's own summary.
  e.label = plan_label_or(strategy, graph, e.plan, cluster, e.label);
  e.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!analysed) e.analysis = analyze_plan(graph, cluster, e.plan);
  e.estimate = estimate_step(e.analysis, e.plan, cluster);
  return e;
}

}  // namespace symtensor::compiler
