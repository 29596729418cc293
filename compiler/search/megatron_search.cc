#include "compiler/search/megatron_search.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "compiler/search/search_common.h"
#include "compiler/strategies/propagation.h"
#include "compiler/strategies/transformer_structure.h"

namespace symtensor::compiler {
namespace {

// Heads of the first attention GEMM (0 when the model has none).
long long attention_heads(Graph& graph, const std::vector<IterationSpace>& spaces, const TransformerStructure& s) {
  for (NodeId id : s.attention) {
    const int batch_loop = loop_with_symbol(graph, spaces[id], graph.batch_dim);
    const int heads = attention_heads_loop(spaces[id], batch_loop);
    if (heads < 0) continue;
    if (auto v = numeric_extent(graph, spaces[id].loops[heads].extent)) return static_cast<long long>(*v);
  }
  return 0;
}

// Context-parallel sizes worth pricing: Megatron-Core runs cp only with a fused attention
// kernel, for long sequences (from 8k tokens, each rank keeping at least 2k), with the
// sequence divisible by 2·cp. Shorter sequences never gain from it (the K/V exchange and
// the smaller kernels cost more than the activations it splits save) and would multiply
// the space several-fold (GPT-3 at seq 2048 on 1024 GPUs: 94 s instead of 14). The seed
// prices the same sizes (Qwen2 7B at 8k tokens on 64 H100, batch 32: cp=2 is Megatron-best).
std::vector<int> context_parallel_sizes(const Graph& graph, const TransformerStructure& s,
                                        const std::vector<IterationSpace>& spaces, int devices) {
  std::vector<int> sizes{1};
  bool fused = false;
  for (NodeId id : s.attention) fused = fused || spaces[id].kind == OpKind::attention;
  const double seq = bound_sequence_length(graph);
  if (!fused || seq < 8192) return sizes;
  for (int cp = 2; cp <= 32 && cp <= devices && seq / cp >= 2048; cp *= 2)
    if (devices % cp == 0 && std::fmod(seq, 2.0 * cp) == 0) sizes.push_back(cp);
  return sizes;
}

class MegatronSearch {
 public:
  MegatronSearch(PlanAnalyzer& analyzer, const StrategyOptions& options, MegatronSpace space)
      : analyzer_(analyzer), graph_(analyzer.graph()), cluster_(analyzer.cluster()), options_(options), space_(space) {}

