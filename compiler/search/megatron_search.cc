#include "compiler/search/megatron_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/analysis/transformer_structure.h"
#include "compiler/cost/step_bound.h"
#include "compiler/export/target_limits.h"
#include "compiler/search/search_common.h"
#include "compiler/strategies/propagation.h"

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

// The candidates of one knob: the given value alone when the constraints give it.
std::vector<int> given_or(const MegatronConstraints* c, const char* key, int value, std::vector<int> candidates) {
  if (c && c->has(key)) return {value};
  return candidates;
}

class MegatronSearch {
 public:
  MegatronSearch(PlanAnalyzer& analyzer, const StrategyOptions& options, MegatronSpace space,
                 const MegatronConstraints* constraints = nullptr)
      : analyzer_(analyzer), graph_(analyzer.graph()), cluster_(analyzer.cluster()), options_(options), space_(space),
        c_(constraints), selective_is_none_(selective_recompute_is_none(analyzer.numeric(), cluster_.stack)) {}

  MegatronSearchResult run() {
    MegatronLayouts layouts(graph_, analyzer_.numeric().spaces());
    const std::vector<IterationSpace>& spaces = layouts.spaces();
    const TransformerStructure& structure = layouts.structure();
    const int layers = structure.decoder_layers();  // Megatron's --num-layers: MTP layers aside
    layers_ = layers;
    const long long heads = attention_heads(graph_, spaces, structure);
    const long long experts = expert_count(graph_, spaces, structure);
    const Plan skeleton = plan_skeleton("megatron", graph_, cluster_, options_);
    B_ = static_cast<long long>(skeleton.global_batch);
    const int devices = cluster_.num_devices();
    train_ = options_.mode == ExecutionMode::train;
    const bool seed = space_ == MegatronSpace::seed;
    const MegatronKnobs& given = c_ ? c_->knobs : MegatronKnobs{};
    if (c_) check_constraints(heads, layers, experts);
    const std::vector<int> cps = given_or(c_, "cp", given.cp, context_parallel_sizes(graph_, structure, spaces, devices));
    if (space_ == MegatronSpace::exhaustive) {
      try {
        compute_bound_s_ = compute_time_lower_bound(graph_, cluster_, options_, analyzer_.numeric());
      } catch (const std::exception&) {
        compute_bound_s_ = 0;  // no bound (no batch bound): every point priced
      }
    }

    UpwardWalk widths(2);
    for (int tp : given_or(c_, "tp", given.tp, divisors(cluster_.devices_per_node()))) {
      double best_of_tp = kInfinity;
      for (int cp : cps) {
        if (heads > 0 && heads % tp != 0) continue;
        if (c_ && c_->has("sp") && given.sp && tp == 1) continue;  // sequence parallelism needs tp > 1
        // Depth is not unimodal where memory forces recomputation at the shallow end: LLaMA-2 13B
        // on 32 L4 (128 x 2048) at tp=2 is estimated at 16.5 s at pp=1 (memory forces
        // recomputation), 18.2 s at pp=2 (fits without it, slower), 13.6 s at pp=4 (the best)
        // and 14.3 s at pp=8. One slower depth does not end the walk; two do.
        UpwardWalk depths(2);
        // The seed prices uneven stages only where it otherwise leaves pipelines to the
        // SymTensor search (tp = 1 without cp or experts: below), whose own stages split the
        // node axis only (pp = 3 on 24 H100, not pp = 6). Everywhere (DeepSeek-V3's 61 layers
        // on 2048 H100) they would double its evaluations.
        const bool uneven = !seed || (tp == 1 && cp == 1);
        const std::vector<PipelineDepth> depth_list = pipeline_depths(layers, devices / (tp * cp), uneven);
        // Both orders of an odd rest are one depth to the seed's walk: the best of them.
        double best_of_depth = kInfinity;
        int depth_forced = 3;
        for (std::size_t d = 0; d < depth_list.size(); ++d) {
          const PipelineDepth& depth = depth_list[d];
          const int pp = depth.pp;
          if (devices % (tp * pp * cp) != 0) {
            grid_skip_ = "tp=" + std::to_string(tp) + " x pp=" + std::to_string(pp) + " x cp=" + std::to_string(cp) +
                         " does not divide the " + std::to_string(devices) + " devices";
            continue;
          }
          // Inference runs without a pipeline, unless the knobs ask for one.
          if (!train_ && pp > 1 && !(c_ && c_->has("pp"))) continue;
          const int dp = devices / (tp * pp * cp);
          if (c_ && c_->has("dp") && dp != given.dp) {
            last_skip_ = "dp=" + std::to_string(given.dp) + " but the devices leave dp=" + std::to_string(dp) +
                          " at tp=" + std::to_string(tp) + ", pp=" + std::to_string(pp) + ", cp=" + std::to_string(cp);
            continue;
          }
          if (B_ % dp != 0) {
            last_skip_ = "batch " + std::to_string(B_) + " is not divisible by dp=" + std::to_string(dp);
            continue;
          }
          double best_of_pp = kInfinity;
          int least_forced = 3;  // of the options that fit at this depth (3: none fits; see price_memory_options)
          // Sequence parallelism has tensor parallelism's communication volume and less
          // memory; the seed takes it whenever tp > 1.
          const std::vector<int> sps = given_or(c_, "sp", given.sp ? 1 : 0,
                                                tp == 1 ? std::vector<int>{0} : seed ? std::vector<int>{1} : std::vector<int>{0, 1});
          // The seed walks expert-parallel sizes up (per sp and etp) until two in a row do
          // not help: wider expert groups trade a longer all-to-all for fewer experts' weights
          // per rank, and past the best size the exchange only grows (DeepSeek-V3 on 2048
          // H100 at tp=1: 16.4, 15.9, 15.2, 19.4, 22.6 s at ep = 2 ... 32).
          std::map<std::pair<int, int>, UpwardWalk> expert_walks;
          for (const auto& [sp, ep, etp] : layer_layouts(sps, tp, dp, experts)) {
            // The seed leaves out tp = 1 without cp or experts: data and pipeline parallelism,
            // which the SymTensor search covers itself (expert parallelism at tp = 1 it does not),
            // but for uneven stages (above), which it prices there alone.
            if (seed && tp == 1 && cp == 1 && (ep == 1) == (layers % pp == 0)) continue;
            UpwardWalk& expert_walk = expert_walks.try_emplace({sp, etp}, 2).first->second;
            if (seed && expert_walk.stopped()) continue;
            double best_of_layout = kInfinity;
            MegatronKnobs base;
            base.tp = tp, base.pp = pp, base.cp = cp, base.sp = sp == 1, base.dp = dp;
            base.ep = ep, base.etp = etp;
            base.first = depth.first, base.last = depth.last;
            if (c_ && c_->has("replicate")) base.replicate = given.replicate;
            // A given token dispatcher for every layout that exchanges tokens (Megatron's
            // all-to-all otherwise: DeepEP and HybridEP are installed apart).
            if (ep > 1) base.dispatcher = given.dispatcher, base.ep_overlap = given.ep_overlap;
            // The SymTensor search's seed stays within that search's space, which pads nothing.
            base.vocab_div = seed ? 0 : given.vocab_div;
            // A layout the bound's target cannot write with the least of every other knob
            // (no interleaving, recomputation or sharding, each always expressible) it cannot
            // write with any: not built.
            if (const std::string beyond = beyond_bound(base); !beyond.empty()) {
              last_skip_ = beyond;
              continue;
            }
            Plan plan;
            try {
              // Built sharded when replicas are given (the layout is the same; the memory options set the sharding).
              MegatronKnobs build = base;
              if (base.replicate > 1) build.fsdp = 3;
              plan = layouts.make(cluster_, build, options_);
              plan.cuts_stamp = new_cuts_stamp();  // priced under every memory option
              layout_seconds_.clear();
              replicas_ = replica_candidates(base);
            } catch (const std::exception& e) {
              last_error_ = e.what();
              ++build_errors_[last_error_];
              continue;
            }
            UpwardWalk interleavings(2);
            // Interleaving splits each stage's layers evenly into chunks: even stages only.
            const std::vector<int> vps = layers % pp != 0 ? std::vector<int>{1} : divisors(std::max(layers / pp, 1));
            for (int vp : given_or(c_, "vp", given.vp, vps)) {
              if (vp > 1 && pp == 1) {
                last_skip_ = "vp=" + std::to_string(vp) + " (interleaving) needs pp > 1";
                continue;
              }
              // Only a given vp gets here at an uneven depth (the open search's vps above hold
              // 1 there): refused in one line rather than priced as another split.
              if (vp > 1 && layers % pp != 0) {
                last_skip_ = "vp=" + std::to_string(vp) + " (interleaving) needs pp=" + std::to_string(pp) +
                             " to divide the " + std::to_string(layers) + " layers";
                continue;
              }
              double best_of_vp = kInfinity;
              int vp_forced = 3;
              UpwardWalk sizes;
              unfit_.clear();
              for (int mb : given_or(c_, "mb", given.mb, divisors(B_ / dp))) {
                if ((B_ / dp) % mb != 0) {
                  last_skip_ = "mb=" + std::to_string(mb) + " does not divide the " + std::to_string(B_ / dp) +
                                " samples per replica (batch " + std::to_string(B_) + " / dp=" + std::to_string(dp) + ")";
                  continue;
                }
                const int m = static_cast<int>(B_ / dp / mb);
                if (vp > 1 && m % pp != 0) {
                  last_skip_ = "the interleaved schedule needs micro-batches (" + std::to_string(m) +
                                ") to be a multiple of pp=" + std::to_string(pp);
                  continue;
                }
                if (pruned_by_step_bound(base.ep, pp, vp, m, mb)) continue;
                bool any_fit = false;
                const double t = price_memory_options(plan, base, m, mb, vp, any_fit, vp_forced);
                best_of_vp = std::min(best_of_vp, t);
                if (!any_fit) break;
                // The seed walks micro-batch sizes up only while the step time drops.
                if (seed && sizes.stop(t)) break;
              }
              best_of_pp = std::min(best_of_pp, best_of_vp);
              best_of_layout = std::min(best_of_layout, best_of_vp);
              least_forced = std::min(least_forced, vp_forced);
              // ... and interleaving depths up until two in a row do not help, past those
              // that memory forces to recompute or shard fully: the warm-up's activations are
              // not monotone in v (p = 4: 5.5 micro-batches in flight at v = 2, 4.75 at v = 4),
              // so such a depth can precede one that needs neither.
              if (seed && interleavings.stop(best_of_vp) && vp_forced == 0) break;
            }
            expert_walk.stop(best_of_layout);
          }
          // ... and pipeline depths up only while they help (once one fits), or while
          // memory forces recomputation or FSDP's full sharding on them, which deeper
          // pipelines may lift (GPT-3 on 768 H100 at tp=2 under the Megatron stack: only
          // ZeRO-3 fits up to pp=4, at 9.2-9.6 s; ZeRO-2 fits at pp=6, at 7.6 s).
          // The uneven stages the seed prices at tp = 1 (its safety net, above) steer neither
          // walk: the widths would start from them, and an MoE model's depths alternate
          // between them (ep = 1) and the even ones (ep > 1).
          if (seed && tp == 1 && cp == 1 && layers % pp != 0) continue;
          best_of_tp = std::min(best_of_tp, best_of_pp);
          best_of_depth = std::min(best_of_depth, best_of_pp), depth_forced = std::min(depth_forced, least_forced);
          if (d + 1 < depth_list.size() && depth_list[d + 1].pp == pp) continue;
          if (seed && depths.stop(best_of_depth) && depth_forced == 0) break;
          best_of_depth = kInfinity, depth_forced = 3;
        }
      }
      // ... and tensor-parallel widths up until two in a row do not help (once one fits):
      // wider groups trade more communication for memory the deeper pipelines save as well,
      // and the trade is not monotone (LLaMA-2 70B on 2048 A100 without a stack: 4.64 s at
      // tp=2, 4.72 s at tp=4, 4.42 s at tp=8).
      if (seed && best_of_tp < kInfinity && widths.stop(best_of_tp)) break;
    }
    if (!best_eval_.valid) {
      // A plan that failed to build or price says more than a combination skipped.
      // The reason most plans failed to build for (heads that tp does not divide rather than the
      // pipeline depths no topology level takes), else the last one to price.
      // A grid that divides the devices skipped for a reason of its own says more than one that
      // does not divide them (24 GPUs and a batch of 32: dp = 3 or 24 everywhere, not tp=8 x pp=16).
      std::string why = !last_error_.empty() ? last_error_
                        : !last_skip_.empty() ? last_skip_
                        : !grid_skip_.empty() ? grid_skip_
                                              : "no configuration";
      int most = 0;
      for (const auto& [error, count] : build_errors_)
        if (count > most) most = count, why = error;
      if (c_) throw std::runtime_error("--megatron " + c_->text() + ": no valid configuration (" + why + ")");
      throw std::runtime_error("megatron search: no valid configuration" +
                               (options_.bound ? " that " + std::string(to_string(*options_.bound)) + " runs as written" : std::string()) +
                               " (" + why + ")");
    }
    best_.plan.cuts_stamp = 0;  // the caller may change its cuts
    return best_;
  }

