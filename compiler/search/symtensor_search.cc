#include "compiler/search/symtensor_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/cost/kernel_precision.h"
#include "compiler/export/export.h"
#include "compiler/search/ilp_solver.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/pipeline_stages.h"
#include "compiler/search/recompute_layers.h"
#include "compiler/search/search_common.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/strategies/data_parallel.h"
#include "compiler/strategies/propagation.h"

namespace symtensor::compiler {

LevelSearchResult search_levels(const LevelContext& ctx, const std::vector<int>& axes, LevelSolver solver) {
  LevelSearchResult r;
  const auto& heavy = ctx.folded->heavy;
  r.heavy_cuts.resize(heavy.size());
  for (std::size_t h = 0; h < heavy.size(); ++h) r.heavy_cuts[h].loop_axes.resize(ctx.ng->node(heavy[h]).loops.size());
  for (int axis : axes) {
    CutProblem p = build_level_problem(ctx, axis, r.heavy_cuts);
    std::vector<int> choice =
        solver == LevelSolver::ilp ? solve_cut_problem_ilp(p).choice : solve_cut_problem_greedy(p);
    if (!heavy.empty() && std::all_of(choice.begin(), choice.end(), [&](int c) { return c == 0; }) &&
        std::all_of(p.nodes.begin(), p.nodes.end(), [](const CutProblemNode& n) { return n.choices.size() == 1; }))
      throw std::runtime_error("symtensor: no heavy operator has a loop that mesh axis '" + ctx.mesh->axes()[axis].name +
                               "' of size " + std::to_string(ctx.mesh->axes()[axis].size) +
                               " divides at micro-batch " + std::to_string(static_cast<long long>(ctx.micro_batch)) +
                               " (choose a batch or device count it divides)");
    r.objective += p.objective(choice);
    apply_level_solution(p, choice, axis, r.heavy_cuts);
    r.problems.push_back(std::move(p));
    r.choices.push_back(std::move(choice));
  }
  return r;
}

namespace {

struct Knobs {
  int pp = 1, m = 1, vp = 1;
  RecomputePolicy recompute = RecomputePolicy::none;
  int zero = 0;
  std::vector<int> recompute_layers;  // Plan::recompute_layers
};

std::string describe(const Knobs& k) {
  return "pp=" + std::to_string(k.pp) + ",m=" + std::to_string(k.m) + ",vp=" + std::to_string(k.vp) +
         ",recompute=" + describe_recompute(k.recompute, k.recompute_layers) + ",zero=" + std::to_string(k.zero);
}

// A move is kept when it saves more than the estimate's resolution: below half a percent
// the simulator can order the two plans the other way (LLaMA-2 70B on 2048 A100: a move
// estimated 0.2% faster adds an all-to-all and simulates 0.5% slower).
constexpr double kRefineMinGain = 0.005;

class Search {
 public:
  Search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options, const SearchOptions& search)
      : g_(graph), cluster_(cluster), options_(options), search_(search), ng_(graph), analyzer_(graph, cluster, ng_),
        folded_(fold_graph(ng_)), spaces_(ng_.spaces()) {
    // The exact level solver checks the level step alone: no bound.
    if (search_.solver == LevelSolver::ilp) options_.bound.reset(), options_.target_seed.reset();
    if (options_.bound) options_.target_seed.reset();
    per_operator_bound_ = options_.bound == ExportTarget::jax;
  }