  MegatronSearchResult run() {
    MegatronLayouts layouts(graph_, analyzer_.numeric().spaces());
    const std::vector<IterationSpace>& spaces = layouts.spaces();
    const TransformerStructure& structure = layouts.structure();
    const int layers = structure.layers();
    const long long heads = attention_heads(graph_, spaces, structure);
    const long long experts = expert_count(graph_, spaces, structure);
    const Plan skeleton = plan_skeleton("megatron", graph_, cluster_, options_);
    B_ = static_cast<long long>(skeleton.global_batch);
    const int devices = cluster_.num_devices();
    train_ = options_.mode == ExecutionMode::train;
    const bool seed = space_ == MegatronSpace::seed;
    const std::vector<int> cps = context_parallel_sizes(graph_, structure, spaces, devices);

    UpwardWalk widths;
    for (int tp : divisors(cluster_.devices_per_node())) {
      double best_of_tp = kInfinity;
      for (int cp : cps) {
        if ((heads > 0 && heads % tp != 0) || (seed && tp == 1 && cp == 1)) continue;
        UpwardWalk depths;
        for (int pp : divisors(std::max(layers, 1))) {
          if (devices % (tp * pp * cp) != 0 || (!train_ && pp > 1)) continue;
          const int dp = devices / (tp * pp * cp);
          if (B_ % dp != 0) continue;
          double best_of_pp = kInfinity;
          int least_recompute = 3;  // of the options that fit at this depth (3: none fits)
          // Sequence parallelism has tensor parallelism's communication volume and less
          // memory; the seed takes it whenever tp > 1.
          const std::vector<int> sps = tp == 1 ? std::vector<int>{0} : seed ? std::vector<int>{1} : std::vector<int>{0, 1};
          for (const auto& [sp, ep, etp] : layer_layouts(sps, tp, dp, experts)) {
            MegatronKnobs base;
            base.tp = tp, base.pp = pp, base.cp = cp, base.sp = sp == 1, base.dp = dp;
            base.ep = ep, base.etp = etp;
            Plan plan;
            try {
              plan = layouts.make(cluster_, base, options_);
            } catch (const std::exception& e) {
              last_error_ = e.what();
              continue;
            }
            UpwardWalk interleavings(2);
            for (int vp : divisors(std::max(layers / pp, 1))) {
              if (vp > 1 && pp == 1) continue;
              double best_of_vp = kInfinity;
              int vp_recompute = 3;
              UpwardWalk sizes;
              for (int mb : divisors(B_ / dp)) {
                const int m = static_cast<int>(B_ / dp / mb);
                if (vp > 1 && m % pp != 0) continue;
                bool any_fit = false;
                const double t = price_memory_options(plan, base, m, mb, vp, any_fit, vp_recompute);
                best_of_vp = std::min(best_of_vp, t);
                if (!any_fit) break;
                // The seed walks micro-batch sizes up only while the step time drops.
                if (seed && sizes.stop(t)) break;
              }
              best_of_pp = std::min(best_of_pp, best_of_vp);
              least_recompute = std::min(least_recompute, vp_recompute);
              // ... and interleaving depths up until two in a row do not help, past those
              // that need recomputation: the warm-up's activations are not monotone in v
              // (p = 4: 5.5 micro-batches in flight at v = 2, 4.75 at v = 4), so a depth
              // that needs recomputation can precede one that does not.
              if (seed && interleavings.stop(best_of_vp) && vp_recompute == 0) break;
            }
          }
          // ... and pipeline depths up only while they help (once one fits), or while
          // they need recomputation, which deeper pipelines may lift (GPT-3 on 768 H100 at
          // tp=2: full recomputation at pp=2 and 3, none at 6).
          best_of_tp = std::min(best_of_tp, best_of_pp);
          if (seed && depths.stop(best_of_pp) && least_recompute == 0) break;
        }
      }
      // ... and tensor-parallel widths up only while they help (once one fits): wider
      // groups trade more communication for memory the deeper pipelines save as well.
      if (seed && best_of_tp < kInfinity && widths.stop(best_of_tp)) break;
    }
    if (!best_eval_.valid) throw std::runtime_error("megatron search: no valid configuration (" + last_error_ + ")");
    return best_;
  }

 private:
  // (sp, ep, etp) for one (tp, dp): every ep dividing the experts whose etp x ep grid
  // folds over the tp x dp ranks (etp = tp, or 1 when ep is a multiple of tp), for MoE models.
  static std::vector<std::tuple<int, int, int>> layer_layouts(const std::vector<int>& sps, int tp, int dp, long long experts) {
    std::vector<std::tuple<int, int, int>> out;
    for (int sp : sps) {
      out.emplace_back(sp, 1, 0);
      if (experts <= 1) continue;
      for (int ep : divisors(static_cast<int>(experts))) {
        if (ep == 1) continue;
        if ((tp * dp) % (ep * tp) == 0) out.emplace_back(sp, ep, 0);
        if (tp > 1 && ep % tp == 0 && (tp * dp) % ep == 0) out.emplace_back(sp, ep, 1);
      }
    }
    return out;
  }