 private:
  struct PipelineDepth {
    int pp;
    int first = 0, last = 0;  // layers of the first and last stage (0: Megatron-LM's even split)
  };

  // The pipeline depths to price: the given one, else those dividing the layers and those
  // dividing the ranks tp and cp leave, split as Megatron-LM splits them
  // (megatron_uneven_splits; each order of an odd rest priced: the first stage keeps pp
  // micro-batches in flight, the last the output layer). LLaMA-2 7B at 8 layers on the 24
  // GPUs of 3 nodes, batch 256: pp=3 with 3/3/2 layers runs them all at 530 ms, where every
  // even depth leaves dp a multiple of 3, which 256 is not (16 GPUs, 577 ms).
  std::vector<PipelineDepth> pipeline_depths(int layers, int ranks, bool uneven) const {
    std::vector<PipelineDepth> out;
    const MegatronKnobs& given = c_ ? c_->knobs : MegatronKnobs{};
    if (c_ && c_->has("pp")) {
      // pp alone where it does not divide the layers: as Megatron-LM splits them (as the open
      // search prices that depth), else the knobs as given.
      if (!c_->has("first") && !c_->has("last"))
        for (const auto& [first, last] : megatron_uneven_splits(layers, given.pp)) out.push_back({given.pp, first, last});
      if (out.empty()) out.push_back({given.pp, given.first, given.last});
      return out;
    }
    for (int pp : divisors(std::max(layers, 1))) out.push_back({pp});
    if (!uneven || (c_ && (c_->has("first") || c_->has("last")))) return out;
    for (int pp : divisors(ranks))
      for (const auto& [first, last] : megatron_uneven_splits(layers, pp)) out.push_back({pp, first, last});
    // Deepest last: the seed walks depths up.
    std::stable_sort(out.begin(), out.end(), [](const PipelineDepth& a, const PipelineDepth& b) { return a.pp < b.pp; });
    return out;
  }