  SearchResult run() {
    const std::string name = search_.solver == LevelSolver::ilp ? "ilp" : "symtensor";
    const int heavy = static_cast<int>(folded_.heavy.size());
    if (search_.max_heavy_operators > 0 && heavy > search_.max_heavy_operators)
      throw std::runtime_error(name + ": '" + g_.source + "' has " + std::to_string(heavy) + " heavy operators, above the limit of " +
                               std::to_string(search_.max_heavy_operators) + " for the exact search (use --strategy symtensor)");
    skeleton_ = plan_skeleton(name, g_, cluster_, options_);
    train_ = options_.mode == ExecutionMode::train;
    if (options_.bound && !per_operator_bound_) {
      SearchResult r = search_in_recipes(*options_.bound);
      r.plan.strategy = name;
      r.analysis = analyzer_.analyze(r.plan);
      return r;
    }
    const double batch = skeleton_.global_batch;
    const long long B = static_cast<long long>(batch);
    if (B < 1 || static_cast<double>(B) != batch) throw std::runtime_error(name + ": the batch must be a positive integer");
    stage_boundaries_ = static_cast<int>(stage_boundary_candidates(ng_, 1).size());

    std::string last_error;
    // The Megatron-layout seed is searched first, its step (before recomputing fewer layers:
    // a bar no lower than the seed's best) a bar for the depth walk below; it is considered
    // as a candidate after the level step, as the other seeds.
    search_megatron_seed();
    const double bar = megatron_seed_ && megatron_seed_->estimate.fits ? megatron_seed_->estimate.step_time_s : kInfinity;
    for (double memory_weight : {0.0, -1.0}) {
      memory_weight_ = memory_weight < 0 ? escalated_memory_weight() : memory_weight;
      // Step time is close to unimodal in the micro-batch count (the bubble shrinks, the
      // per-micro-batch kernels and collectives get less efficient) and in the pipeline
      // depth: the counts go up until one is worse than the best before it, the depths
      // until two in a row are (deeper pipelines need fewer ZeRO and recompute options,
      // which makes the depth curve bumpier). Both only once something fits. For the
      // depths the seed's step counts as the best before (a depth where nothing fits does
      // not count against it): on DeepSeek-V3 the level step's plans price 30-60x the seed's
      // at the first depths (exposed expert-dispatch communication the level problem does
      // not see), and the walk went on to 256 stages for none of them to win. (Bounding the
      // counts too lost 0.3% on LLaMA-2 13B on 16 L4, whose first count at a depth is the
      // slowest.)
      UpwardWalk depths(2, bar);
      for (int pp : pipeline_candidates()) {
        UpwardWalk counts;
        for (int m : micro_batch_candidates(B, pp)) {
          double t = kInfinity;
          try {
            t = consider(pp, m);
          } catch (const std::exception& e) {
            last_error = e.what();
          }
          if (counts.stop(t)) break;
        }
        if (depths.stop(counts.best())) break;
      }
      if (best_.valid && best_.estimate.fits) break;
    }
    consider_data_parallel_seed(name);
    consider_megatron_seed(name);
    consider_target_seed(name);
    if (!best_.valid) throw std::runtime_error(name + ": no plan found: " + last_error);
    const double before_refinement = best_.estimate.step_time_s;
    if (search_.refine) refine();
    SearchResult r;
    r.refine_moves = refine_moves_, r.refine_kept = refine_kept_;
    if (options_.bound) r.summary = "inside " + std::string(to_string(*options_.bound)) + ": ";
    if (best_.estimate.fits && before_refinement > 0) r.refine_gain = 1 - best_.estimate.step_time_s / before_refinement;
    r.plan = best_plan_;
    r.plan.cuts_stamp = 0;  // the caller may change its cuts
    r.analysis = analyzer_.analyze(r.plan);
    r.estimate = best_.estimate;
    r.evaluations = evaluations_;
    r.level_objective = best_objective_;
    r.summary += describe(best_knobs_) + (best_seed_.empty() ? "" : " (from the Megatron-layout seed " + best_seed_ + ")") +
                 (best_target_seed_.empty() ? "" : " (from the fastest plan inside " + best_target_seed_ + ")") +
                (best_.estimate.fits ? "" : " (does not fit memory)") +
                (refine_kept_ > 0 ? fmt::format(", refined: {} of {} moves kept, {:.1f}% faster", refine_kept_, refine_moves_,
                                                100 * r.refine_gain)
                                  : "");
    return r;
  }

