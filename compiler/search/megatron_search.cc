#include "compiler/search/megatron_search.h"

#include <cmath>
#include <stdexcept>

#include "compiler/search/search_common.h"
#include "compiler/strategies/propagation.h"
#include "compiler/strategies/transformer_structure.h"

namespace symtensor::compiler {
namespace {

// Heads of the first attention GEMM (0 when the model has none).
long long attention_heads(Graph& graph, const std::vector<IterationSpace>& spaces, const TransformerStructure& s) {
  for (NodeId id : s.attention) {
    const int batch_loop = loop_with_symbol(graph, spaces[id], "batch");
    const int heads = attention_heads_loop(spaces[id], batch_loop);
    if (heads < 0) continue;
    if (auto v = numeric_extent(graph, spaces[id].loops[heads].extent)) return static_cast<long long>(*v);
  }
  return 0;
}

}  // namespace

MegatronSearchResult megatron_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  const std::vector<IterationSpace> spaces = node_iteration_spaces(graph);
  const TransformerStructure structure = find_transformer_structure(graph, spaces);
  const int layers = structure.layers();
  const long long heads = attention_heads(graph, spaces, structure);
  const Plan skeleton = plan_skeleton("megatron", graph, cluster, options);
  const long long B = static_cast<long long>(skeleton.global_batch);
  const int devices = cluster.num_devices();
  const bool train = options.mode == ExecutionMode::train;
  const NumericGraph ng(graph);  // compiled once for every configuration priced below
  PlanAnalyzer analyzer(graph, cluster, ng);

  MegatronSearchResult best;
  Evaluation best_eval;
  std::string last_error = "no configuration";
  for (int tp : divisors(cluster.devices_per_node())) {
    if (heads > 0 && heads % tp != 0) continue;
    for (int pp : divisors(std::max(layers, 1))) {
      if (devices % (tp * pp) != 0 || (!train && pp > 1)) continue;
      const int dp = devices / (tp * pp);
      if (B % dp != 0) continue;
      for (int sp : tp > 1 ? std::vector<int>{0, 1} : std::vector<int>{0}) {
        MegatronKnobs base;
        base.tp = tp, base.pp = pp, base.sp = sp == 1;
        Plan plan;
        try {
          plan = make_megatron_plan(graph, cluster, base, options);
        } catch (const std::exception& e) {
          last_error = e.what();
          continue;
        }
        for (int vp : divisors(std::max(layers / pp, 1))) {
          if (vp > 1 && pp == 1) continue;
          for (int mb : divisors(B / dp)) {
            const int m = static_cast<int>(B / dp / mb);
            if (vp > 1 && m % pp != 0) continue;
            bool any_fit = false;
            std::vector<std::pair<int, int>> fitted;  // (recompute rank, distopt) that fit
            const RecomputePolicy policies[] = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
            for (int r = 0; r < (train ? 3 : 1); ++r)
              for (int d = 0; d < (train ? 2 : 1); ++d) {
                ++best.configurations;
                bool dominated = false;
                for (auto [fr, fd] : fitted) dominated |= fr <= r && fd <= d;
                if (dominated) continue;
                Plan p = plan;
                p.micro_batches = m;
                p.virtual_stages = vp;
                p.schedule = vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
                p.recompute = policies[r];
                p.distributed_optimizer = d == 1;
                const Evaluation e = evaluate_plan(analyzer, p);
                ++best.evaluations;
                if (!e.valid) {
                  last_error = e.error;
                  continue;
                }
                if (e.estimate.fits) fitted.emplace_back(r, d), any_fit = true;
                if (e.better_than(best_eval)) {
                  best_eval = e;
                  best.plan = p;
                  best.estimate = e.estimate;
                  best.knobs = base;
                  best.knobs.mb = mb, best.knobs.vp = vp, best.knobs.recompute = policies[r], best.knobs.distopt = d == 1;
                  best.knobs.dp = dp;
                }
              }
            if (!any_fit) break;
          }
        }
      }
    }
  }
  if (!best_eval.valid) throw std::runtime_error("megatron search: no valid configuration (" + last_error + ")");
  return best;
}

Plan make_megatron_best_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  if (!options.megatron.empty()) return make_megatron_plan(graph, cluster, parse_megatron_knobs(options.megatron), options);
  return megatron_search(graph, cluster, options).plan;
}

}  // namespace symtensor::compiler