  // Constraints no configuration can meet, named in one line before searching.
  void check_constraints(long long heads, int layers, long long experts) const {
    const MegatronKnobs& k = c_->knobs;
    const int per_node = cluster_.devices_per_node(), devices = cluster_.num_devices();
    auto refuse = [&](const std::string& key, const std::string& why) {
      std::string value;
      for (const std::string& item : c_->items)
        if (item.compare(0, key.size() + 1, key + "=") == 0) value = item.substr(key.size() + 1);
      throw std::runtime_error("--megatron " + key + "=" + value + ": " + why);
    };
    if (c_->has("tp") && per_node % k.tp != 0)
      refuse("tp", "tp must divide the " + std::to_string(per_node) + " GPUs per node of '" + cluster_.name + "'");
    if (c_->has("tp") && heads > 0 && heads % k.tp != 0)
      refuse("tp", "tp does not divide the " + std::to_string(heads) + " attention heads");
    if (c_->has("pp") && k.pp > std::max(layers, 1))
      refuse("pp", "more pipeline stages than the " + std::to_string(layers) + " layers");
    for (const char* key : {"tp", "pp", "cp", "dp"}) {
      const int v = std::string(key) == "tp" ? k.tp : std::string(key) == "pp" ? k.pp : std::string(key) == "cp" ? k.cp : k.dp;
      if (c_->has(key) && devices % v != 0)
        refuse(key, std::string(key) + " does not divide the " + std::to_string(devices) + " devices");
    }
    if (c_->has("mb") && B_ % k.mb != 0) refuse("mb", "mb does not divide the batch of " + std::to_string(B_));
    if (c_->has("ep") && k.ep > 1 && experts == 0) refuse("ep", "the model has no expert layers");
    if (c_->has("dispatcher") && experts == 0) refuse("dispatcher", "the model has no expert layers");
    if (c_->has("ep_overlap") && k.ep_overlap && experts == 0) refuse("ep_overlap", "the model has no expert layers");
    if (c_->has("ep") && experts > 0 && experts % k.ep != 0)
      refuse("ep", "ep does not divide the " + std::to_string(experts) + " experts");
    if (c_->has("etp") && c_->has("tp") && k.etp != 1 && k.etp != k.tp) refuse("etp", "etp must be 1 or tp");
    if ((c_->has("first") || c_->has("last")) && !(c_->has("pp") && k.pp > 1))
      refuse(c_->has("first") ? "first" : "last",
             "first=/last= (layers of the first/last pipeline stage) need pp > 1; give pp as well");
    if (c_->has("vp") && k.vp > 1 && c_->has("pp") && k.pp == 1) refuse("vp", "interleaving needs pp > 1");
    if (c_->has("sp") && k.sp && c_->has("tp") && k.tp == 1) refuse("sp", "sequence parallelism needs tp > 1");
    if (c_->has("offload") && !c_->fully_fixed())
      refuse("offload", "activation offloading is priced for one plan, not searched: give tp, pp=1 and mb as well");
  }