 private:
  // Bounded by a target that writes a recipe (Megatron-LM, NeMo, torchtitan, DeepSpeed, the
  // DTensor script): what it runs as written are the Megatron layouts of its knobs, so the
  // search is Megatron's exhaustive one inside the target's limits, then, where the target
  // writes one recomputed-layer count for every stage (--recompute-num-layers), full
  // recomputation of fewer layers.
  // Leaves SearchResult::analysis to the caller.
  SearchResult search_in_recipes(ExportTarget target) {
    StrategyOptions inside = options_;
    inside.bound = target, inside.target_seed.reset();
    MegatronSearchResult m = megatron_search(analyzer_, inside, MegatronSpace::exhaustive);
    evaluations_ += m.evaluations;
    Evaluation best;
    best.valid = true;
    best.estimate = m.estimate;
    Plan plan = std::move(m.plan);
    if (train_ && plan.recompute == RecomputePolicy::full) {
      Plan fewer = plan;
      const Evaluation partial = recompute_fewest_layers(fewer);
      if (partial.valid && partial.estimate.fits && !fewer.recompute_layers.empty()) {
        // One count in every stage: the most any stage needs (more recomputation fits too).
        const int most = *std::max_element(fewer.recompute_layers.begin(), fewer.recompute_layers.end());
        fewer.recompute_layers.assign(fewer.recompute_layers.size(), most);
        const Evaluation uniform = evaluate_plan(analyzer_, fewer);
        ++evaluations_;
        if (uniform.better_than(best) && target_items(target, g_, cluster_, fewer).empty()) best = uniform, plan = std::move(fewer);
      }
    }
    SearchResult r;
    r.plan = std::move(plan);
    r.estimate = best.estimate;
    r.evaluations = evaluations_;
    r.summary = "inside " + std::string(to_string(target)) + ": Megatron layout " + to_string(m.knobs) +
                (r.plan.recompute_layers.empty() ? "" : ", recompute=" + describe_recompute(r.plan)) +
                (best.estimate.fits ? "" : " (does not fit memory)");
    return r;
  }

  // Whether the bound's target writes the plan's cuts as they are (per-operator bounds: the
  // other knobs are kept inside the target by the loops that set them).
  bool cuts_within_bound(const Plan& plan) const {
    if (!per_operator_bound_) return true;
    Plan probe = plan;
    probe.zero_stage = 0, probe.distributed_optimizer = false, probe.stage_zero_stages.clear();
    probe.recompute = RecomputePolicy::none, probe.recompute_layers.clear();
    return target_items(*options_.bound, g_, cluster_, probe).empty();
  }
  // ZeRO stages the bound allows (a per-operator bound: replicated or fully sharded states).
  bool zero_within_bound(int zero) const { return !per_operator_bound_ || zero == 0 || zero == 3; }

  double escalated_memory_weight() const {
    const double t = best_.valid ? best_.estimate.step_time_s : 1.0;
    return 4 * t / std::max(cluster_.device.memory_bytes, 1.0);
  }

  std::vector<int> pipeline_candidates() const {
    std::vector<int> out{1};
    if (!train_ || per_operator_bound_) return out;  // JAX's PartitionSpecs shard within one program
    int outer = 1;
    for (int l = static_cast<int>(cluster_.levels.size()) - 1; l >= 0; --l)
      if (cluster_.levels[l].size > 1) {
        outer = cluster_.levels[l].size;
        break;
      }
    for (int d : divisors(outer))
      if (d > 1 && d <= stage_boundaries_ + 1) out.push_back(d);
    return out;
  }

  std::vector<int> micro_batch_candidates(long long B, int pp) const {
    std::vector<int> out;
    const int lowest = train_ ? pp : 1;
    int last = 0;
    for (int d : divisors(B)) {
      if (d < lowest || (last > 0 && d < 2 * last)) continue;
      out.push_back(d);
      last = d;
      if (static_cast<int>(out.size()) >= search_.micro_batch_candidates) break;
    }
    return out;
  }

  LevelContext context(const hardware::DeviceMesh& mesh, int m) const {
    LevelContext ctx;
    ctx.ng = &ng_;
    ctx.folded = &folded_;
    ctx.cluster = &cluster_;
    ctx.mesh = &mesh;
    ctx.precision = options_.precision;
    ctx.train = train_;
    ctx.micro_batch = skeleton_.global_batch / m;
    ctx.micro_batches = m;
    ctx.memory_weight = memory_weight_;
    return ctx;
  }