  // The memory options of one configuration, set on `plan` in turn: recomputation x how
  // the model states are sharded (none, the distributed optimizer, Megatron-FSDP's
  // optim_grads and optim_grads_params); returns the best step time among those that fit
  // (infinity when none does).
  // `least_recompute` falls to the least recomputation rank that fits.
  double price_memory_options(Plan& plan, const MegatronKnobs& base, int m, int mb, int vp, bool& any_fit,
                              int& least_recompute) {
    double best = kInfinity;
    struct Sharding {
      bool distopt;
      int fsdp;
    };
    std::vector<Sharding> shardings;
    const bool seed = space_ == MegatronSpace::seed;
    if (train_) {
      if (!seed) shardings.push_back({false, 0});
      shardings.push_back({true, 0});
      shardings.push_back({true, 2});
      shardings.push_back({true, 3});
    } else {
      shardings.push_back({false, 0});
    }
    // (recompute rank, sharding index) that fit. More recomputation only costs time, so a
    // fitting option dominates its sharding's higher ones; less sharding dominates more
    // up to the distributed optimizer (which only adds the weights' all-gather), but not
    // FSDP, whose prefetched gathers can hide behind compute while the step's all-gather goes.
    std::vector<std::pair<int, int>> fitted;
    const RecomputePolicy policies[] = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
    for (int r = 0; r < (train_ ? 3 : 1); ++r)
      for (int d = 0; d < static_cast<int>(shardings.size()); ++d) {
        const Sharding sharding = shardings[d];
        ++best_.configurations;
        bool dominated = false;
        for (auto [fr, fd] : fitted) dominated |= fr <= r && (fd == d || (fd < d && sharding.fsdp == 0));
        // The seed takes FSDP's full sharding under a pipeline (each micro-batch gathers its
        // stage's weights again) only while nothing fits without recomputation: LLaMA-2 70B
        // on 64 L4 runs tp=2 x pp=4 with it.
        if (seed && base.pp > 1 && sharding.fsdp == 3)
          for (auto [fr, fd] : fitted) dominated |= fr == 0;
        if (dominated) continue;
        plan.micro_batches = m;
        plan.virtual_stages = vp;
        plan.schedule = vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
        plan.recompute = policies[r];
        plan.distributed_optimizer = sharding.distopt;
        plan.zero_stage = sharding.fsdp;
        const Evaluation e = evaluate_plan(analyzer_, plan);
        ++best_.evaluations;
        if (!e.valid) {
          last_error_ = e.error;
          continue;
        }
        MegatronKnobs knobs = base;
        knobs.mb = mb, knobs.vp = vp, knobs.recompute = policies[r];
        knobs.distopt = sharding.distopt, knobs.fsdp = sharding.fsdp;
        if (e.estimate.fits) {
          fitted.emplace_back(r, d), any_fit = true;
          least_recompute = std::min(least_recompute, r);
          best = std::min(best, e.estimate.step_time_s);
          auto [it, added] = best_.best_by_ep.try_emplace(base.ep);
          if (added || e.estimate.step_time_s < it->second.step_time_s) {
            it->second.knobs = knobs;
            it->second.step_time_s = e.estimate.step_time_s;
          }
        }
        if (e.better_than(best_eval_)) {
          best_eval_ = e;
          best_.plan = plan;
          best_.estimate = e.estimate;
          best_.knobs = knobs;
        }
      }
    plan.zero_stage = 0;
    return best;
  }

  PlanAnalyzer& analyzer_;
  Graph& graph_;
  const hardware::Cluster& cluster_;
  const StrategyOptions& options_;
  MegatronSpace space_;
  long long B_ = 0;
  bool train_ = true;
  MegatronSearchResult best_;
  Evaluation best_eval_;
  std::string last_error_ = "no configuration";
};

}  // namespace

MegatronSearchResult megatron_search(PlanAnalyzer& analyzer, const StrategyOptions& options, MegatronSpace space) {
  return MegatronSearch(analyzer, options, space).run();
}

MegatronSearchResult megatron_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  const NumericGraph ng(graph);  // compiled once for every configuration priced
  PlanAnalyzer analyzer(graph, cluster, ng);
  MegatronSearchResult r = megatron_search(analyzer, options, MegatronSpace::exhaustive);
  r.analysis = analyzer.analyze(r.plan);
  return r;
}

Plan make_megatron_best_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  if (!options.megatron.empty()) return make_megatron_plan(graph, cluster, parse_megatron_knobs(options.megatron), options);
  return megatron_search(graph, cluster, options).plan;
}

}  // namespace symtensor::compiler