  // Empty when no bound is set or its target writes the Megatron layout of `knobs` as it is;
  // else why not ("torchtitan cannot run tp=2,pp=1,... as written: <the target's first item>").
  std::string beyond_bound(const MegatronKnobs& knobs) const {
    if (!options_.bound) return {};
    const std::vector<std::string> items =
        recipe_beyond_target(*options_.bound, megatron_layout_recipe(knobs, layers_, cluster_.stack.selective_recompute));
    if (items.empty()) return {};
    return std::string(to_string(*options_.bound)) + " cannot run " + to_string(knobs) + " as written: " + items.front();
  }

  // (sp, ep, etp) for one (tp, dp): every ep dividing the experts whose etp x ep grid
  // folds over the tp x dp ranks (etp = tp, or 1 when ep is a multiple of tp), for MoE models.
  std::vector<std::tuple<int, int, int>> layer_layouts(const std::vector<int>& sps, int tp, int dp, long long experts) const {
    std::vector<std::tuple<int, int, int>> out;
    if (c_ && (c_->has("ep") || c_->has("etp"))) {
      // The given expert layout (etp = tp written 0, as the search writes it). ep given
      // without etp means etp = tp, as Megatron-LM's --expert-model-parallel-size alone does;
      // etp alone leaves ep to the search. What does not fold, the layout generator names.
      const int ep = c_->has("ep") ? c_->knobs.ep : 0;
      for (const auto& [sp, e, etp] : layer_layouts_unconstrained(sps, tp, dp, experts)) {
        const int etp_size = etp > 0 ? etp : tp;
        const bool etp_ok = c_->has("etp") ? etp_size == c_->knobs.etp : ep == 0 || etp == 0;
        if ((ep == 0 || e == ep) && etp_ok) out.emplace_back(sp, e, etp);
      }
      if (out.empty())
        for (int sp : sps) out.emplace_back(sp, std::max(ep, 1), c_->has("etp") ? c_->knobs.etp : 0);
      return out;
    }
    return layer_layouts_unconstrained(sps, tp, dp, experts);
  }