  // Fills cuts (heavy fixed, the rest propagated and kept divisible) and stages.
  // With `previous` (a completed plan's cuts), propagation repairs them locally.
  void complete_plan(Plan& plan, const std::vector<NodeCut>& heavy_cuts, const hardware::DeviceMesh& mesh, int pp,
                     const std::vector<NodeCut>* previous = nullptr) const {
    const std::size_t n = g_.nodes().size();
    // Propagation reads the mesh (set by pp) and the heavy cuts, not the micro-batch: the
    // level step often gives the next micro-batch count the same heavy cuts.
    if (!previous && last_propagated_.pp == pp && last_propagated_.heavy_cuts == heavy_cuts) {
      plan.node_cuts = last_propagated_.node_cuts;
    } else {
      plan.node_cuts.assign(n, NodeCut{});
      std::vector<bool> fixed(n, false);
      for (std::size_t h = 0; h < folded_.heavy.size(); ++h) {
        plan.node_cuts[folded_.heavy[h]] = heavy_cuts[h];
        fixed[folded_.heavy[h]] = true;
      }
      propagate_cuts(g_, mesh, plan, fixed, spaces_, &propagation_, previous);
      if (!previous) last_propagated_ = {pp, heavy_cuts, plan.node_cuts};
    }
    const double b = plan.global_batch / plan.micro_batches;
    std::vector<double> cost(n, 0.0);
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
      NodeCut& cut = plan.node_cuts[id];
      const NumericNode& nn = ng_.node(id);
      if (cut.loop_axes.size() > nn.loops.size()) cut.loop_axes.resize(nn.loops.size());
      for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
        auto& axes = cut.loop_axes[l];
        while (!axes.empty()) {
          double w = 1;
          for (int a : axes) w *= mesh.axes()[a].size;
          const double extent = nn.loops[l].extent.at(b);
          if (extent >= w && std::fmod(extent, w) == 0) break;
          axes.pop_back();
        }
      }
      const double ways = cut_ways(cut, mesh);
      cost[id] = cluster_.device.kernel_seconds(kernel_precision(ng_, id, options_.precision), nn.flops.at(b) / ways,
                                                nn.bytes.at(b) / ways) *
                 (train_ ? 3 : 1);
    }
    const StageSplit split = split_pipeline_stages(ng_, cost, b, pp);
    plan.stage_of_node = split.stage_of_node;
    plan.cuts_stamp = new_cuts_stamp();
  }

  // Prices the plans of one (pipeline depth, micro-batch count); returns the best step
  // time among those that fit (infinity when none does).
  double consider(int pp, int m) {
    Plan plan = skeleton_;
    plan.mesh_factors = search_mesh_factors(cluster_, pp);
    plan.pipeline_axis = pp > 1 ? pipeline_axis_id(plan.mesh_factors) : -1;
    plan.micro_batches = m;
    const hardware::DeviceMesh mesh = plan_mesh(plan, cluster_);
    std::vector<int> axes;
    for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a)
      if (a != plan.pipeline_axis && mesh.axes()[a].size > 1) axes.push_back(a);
    const LevelContext ctx = context(mesh, m);
    const LevelSearchResult levels = search_levels(ctx, axes, search_.solver);
    complete_plan(plan, levels.heavy_cuts, mesh, pp);
    if (!cuts_within_bound(plan)) return kInfinity;
    // Interleaving (Megatron's virtual stages): v chunks per device cut the bubble to
    // (p-1)/(v·m) and add v times the pipeline sends. Needs m a multiple of p and enough
    // stage boundaries for p·v chunks; v grows until two depths in a row do not improve.
    std::vector<int> vps{1};
    if (pp > 1 && m % pp == 0)
      for (int v : {2, 3, 4, 6, 8, 12, 16, 24, 32})
        if (pp * v <= stage_boundaries_ + 1) vps.push_back(v);
    // Memory options: recomputation (none, selective, full) x ZeRO stage (0..3). Memory
    // falls and time grows along both, so only the frontier of the cheapest fitting options
    // matters; it is walked as a staircase: per recomputation level, ZeRO stages downwards
    // from the highest one not yet beaten, until one does not fit. At most 7 evaluations.
    const std::vector<RecomputePolicy> recomputes =
        train_ ? std::vector<RecomputePolicy>{RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}
               : std::vector<RecomputePolicy>{RecomputePolicy::none};
    const int top_zero = train_ ? 3 : 0;
    UpwardWalk interleavings(2);
    for (int vp : vps) {
      double best_of_vp = kInfinity;
      int zero_limit = top_zero;  // options with a higher stage are beaten by a cheaper one that fits
      for (RecomputePolicy recompute : recomputes) {
        for (int zero = zero_limit; zero >= 0; --zero) {
          if (!zero_within_bound(zero)) continue;
          plan.virtual_stages = vp;
          plan.schedule = vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
          plan.recompute = recompute;
          plan.zero_stage = zero;
          const Evaluation e = evaluate_plan(analyzer_, plan);
          ++evaluations_;
          if (!e.valid) throw std::runtime_error(e.error);
          const Knobs knobs{pp, m, vp, recompute, zero, {}};
          keep_if_better(e, plan, knobs, &levels);
          if (!e.estimate.fits) break;  // less sharding needs more memory still
          best_of_vp = std::min(best_of_vp, e.estimate.step_time_s);
          zero_limit = zero - 1;
          if (recompute == RecomputePolicy::full && !per_operator_bound_)
            best_of_vp = std::min(best_of_vp, consider_fewer_layers(plan, knobs, &levels));
        }
        if (zero_limit < 0) break;  // ZeRO-0 fits: more recomputation only costs time
      }
      // Until two depths in a row do not help: the warm-up's activations are not monotone
      // in v (p = 4: 5.5 micro-batches in flight at v = 2, 4.75 at v = 4), so a depth that
      // needs recomputation can precede one that does not.
      if (interleavings.stop(best_of_vp)) break;
    }
    return interleavings.best();
  }

  // Takes `e` (of `plan`, with `knobs`) as the best when it is better; `levels`: the level
  // search it came from, else (a seed) the plan's own heavy cuts.
  void keep_if_better(const Evaluation& e, const Plan& plan, const Knobs& knobs, const LevelSearchResult* levels) {
    if (!e.better_than(best_)) return;
    best_ = e;
    best_plan_ = plan;
    best_knobs_ = knobs;
    if (levels) best_levels_ = levels->heavy_cuts, best_objective_ = levels->objective;
    else take_heavy_cuts(plan);
  }

  // `plan` (full recomputation fits) with recompute_fewest_layers, kept when better; its
  // step when it fits, else infinity. Leaves `plan` as it found it but for the policy.
  double consider_fewer_layers(Plan& plan, Knobs knobs, const LevelSearchResult* levels) {
    const Evaluation partial = recompute_fewest_layers(plan);
    knobs.recompute_layers = plan.recompute_layers;
    keep_if_better(partial, plan, knobs, levels);
    plan.recompute_layers.clear();
    return partial.valid && partial.estimate.fits ? partial.estimate.step_time_s : kInfinity;
  }

  // Full recomputation of only as many layers as memory needs, per stage
  // (compiler/search/recompute_layers.h); invalid when not even no recomputation would beat
  // the best plan so far.
  Evaluation recompute_fewest_layers(Plan& plan) {
    const double beat = best_.valid && best_.estimate.fits ? best_.estimate.step_time_s : kInfinity;
    return compiler::recompute_fewest_layers(plan, ng_, [&](const Plan& p) {
      ++evaluations_;
      return evaluate_plan(analyzer_, p);
    }, beat);
  }

  // Pure data parallelism (at every ZeRO stage, at each micro-batch count
  // while that helps) is one point of the space the level step can miss: a myopic choice
  // on one axis (a projection cut on its output features) is paid for by the
  // redistributions it forces later. It is priced like any candidate and, when better,
  // becomes the start of the refinement. No seed when the batch does not divide.
  void consider_data_parallel_seed(const std::string& name) {
    if (search_.solver == LevelSolver::ilp) return;  // the ILP check judges the level step alone
    Plan dp;
    try {
      dp = make_data_parallel_plan(g_, cluster_, options_, 0, spaces_, &propagation_);
    } catch (const std::exception&) {
      return;
    }
    dp.strategy = name;
    if (!cuts_within_bound(dp)) return;
    const long long per_device = static_cast<long long>(dp.global_batch) / cluster_.num_devices();
    UpwardWalk counts;
    const std::vector<RecomputePolicy> recomputes =
        train_ ? std::vector<RecomputePolicy>{RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}
               : std::vector<RecomputePolicy>{RecomputePolicy::none};
    for (int m : micro_batch_candidates(per_device, 1)) {
      double best_of_m = kInfinity;
      // Recomputation grows until some ZeRO stage fits (more only costs time), as FSDP
      // runs are usually set up (activation checkpointing with a large micro-batch).
      std::size_t needed = 0;  // the least recomputation with which some stage fits
      for (; needed < recomputes.size(); ++needed) {
        const RecomputePolicy recompute = recomputes[needed];
        bool valid = true;
        for (int zero : {0, 1, 2, 3}) {
          if (!train_ && zero > 0) break;
          if (!zero_within_bound(zero)) continue;
          dp.micro_batches = m;
          dp.zero_stage = zero;
          dp.recompute = recompute;
          const Evaluation e = evaluate_plan(analyzer_, dp);
          ++evaluations_;
          if (!e.valid) {
            valid = false;
            break;
          }
          const Knobs knobs{1, m, 1, recompute, zero, {}};
          keep_if_better(e, dp, knobs, nullptr);
          // Every stage that fits is priced: more sharding adds communication, but ZeRO-3's
          // prefetched gathers can hide behind compute while its sharded optimizer step is
          // cheaper (GPT-1.7B on 2x8 A100: ZeRO-3 943 ms against ZeRO-0 965 ms).
          if (e.estimate.fits) best_of_m = std::min(best_of_m, e.estimate.step_time_s);
          if (recompute == RecomputePolicy::full && e.estimate.fits && !per_operator_bound_)
            best_of_m = std::min(best_of_m, consider_fewer_layers(dp, knobs, nullptr));
        }
        if (!valid || best_of_m < kInfinity) break;
      }
      // More micro-batches hold fewer activations: while some recomputation is needed, a
      // slower count can precede one that needs none (LLaMA-2 70B on 16 MI300X: full
      // recomputation at 1 and 2, none at 4).
      if (counts.stop(best_of_m) && needed == 0) break;
    }
  }

  // Megatron-LM's layout (tensor parallelism inside a node, layers split evenly over
  // stages) is another point the level step misses: cutting one axis at a time, it prices
  // a weight replicated on that axis by the gradient reduction alone, not by the ZeRO
  // traffic or the memory that replication costs once every axis replicates it. The cheap
  // part of Megatron's space (MegatronSpace::seed) is priced before the level step (its step
  // bounds the depth walk) and considered after it; when better, it becomes the start of the
  // refinement. Models without transformer layers have no such seed, nor has the exact
  // solver's search (the level step alone).
  void search_megatron_seed() {
    if (search_.solver == LevelSolver::ilp) return;
    try {
      megatron_seed_ = megatron_search(analyzer_, options_, MegatronSpace::seed);
    } catch (const std::exception&) {
      return;
    }
    evaluations_ += megatron_seed_->evaluations;
  }

  void consider_megatron_seed(const std::string& name) {
    if (!megatron_seed_) return;
    MegatronSearchResult r = std::move(*megatron_seed_);
    megatron_seed_.reset();
    Evaluation e;
    e.valid = true;
    e.estimate = r.estimate;
    // Megatron's layouts recompute every layer or none; the seed's may recompute fewer,
    // and per stage (1F1B's first stage holds the most micro-batches).
    if (train_ && r.plan.recompute == RecomputePolicy::full && !per_operator_bound_) {
      Plan fewer = r.plan;
      const Evaluation partial = recompute_fewest_layers(fewer);
      if (partial.better_than(e)) e = partial, r.plan = std::move(fewer);
    } else if (train_ && !per_operator_bound_) {
      // A layout that memory forces to recompute may, recomputing only what it needs, beat
      // the seed's best, which recomputes nothing.
      for (MegatronSearchResult::FullRecompute& full : r.fastest_full_recompute) {
        const Evaluation partial = recompute_fewest_layers(full.plan);
        if (partial.better_than(e)) e = partial, r.plan = full.plan, r.knobs = full.knobs;
      }
    }
    if (!e.better_than(best_)) return;
    best_ = e;
    best_plan_ = r.plan;
    best_plan_.strategy = name;
    best_knobs_ = {r.knobs.pp, r.plan.micro_batches, r.knobs.vp, r.plan.recompute, r.plan.zero_stage, r.plan.recompute_layers};
    take_heavy_cuts(best_plan_);
    best_seed_ = to_string(r.knobs);
  }

  // The fastest plan inside options_.target_seed, priced as one more candidate (issue #30:
  // the bounded search's candidates are among the unbounded one's). For a recipe target the
  // exhaustive Megatron search inside it on this search's analyzer; for JAX the bounded
  // SymTensor search, whose walks may reach points this one's stopped before.
  void consider_target_seed(const std::string& name) {
    if (!options_.target_seed) return;
    const ExportTarget target = *options_.target_seed;
    SearchResult r;
    try {
      if (target == ExportTarget::jax) {
        StrategyOptions inside = options_;
        inside.bound = target, inside.target_seed.reset();
        r = Search(g_, cluster_, inside, search_).run();
      } else {
        r = search_in_recipes(target);
      }
    } catch (const std::exception&) {
      return;  // nothing inside the target
    }
    if (options_.target_plan_out) {
      *options_.target_plan_out = r.plan;
      (*options_.target_plan_out)->strategy = name;  // as the bounded search names its plan
    }
    evaluations_ += target == ExportTarget::jax ? r.evaluations : 0;  // search_in_recipes counts its own
    Evaluation e;
    e.valid = true;
    e.estimate = r.estimate;
    if (!e.better_than(best_)) return;
    best_ = e;
    best_plan_ = r.plan;
    best_plan_.strategy = name;
    best_knobs_ = {best_plan_.pipeline_stages(), best_plan_.micro_batches, best_plan_.virtual_stages, best_plan_.recompute,
                   best_plan_.zero_stage, best_plan_.recompute_layers};
    take_heavy_cuts(best_plan_);
    best_seed_.clear();
    best_target_seed_ = std::string(to_string(target));
  }

  void take_heavy_cuts(const Plan& p) {
    best_levels_.assign(folded_.heavy.size(), NodeCut{});
    for (std::size_t h = 0; h < folded_.heavy.size(); ++h) best_levels_[h] = p.node_cuts[folded_.heavy[h]];
  }

  static int pipeline_axis_id(const std::vector<std::vector<int>>& factors) {
    int id = 0;
    for (const auto& level : factors) {
      if (level.size() > 1 || level[0] > 1) return id;
      id += static_cast<int>(level.size());
    }
    return -1;
  }

  // Moves one class of identical heavy operators to a neighbouring cut (neighbour_cuts),
  // evaluated on the whole plan; kept while the step time drops.
  void refine() {
    if (!best_.valid || !best_.estimate.fits) return;
    const hardware::DeviceMesh mesh = plan_mesh(best_plan_, cluster_);
    const double b = best_plan_.global_batch / best_plan_.micro_batches;
    std::map<std::string, std::vector<int>> classes;
    for (std::size_t h = 0; h < folded_.heavy.size(); ++h) {
      const NodeId id = folded_.heavy[h];
      const NumericNode& nn = ng_.node(id);
      std::string key = g_.node(id).op_type + "|";
      for (const auto& l : nn.loops) key += std::to_string(l.extent.at(b)) + ",";
      for (const auto& axes : best_levels_[h].loop_axes) {
        key += "[";
        for (int a : axes) key += std::to_string(a);
      }
      classes[key].push_back(static_cast<int>(h));
    }
    std::vector<std::vector<int>> order;
    for (auto& [key, members] : classes) order.push_back(members);
    std::sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
      auto flops = [&](const std::vector<int>& c) { return ng_.node(folded_.heavy[c[0]]).flops.at(b) * c.size(); };
      return flops(x) > flops(y);
    });
    int budget = search_.refine_budget;
    for (const auto& members : order) {
      const NumericNode& nn = ng_.node(folded_.heavy[members[0]]);
      for (const NodeCut& moved : neighbour_cuts(best_levels_[members[0]], nn, b, mesh)) {
        if (budget <= 0) return;
        std::vector<NodeCut> levels = best_levels_;
        for (int h : members) levels[h] = moved;
        // Assigned, not constructed: the cuts' storage of the last move is reused.
        Plan& p = move_plan_;
        p = best_plan_;
        complete_plan(p, levels, mesh, best_knobs_.pp, &best_plan_.node_cuts);
        const Evaluation e = evaluate_plan(analyzer_, p);
        ++evaluations_;
        ++refine_moves_;
        --budget;
        if (e.valid && e.estimate.fits && e.estimate.step_time_s < best_.estimate.step_time_s * (1 - kRefineMinGain) &&
            cuts_within_bound(p)) {
          ++refine_kept_;
          best_ = e;
          std::swap(best_plan_, p);
          best_levels_ = levels;
          return refine_again(budget);
        }
      }
    }
  }

  // The cuts one step from `current`: one mesh axis moved from its loop to another loop or
  // dropped, or a mesh axis that cuts nothing yet (the level step found no loop it divides
  // well) added to a loop.
  std::vector<NodeCut> neighbour_cuts(const NodeCut& current, const NumericNode& nn, double b,
                                      const hardware::DeviceMesh& mesh) const {
    std::vector<NodeCut> out;
    const int loops = static_cast<int>(nn.loops.size());
    std::vector<bool> used(mesh.axes().size(), false);
    for (std::size_t from = 0; from < current.loop_axes.size(); ++from) {
      for (int axis : current.loop_axes[from]) {
        used[axis] = true;
        for (int to = -1; to < loops; ++to) {
          if (to == static_cast<int>(from)) continue;
          NodeCut moved = current;
          auto& src = moved.loop_axes[from];
          src.erase(std::find(src.begin(), src.end(), axis));
          if (to >= 0) moved.loop_axes[to].push_back(axis);
          if (to >= 0 && !move_allowed(nn, moved, to, b, mesh)) continue;
          out.push_back(std::move(moved));
        }
      }
    }
    for (int axis = 0; axis < static_cast<int>(mesh.axes().size()); ++axis) {
      if (used[axis] || axis == best_plan_.pipeline_axis || mesh.axes()[axis].size < 2) continue;
      for (int to = 0; to < loops && to < static_cast<int>(current.loop_axes.size()); ++to) {
        NodeCut added = current;
        added.loop_axes[to].push_back(axis);
        if (move_allowed(nn, added, to, b, mesh)) out.push_back(std::move(added));
      }
    }
    return out;
  }

  void refine_again(int budget) {
    search_.refine_budget = budget;
    refine();
  }

  static bool move_allowed(const NumericNode& nn, const NodeCut& cut, int loop, double b, const hardware::DeviceMesh& mesh) {
    const NumericLoop& l = nn.loops[loop];
    if (!l.reduction) {
      bool in_output = false;
      for (const auto& dims : nn.space.output_dims) in_output |= std::find(dims.begin(), dims.end(), loop) != dims.end();
      if (!in_output) return false;
    } else if (!reduction_cut_is_partial_sum(nn.space, loop)) {
      return false;
    }
    double w = 1;
    for (int a : cut.loop_axes[loop]) w *= mesh.axes()[a].size;
    const double extent = l.extent.at(b);
    return extent >= w && std::fmod(extent, w) == 0;
  }

  Graph& g_;
  const hardware::Cluster& cluster_;
  StrategyOptions options_;  // a copy: the exact solver drops the bound
  SearchOptions search_;
  NumericGraph ng_;
  PlanAnalyzer analyzer_;
  FoldedGraph folded_;
  const std::vector<IterationSpace>& spaces_;  // ng_'s
  mutable PropagationCache propagation_;  // complete_plan's, kept between the plans it completes
  struct Propagated {
    int pp = 0;
    std::vector<NodeCut> heavy_cuts, node_cuts;
  };
  mutable Propagated last_propagated_;  // complete_plan's last propagation from scratch
  Plan skeleton_;
  bool train_ = true;
  // Bounded by a target that writes per-operator cuts (JAX): the SymTensor search itself, its
  // pipeline, ZeRO-1/2, per-stage recomputation counts and cuts outside the target left out.
  bool per_operator_bound_ = false;
  int stage_boundaries_ = 0;  // places a pipeline stage may end
  double memory_weight_ = 0;
  Evaluation best_;
  Plan best_plan_;
  Plan move_plan_;  // refine's candidate
  Knobs best_knobs_;
  std::vector<NodeCut> best_levels_;
  double best_objective_ = 0;
  std::string best_seed_;  // the Megatron knobs of the seed the best plan came from, if it did
  std::optional<MegatronSearchResult> megatron_seed_;  // search_megatron_seed's, until considered
  std::string best_target_seed_;  // the target whose bounded search gave the best plan, if one did
  int evaluations_ = 0;
  int refine_moves_ = 0, refine_kept_ = 0;
};

}  // namespace

SearchResult symtensor_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                              const SearchOptions& search) {
  return Search(graph, cluster, options, search).run();
}

Plan make_symtensor_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options) {
  return symtensor_search(graph, cluster, options).plan;
}

}  // namespace symtensor::compiler