  static std::vector<std::tuple<int, int, int>> layer_layouts_unconstrained(const std::vector<int>& sps, int tp, int dp,
                                                                            long long experts) {
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
  // `least_forced` falls to the least of what memory forces on the options that fit: 0 for
  // one without recomputation or FSDP's full sharding of the weights, else its recomputation
  // rank (at least 1).
  double price_memory_options(Plan& plan, const MegatronKnobs& base, int m, int mb, int vp, bool& any_fit,
                              int& least_forced) {
    double best = kInfinity;
    struct Sharding {
      bool distopt;
      int fsdp;
      int replicas = 1;  // HSDP: replicas_ entry's size
      const std::vector<int>* replicate_axes = nullptr;
    };
    std::vector<Sharding> shardings;
    const bool seed = space_ == MegatronSpace::seed;
    const bool replicas_given = c_ && c_->has("replicate");
    if (c_ && (c_->has("distopt") || c_->has("fsdp"))) {
      // The given sharding, or those the given knob leaves (fsdp implies the distributed optimizer).
      const bool distopt = c_->knobs.distopt;
      if (c_->has("fsdp")) {
        if (c_->knobs.fsdp > 0 && c_->has("distopt") && !distopt) {
          last_error_ = "fsdp=" + std::to_string(c_->knobs.fsdp) + " implies the distributed optimizer (distopt=0 given)";
          return kInfinity;
        }
        shardings.push_back({distopt || c_->knobs.fsdp > 0, c_->knobs.fsdp});
      } else if (!distopt) {
        shardings.push_back({false, 0});
      } else {
        for (int fsdp : train_ ? std::vector<int>{0, 2, 3} : std::vector<int>{0}) shardings.push_back({true, fsdp});
      }
    } else if (train_) {
      if (!seed) shardings.push_back({false, 0});
      shardings.push_back({true, 0});
      shardings.push_back({true, 2});
      shardings.push_back({true, 3});
    } else {
      shardings.push_back({false, 0});
    }
    // HSDP: FSDP inside each replica, where the bound's target runs it (torchtitan) or the
    // knobs give the replicas (then every sharding given or searched runs inside them).
    if (replicas_given) {
      std::vector<Sharding> inside;
      for (const Sharding& sh : shardings)
        if (sh.distopt && !replicas_.empty()) inside.push_back({true, sh.fsdp, replicas_[0].first, &replicas_[0].second});
      shardings = std::move(inside);
      if (shardings.empty()) {
        last_error_ = "replicate=" + std::to_string(c_->knobs.replicate) + " (HSDP) needs sharded model states (fsdp or distopt)";
        return kInfinity;
      }
    } else if (train_ && options_.bound == ExportTarget::torchtitan && !(c_ && c_->has("fsdp") && c_->knobs.fsdp != 3) &&
               !(c_ && c_->has("distopt") && !c_->knobs.distopt)) {
      for (const auto& [replicas, axes] : replicas_) shardings.push_back({true, 3, replicas, &axes});
    }
    // (recompute rank, sharding index) that fit. More recomputation only costs time, so a
    // fitting option dominates its sharding's higher ones; less sharding dominates more
    // up to the distributed optimizer (which only adds the weights' all-gather), but not
    // FSDP, whose prefetched gathers can hide behind compute while the step's all-gather goes.
    std::vector<std::pair<int, int>> fitted;
    const RecomputePolicy policies[] = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
    for (int r = 0; r < (train_ ? 3 : 1); ++r)
      for (int d = 0; d < static_cast<int>(shardings.size()); ++d) {
        if (c_ && c_->has("recompute") && policies[r] != c_->knobs.recompute) continue;
        // Priced as no recomputation, it fits where that fits and never runs faster (ties go
        // to the first priced): not priced, unless asked for.
        if (policies[r] == RecomputePolicy::selective && selective_is_none_ && !(c_ && c_->has("recompute"))) continue;
        const Sharding sharding = shardings[d];
        MegatronKnobs knobs = base;
        knobs.mb = mb, knobs.vp = vp, knobs.recompute = policies[r];
        knobs.distopt = sharding.distopt, knobs.fsdp = sharding.fsdp, knobs.replicate = sharding.replicas;
        if (knobs.ep_overlap && ((knobs.pp > 1 && vp == 1) || knobs.recompute == RecomputePolicy::full)) {
          last_skip_ = "ep_overlap=1 needs vp > 1 under pp > 1 and no full recomputation";
          continue;
        }
        // Outside the bound's target: neither priced nor counted as fitting (so it prunes nothing).
        if (options_.bound) {
          if (std::string beyond = beyond_bound(knobs); !beyond.empty()) {
            last_skip_ = std::move(beyond);
            continue;
          }
        }
        ++best_.configurations;
        bool dominated = false;
        for (auto [fr, fd] : fitted) dominated |= fr <= r && (fd == d || (fd < d && sharding.fsdp == 0));
        // The seed takes FSDP's full sharding under a pipeline (each micro-batch gathers its
        // stage's weights again) only while nothing fits without recomputation: LLaMA-2 70B
        // on 64 L4 runs tp=2 x pp=4 with it.
        if (seed && base.pp > 1 && sharding.fsdp == 3)
          for (auto [fr, fd] : fitted) dominated |= fr == 0;
        if (dominated) continue;
        // An option that did not fit at a smaller micro-batch needs more memory here, where the
        // micro-batches in flight are at their cap (at least 2p micro-batches: below it, fewer in
        // flight can hold less): not priced once a plan fits (it cannot be the result then).
        const auto option = std::make_tuple(r, sharding.distopt, sharding.fsdp, sharding.replicas);
        if (space_ != MegatronSpace::unpruned && m >= 2 * base.pp && best_eval_.valid && best_eval_.estimate.fits &&
            unfit_.count(option))
          continue;
        plan.micro_batches = m;
        plan.virtual_stages = vp;
        plan.schedule = vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
        plan.recompute = policies[r];
        plan.moe_comm_overlap = knobs.ep_overlap;
        plan.distributed_optimizer = sharding.distopt;
        plan.zero_stage = sharding.fsdp;
        plan.replicate_axes = sharding.replicate_axes ? *sharding.replicate_axes : std::vector<int>{};
        const Evaluation e = evaluate_plan(analyzer_, plan);
        ++best_.evaluations;
        if (!e.valid) {
          last_error_ = e.error;
          continue;
        }
        keep_layout_seconds(plan, mb);
        if (!e.estimate.fits) unfit_.insert(option);
        if (e.estimate.fits) {
          fitted.emplace_back(r, d), any_fit = true;
          least_forced = std::min(least_forced, r > 0 || sharding.fsdp == 3 ? std::max(r, 1) : 0);
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
        auto& full = best_.fastest_full_recompute;
        constexpr std::size_t kFullKept = 3;
        if (seed && e.estimate.fits && policies[r] == RecomputePolicy::full &&
            (full.size() < kFullKept || e.estimate.step_time_s < full.back().step_time_s)) {
          if (full.size() == kFullKept) full.pop_back();
          auto at = std::find_if(full.begin(), full.end(), [&](const auto& f) { return e.estimate.step_time_s < f.step_time_s; });
          at = full.insert(at, MegatronSearchResult::FullRecompute{plan, knobs, e.estimate.step_time_s});
          at->plan.cuts_stamp = 0;  // the caller changes its recomputation
        }
      }
    plan.zero_stage = 0;
    plan.replicate_axes.clear();
    return best;
  }

  // The estimate of a pipeline of p stages, m micro-batches and v chunks per device is at least
  // its stages' time per micro-batch times (m + (p - 1) / v) / p (the slowest stage m times,
  // the others once over v: estimate_step). That time is at least compute_time_lower_bound's
  // share of one micro-batch and, once a plan of the layout at the micro-batch size was priced
  // without recomputation, at least that plan's compute and exposed activation collectives
  // (layout_seconds_: the same operators and cuts at every interleaving depth and memory
  // option; recomputation only adds to both, ZeRO's gathers and the pipeline's sends are
  // counted apart). A point whose bound exceeds the fastest fitting step of its expert-parallel
  // size so far changes neither that step nor the result: not priced.
  bool pruned_by_step_bound(int ep, int pp, int vp, int m, int mb) {
    if (compute_bound_s_ <= 0) return false;
    const auto it = best_.best_by_ep.find(ep);
    if (it == best_.best_by_ep.end()) return false;
    double per_micro_batch = compute_bound_s_ / m;
    if (const auto known = layout_seconds_.find(mb); known != layout_seconds_.end())
      per_micro_batch = std::max(per_micro_batch, known->second);
    if (per_micro_batch * (m + (pp - 1) / static_cast<double>(vp)) <= it->second.step_time_s) return false;
    ++best_.pruned;
    return true;
  }

  // Keeps the layout's time per micro-batch of `plan` (priced without recomputation) for
  // pruned_by_step_bound: its stages' forward and backward compute and exposed activation
  // collectives, averaged over the stages.
  void keep_layout_seconds(const Plan& plan, int mb) {
    if (compute_bound_s_ <= 0 || plan.recompute != RecomputePolicy::none || layout_seconds_.count(mb)) return;
    const StageTotals& t = analyzer_.totals(plan);
    double sum = 0;
    for (std::size_t s = 0; s < t.fwd_compute.size(); ++s)
      sum += t.fwd_compute[s] + t.bwd_compute[s] + t.fwd_comm[s] + t.bwd_comm[s];
    layout_seconds_[mb] = sum / std::max<std::size_t>(t.fwd_compute.size(), 1);
  }

  // HSDP's replicas on the layout of `base`: the given count's axes, or else each run of the
  // outermost data-parallel axes the experts do not take that leaves a shard group of more than
  // one rank (replicas across nodes, sharding inside them), with its size.
  std::vector<std::pair<int, std::vector<int>>> replica_candidates(const MegatronKnobs& base) const {
    std::vector<std::pair<int, std::vector<int>>> out;
    const MegatronMesh mesh = megatron_mesh(cluster_, base);
    if (base.replicate > 1) {
      out.emplace_back(base.replicate, mesh.replicate_axes);
      return out;
    }
    std::vector<int> sizes;
    for (const auto& level : mesh.factors) sizes.insert(sizes.end(), level.begin(), level.end());
    const int dp = std::max(base.dp, 1);
    std::vector<int> axes;
    int replicas = 1;
    for (std::size_t i = 0; i < mesh.edp_axes.size(); ++i) {
      axes.push_back(mesh.edp_axes[i]);
      replicas *= sizes[mesh.edp_axes[i]];
      if (replicas > 1 && replicas < dp) out.emplace_back(replicas, axes);
    }
    return out;
  }

  PlanAnalyzer& analyzer_;
  Graph& graph_;
  const hardware::Cluster& cluster_;
  const StrategyOptions& options_;
  MegatronSpace space_;
  const MegatronConstraints* c_;
  const bool selective_is_none_;  // selective_recompute_is_none
  long long B_ = 0;
  double compute_bound_s_ = 0;  // compute_time_lower_bound (exhaustive search only; 0: none)
  std::map<int, double> layout_seconds_;  // of the layout built last, per micro-batch size (keep_layout_seconds)
  // Memory options (recompute rank, distopt, fsdp, replicas) that did not fit at a smaller
  // micro-batch of the layout and interleaving depth priced now.
  std::set<std::tuple<int, bool, int, int>> unfit_;
  int layers_ = 0;  // transformer layers of the model
  bool train_ = true;
  MegatronSearchResult best_;
  Evaluation best_eval_;
  std::string last_error_;  // the last plan that failed to build or price
  std::string last_skip_;   // the last combination of knobs skipped before building (its grid divides the devices)
  std::string grid_skip_;   // the last tp x pp x cp grid that does not divide the devices
  std::map<std::string, int> build_errors_;  // why plans failed to build, and how often
  std::vector<std::pair<int, std::vector<int>>> replicas_;  // HSDP candidates of the layout built last
};

}  // namespace

// Context-parallel sizes worth pricing (megatron_search.h): Megatron-Core runs cp only with a
// fused attention kernel, with the sequence divisible by 2·cp; each rank keeps at least 2k
// tokens, so cp starts at 4k-token sequences. Shorter pieces never gain from it (the K/V
// exchange and the smaller kernels cost more than the activations it splits save) and would
// multiply the space several-fold (GPT-3 at seq 2048 on 1024 GPUs: 94 s instead of 14). At 4k,
// cp=2 can replace a wider tp (LLaVA-1.5 7B with 2,880 image tokens on 32 H100, batch 112: tp=2
// cp=2 1.29 s against tp=4's 1.37 s). The seed prices the same sizes (Qwen2 7B at 8k tokens on
// 64 H100, batch 32: cp=2 is Megatron-best).
std::vector<int> context_parallel_sizes(const Graph& graph, const TransformerStructure& s,
                                        const std::vector<IterationSpace>& spaces, int devices) {
  std::vector<int> sizes{1};
  bool fused = false;
  for (NodeId id : s.attention) fused = fused || spaces[id].kind == OpKind::attention;
  const double seq = bound_sequence_length(graph);
  if (!fused || seq < 4096) return sizes;
  for (int cp = 2; cp <= 32 && cp <= devices && seq / cp >= 2048; cp *= 2)
    if (devices % cp == 0 && std::fmod(seq, 2.0 * cp) == 0) sizes.push_back(cp);
  return sizes;
}

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

MegatronSearchResult megatron_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                                     const MegatronConstraints& constraints) {
  const NumericGraph ng(graph);
  PlanAnalyzer analyzer(graph, cluster, ng);
  MegatronSearchResult r = MegatronSearch(analyzer, options, MegatronSpace::exhaustive, &constraints).run();
  r.analysis = analyzer.analyze(r.plan);
  return r;
}

Plan make_megatron_best_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  if (options.megatron.empty()) return megatron_search(graph, cluster, options).plan;
  const MegatronConstraints constraints = parse_megatron_constraints(options.megatron);
  if (constraints.fully_fixed()) return make_megatron_plan(graph, cluster, constraints.knobs, options);
  return megatron_search(graph, cluster, options, constraints).plan;
}

}  // namespace symtensor::compiler
