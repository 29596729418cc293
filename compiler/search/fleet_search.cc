#include "compiler/search/fleet_search.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/analysis/transformer_structure.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/step_bound.h"
#include "compiler/plan/batch_shares.h"
#include "compiler/plan/mesh_refinement.h"
#include "compiler/search/fleet_estimate.h"
#include "compiler/search/fleet_shares.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/recompute_layers.h"
#include "compiler/search/search_simulation.h"
#include "compiler/search/search_common.h"
#include "compiler/search/stage_sharding.h"
#include "compiler/strategies/megatron.h"

namespace symtensor::compiler {
namespace {

// The plan simulated on the analyzers' cluster as a step is reported (simulate_periodic: the
// whole step's figures, from `known` shorter steps where the refereeing simulated them); a plan
// the lowering or the simulator refuses does not fit.
FleetStep simulated(SimulationAnalyzers& on, Plan plan, std::string label, int& simulations,
                    const ShorterSteps* known = nullptr) {
  FleetStep step;
  step.cluster = on.uniform.cluster().name;
  step.label = std::move(label);
  step.found = true;
  ++simulations;
  try {
    const SearchSimulation s = simulate_periodic(on, plan, known);
    step.step_time_s = s.step_time_s;
    step.fits = s.fits;
  } catch (const std::exception&) {
    step.step_time_s = kInfinity;
    step.fits = false;
  }
  step.plan = std::move(plan);
  return step;
}

// Fits first, then the shorter step.
bool faster(const FleetStep& a, const FleetStep& b) {
  if (!b.found) return a.found;
  if (!a.found) return false;
  if (a.fits != b.fits) return a.fits;
  return a.step_time_s < b.step_time_s;
}

// A group's pipeline stages' tensor- and context-parallel degrees (Megatron's layout at them).
struct GroupLayout {
  int tp = 1, cp = 1;
  bool operator==(const GroupLayout&) const = default;
};

// `plan`: where its recomputation or ZeRO stage is per stage (Plan::recompute_layers,
// Plan::stage_zero_stages), described as such.
std::string knobs_label(const MegatronKnobs& k, const Plan* plan = nullptr) {
  const std::string cp = k.cp > 1 ? fmt::format(" cp={}", k.cp) : "";
  const std::string zero = plan && !plan->stage_zero_stages.empty() ? " " + describe_zero(*plan) : "";
  return fmt::format("tp={} pp={}{} dp={} mb={} recompute={}{}", k.tp, k.pp, cp, k.dp, k.mb,
                     plan ? describe_recompute(*plan) : std::string(to_string(k.recompute)), zero);
}

int gcd_of(const std::vector<int>& values) {
  int g = 0;
  for (int v : values) g = std::gcd(g, v);
  return g;
}

Plan restage(const Graph& graph, const std::vector<NodeId>& order, const TransformerStructure& s, Plan plan,
             const std::vector<int>& layers) {
  const int stages = static_cast<int>(layers.size());
  if (stages != plan.pipeline_stages())
    throw std::runtime_error(fmt::format("restage: {} layer counts for {} pipeline stages", stages, plan.pipeline_stages()));
  if (std::accumulate(layers.begin(), layers.end(), 0) != s.decoder_layers() ||
      std::any_of(layers.begin(), layers.end(), [](int n) { return n < 1; }))
    throw std::runtime_error(
        fmt::format("restage: the layer counts do not give each stage some of the {} layers", s.decoder_layers()));
  plan.stage_of_node = node_stages(graph, order, s, layers);
  return plan;
}

}  // namespace

const FleetStep& MegatronFleetBest::best() const {
  if (!subset.fits && !uniform.fits) throw std::runtime_error("megatron: no plan fits the fleet, nor any of its groups alone");
  return faster(subset, uniform) ? subset : uniform;
}

std::vector<int> plan_stage_groups(const Plan& plan, const hardware::Cluster& fleet) {
  const int stages = plan.pipeline_stages();
  std::vector<int> groups(stages, -2);
  if (!fleet.mixed()) return std::vector<int>(stages, 0);
  const hardware::DeviceMesh mesh = plan_mesh(plan, fleet);
  for (int r = 0; r < mesh.num_devices(); ++r) {
    int stage = 0;
    if (plan.pipeline_axis >= 0) {
      const hardware::MeshAxis& axis = mesh.axes()[plan.pipeline_axis];
      stage = (r / axis.stride) % axis.size;
    }
    const int g = fleet.group_of_rank(r);
    groups[stage] = groups[stage] == -2 || groups[stage] == g ? g : -1;
  }
  return groups;
}

Plan restage_layers(Graph& graph, Plan plan, const std::vector<int>& layers) {
  const TransformerStructure s = find_transformer_structure(graph, NumericGraph(graph).spaces());
  return restage(graph, graph.topological_order(), s, std::move(plan), layers);
}

namespace {

// megatron_fleet_best with the graph compiled (the bounds, searches and simulations share it).
MegatronFleetBest megatron_fleet_best(Graph& graph, const hardware::Cluster& fleet, const StrategyOptions& options,
                                      const NumericGraph& ng) {
  if (!fleet.mixed()) throw std::runtime_error(fmt::format("cluster '{}' is not a mixed fleet", fleet.name));
  MegatronFleetBest best;
  int simulations = 0;
  // The groups by their step time lower bound (step_time_lower_bound: no plan on the group
  // runs a step faster), the most promising first: a group whose bound is no shorter than the
  // fastest group's simulated step so far cannot be faster, and is not searched.
  const int n = static_cast<int>(fleet.groups.size());
  std::vector<std::pair<double, int>> order;
  for (int g = 0; g < n; ++g) {
    double bound = 0;
    try {
      bound = step_time_lower_bound(graph, group_cluster(fleet, g), options, ng);
    } catch (const std::exception&) {
      bound = 0;  // no bound: searched
    }
    order.emplace_back(bound, g);
  }
  std::stable_sort(order.begin(), order.end());
  for (const auto& [bound, g] : order) {
    if (best.subset.fits && (bound > best.subset.step_time_s || (bound == best.subset.step_time_s && g > best.subset_group)))
      continue;
    const hardware::Cluster group = group_cluster(fleet, g);
    try {
      PlanAnalyzer analyzer(graph, group, ng);
      const MegatronSearchResult r = megatron_search(analyzer, options, MegatronSpace::exhaustive);
      SimulationAnalyzers simulations_on(graph, group, ng);
      FleetStep step = simulated(simulations_on, r.plan,
                                 fmt::format("Megatron-best on {} alone ({})", group.name, knobs_label(r.knobs)), simulations);
      // Ties go to the group given first, as when the groups are searched in their order.
      const bool tie = best.subset.found && step.step_time_s == best.subset.step_time_s && g < best.subset_group;
      if (!step.fits && best.subset.missing.empty())
        best.subset.missing = fmt::format("not on {} alone: its plan does not fit in memory", group.name);
      if (step.fits && (faster(step, best.subset) || tie)) best.subset = std::move(step), best.subset_group = g;
    } catch (const std::exception& e) {
      // No Megatron plan fits this group alone: it is not a usable subset.
      if (best.subset.missing.empty()) best.subset.missing = fmt::format("not on {} alone: {}", group.name, e.what());
    }
  }
  if (best.subset.found) best.subset.missing.clear();
  try {
    PlanAnalyzer analyzer(graph, fleet, ng);
    const MegatronSearchResult r = megatron_search(analyzer, options, MegatronSpace::exhaustive);
    SimulationAnalyzers simulations_on(graph, fleet, ng);
    best.uniform = simulated(simulations_on, r.plan,
                             fmt::format("Megatron-best uniform over all {} GPUs at the slowest group's pace ({})",
                                         fleet.num_devices(), knobs_label(r.knobs)),
                             simulations);
  } catch (const std::exception& e) {
    best.uniform.missing = e.what();
  }
  best.simulations = simulations;
  return best;
}

}  // namespace

MegatronFleetBest megatron_fleet_best(Graph& graph, const hardware::Cluster& fleet, const StrategyOptions& options) {
  return megatron_fleet_best(graph, fleet, options, NumericGraph(graph));
}

FleetSearchResult fleet_search(Graph& graph, const hardware::Cluster& fleet, const StrategyOptions& options,
                               bool batch_shares) {
  if (!fleet.mixed()) throw std::runtime_error(fmt::format("cluster '{}' is not a mixed fleet", fleet.name));
  FleetSearchResult result;
  const NumericGraph ng(graph);  // compiled once: the searches, estimates and simulations share it
  result.megatron = megatron_fleet_best(graph, fleet, options, ng);
  result.simulations = result.megatron.simulations;
  if (result.megatron.subset.found) result.plan = result.megatron.subset;
  if (faster(result.megatron.uniform, result.plan)) result.plan = result.megatron.uniform;

  double fleet_speed = 0;
  for (const hardware::DeviceGroup& g : fleet.groups) fleet_speed += g.devices * hardware::device_pace(g.device);
  if (result.megatron.subset_group >= 0) {
    const hardware::DeviceGroup& f = fleet.groups[result.megatron.subset_group];
    result.ceiling = fleet_speed / (f.devices * hardware::device_pace(f.device));
  }

  // Pipelines whose stages each lie in one group: the node axis cut as [pp, nodes per stage],
  // on the fleet `on` (the whole fleet or some of its groups; to_fleet: its groups' indices
  // in the fleet).
  auto pipelines = [&](const hardware::Cluster& on, const std::vector<int>& to_fleet) {
    MegatronLayouts layouts(graph, ng.spaces());
    const int layers = layouts.structure().decoder_layers();  // split over the stages; MTP layers go to the last
    const std::vector<NodeId> order = graph.topological_order();
    PlanAnalyzer analyzer(graph, on, ng);
    // Each group's device under the fleet's mesh: the analysis prices a stage on it.
    GroupAnalyzers on_group(graph, on, ng);
    SimulationAnalyzers simulations_on(graph, on, ng);  // the refereeing's and the reported steps'
    // The analytic estimate, each stage on its own group's device and memory.
    auto evaluate = [&](const Plan& plan) {
      Evaluation e;
      try {
        e.estimate = fleet_step_estimate(on, plan, analyzer, on_group);
        e.valid = true;
      } catch (const std::exception& x) {
        e.error = x.what();
      }
      return e;
    };
    // A plan recomputing every layer recomputes, per stage, only as many as its devices'
    // memory needs (recompute_fewest_layers): the stages hold different numbers of
    // micro-batches in flight, on devices of different memory. Returns whether it fits;
    // a plan recomputing less is only checked.
    // `priced`: the evaluation it made (the plan's, or with its fewest recomputed layers).
    auto recompute_fewest = [&](Plan& plan, Evaluation* priced = nullptr) {
      const Evaluation e = plan.recompute != RecomputePolicy::full ? evaluate(plan) : [&] {
        Plan fewer = plan;
        Evaluation made = recompute_fewest_layers(fewer, ng, evaluate);
        if (made.valid && made.estimate.fits) plan = std::move(fewer);
        return made;
      }();
      if (priced) *priced = e;
      return e.valid && e.estimate.fits;
    };
    // Fits `plan` to each stage's devices: recomputing as above, else (no full recomputation)
    // sharding the model states of the stages over their memory further, ZeRO per stage from
    // `zero`, the candidate's own (shard_stages_as_needed). Returns whether it fits.
    auto fit_memory = [&](Plan& plan, int zero, Evaluation* priced = nullptr) {
      plan.stage_zero_stages.clear(), plan.zero_stage = zero;
      Evaluation e;
      if (recompute_fewest(plan, &e) || plan.recompute == RecomputePolicy::full) {
        if (priced) *priced = e;
        return e.valid && e.estimate.fits;
      }
      e = shard_stages_as_needed(plan, e, evaluate);
      if (priced) *priced = e;
      return e.valid && e.estimate.fits;
    };
    // Each stage's totals on its own group's device; none when the analysis refuses the plan.
    auto stage_totals = [&](const Plan& plan, const std::vector<int>& stage_groups) -> std::optional<StageTotals> {
      try {
        return stage_totals_on_groups(on, plan, stage_groups, analyzer, on_group).totals;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    };
    // Seconds of each stage's forward and backward of one micro-batch on its own group's
    // device (kernels, the collectives they expose, and the parameters' exposed gathers and
    // reduce-scatters: exposed_parameter_seconds); empty when the analysis refuses it.
    auto stage_seconds = [&](const Plan& plan, const std::vector<int>& stage_groups) {
      const std::optional<StageTotals> tot = stage_totals(plan, stage_groups);
      if (!tot) return std::vector<double>{};
      std::vector<double> t(stage_groups.size(), 0);
      for (std::size_t st = 0; st < t.size(); ++st)
        t[st] = tot->fwd_compute.at(st) + tot->fwd_comm.at(st) + tot->bwd_compute.at(st) + tot->bwd_comm.at(st) +
                exposed_parameter_seconds(*tot, static_cast<int>(st));
      return t;
    };
    // A lower bound on the simulated step (pipeline_compute_bound), each stage's compute on its
    // group's device; 0 (no bound) when the analysis refuses the plan.
    auto compute_bound = [&](const Plan& plan, const std::vector<int>& stage_groups) {
      const std::optional<StageTotals> tot = stage_totals(plan, stage_groups);
      if (!tot) return 0.0;
      return pipeline_compute_bound(tot->fwd_compute, tot->bwd_compute, plan.micro_batches, plan.virtual_stages <= 1);
    };
    std::vector<int> nodes;
    for (const hardware::DeviceGroup& g : on.groups) nodes.push_back(g.nodes);
    const int per_node = on.devices_per_node();
    struct Candidate {
      Plan plan;
      MegatronKnobs knobs;            // the first group's (tp, cp, dp and mb are per group where the layouts differ)
      std::vector<GroupLayout> group_layout;  // per group of `on`: its stages' tp and cp
      // Where the groups' layouts differ: Megatron's layout at each on the common mesh
      // (refine_to_common_mesh) and, per stage, the one whose cuts it takes.
      std::vector<Plan> sources;
      std::vector<int> source_of_stage;
      std::vector<int> stage_groups;
      double predicted = 0;  // the balanced split's slowest stage x (micro-batches + stages - 1)
    };
    std::vector<Candidate> candidates;
    const bool selective_is_none = selective_recompute_is_none(ng, on.stack);
    // Megatron's layout at knobs k: made once for every recomputation policy, which sets only
    // the plan's own (MegatronLayouts::make).
    std::vector<std::pair<MegatronKnobs, Plan>> made;
    auto megatron_layout = [&](MegatronKnobs k) {
      // (Offloading and overlapped expert exchanges refuse some policies: made as they are.)
      if (k.offload > 0 || k.ep_overlap) return layouts.make(on, k, options);
      const RecomputePolicy recompute = k.recompute;
      k.recompute = RecomputePolicy::none;
      auto it = std::find_if(made.begin(), made.end(), [&](const auto& m) { return m.first == k; });
      if (it == made.end()) it = made.insert(made.end(), {k, layouts.make(on, k, options)});
      Plan plan = it->second;
      plan.recompute = recompute;
      return plan;
    };
    // The candidate's plan with `layers[s]` layers on stage s; its operators take their new
    // stage's cuts where the stages' layouts differ.
    auto restaged = [&](const Candidate& c, Plan plan, const std::vector<int>& layers_per_stage) {
      plan = restage(graph, order, layouts.structure(), std::move(plan), layers_per_stage);
      if (!c.sources.empty()) take_stage_cuts(plan, c.sources, c.source_of_stage);
      return plan;
    };
    // What a uniform candidate tells of one group at one layout: whether its stages fit their
    // devices, and samples a second per layer (its replicas over its stages' seconds per layer).
    // Under full recomputation a plan that does not fit as a whole is not priced, so then no
    // group is credited (a mixed candidate missed, never a wrong one: each is checked whole).
    struct GroupRate {
      bool fits = false;
      double rate = 0;
    };
    // Builds the candidate whose stages in group g run group_layout[g] (each group's plan made
    // by Megatron's layout at its own tp and cp on the same pipeline, their meshes refined to
    // one and each stage taking its group's cuts); returns per group what its stages gave at the
    // split by pace (empty when it was not built).
    auto add_candidate = [&](const std::vector<GroupLayout>& group_layout, RecomputePolicy recompute, int stage_nodes,
                             int pp) -> std::vector<GroupRate> {
      // One micro-batch of the pipeline is the same samples on every stage: each group's
      // replicas (stage_nodes x per_node / (tp x cp) of them) share it.
      const int stage_gpus = stage_nodes * per_node;
      long long samples = 1;
      for (const GroupLayout& l : group_layout) {
        if (stage_gpus % (l.tp * l.cp) != 0) return {};
        samples = std::lcm(samples, static_cast<long long>(stage_gpus / (l.tp * l.cp)));
      }
      std::vector<Plan> plans;   // one per distinct layout
      std::vector<GroupLayout> plan_layout;
      MegatronKnobs first_knobs;
      for (std::size_t g = 0; g < group_layout.size(); ++g) {
        const auto [tp, cp] = group_layout[g];
        MegatronKnobs k;
        k.tp = tp, k.cp = cp, k.pp = pp, k.sp = tp > 1, k.distopt = true, k.recompute = recompute;
        k.dp = stage_gpus / (tp * cp);
        k.mb = static_cast<int>(samples / k.dp);
        // Any valid layout to start from (the stages' layers are set below).
        const int rest = layers - (pp - 2);
        if (pp > 2) k.first = (rest + 1) / 2, k.last = rest - k.first;
        if (pp == 2) k.first = layers / 2, k.last = layers - k.first;
        if (g == 0) first_knobs = k;
        if (std::find(plan_layout.begin(), plan_layout.end(), group_layout[g]) != plan_layout.end()) continue;
        try {
          plans.push_back(megatron_layout(k));
          plan_layout.push_back(group_layout[g]);
        } catch (const std::exception&) {
          return {};  // tp does not divide the heads, the batch does not split, ...
        }
      }
      Candidate c;
      c.group_layout = group_layout;
      c.knobs = first_knobs;
      c.plan = plans.front();
      c.stage_groups = plan_stage_groups(c.plan, on);
      if (std::any_of(c.stage_groups.begin(), c.stage_groups.end(), [](int g) { return g < 0; })) return {};
      if (plans.size() > 1) {
        for (int g : c.stage_groups)
          c.source_of_stage.push_back(
              static_cast<int>(std::find(plan_layout.begin(), plan_layout.end(), group_layout[g]) - plan_layout.begin()));
        try {
          c.sources = refine_to_common_mesh(plans);
        } catch (const std::exception&) {
          return {};  // no common mesh ([3, 2] and [2, 3] GPUs a node)
        }
        c.plan = c.sources.front();
      }
      std::vector<double> pace;
      for (int g : c.stage_groups) pace.push_back(hardware::device_pace(on.groups[g].device));
      const std::vector<int> counts = proportional_parts(pace, layers);
      if (counts.empty()) return {};
      c.plan = restaged(c, std::move(c.plan), counts);
      Evaluation at_pace;
      const bool fit = fit_memory(c.plan, c.knobs.fsdp, &at_pace);
      // Balance by the analysis on each group's device: each stage's time is linear in its
      // layers (t = extra + n x per-layer; a stage's recomputed layers, kept at their count,
      // are in `extra`), measured at two splits, then layers go one at a
      // time to the stage that stays the fastest with it (min-max, exact for linear costs).
      const std::vector<double> t1 = stage_seconds(c.plan, c.stage_groups);
      std::vector<GroupRate> rates(on.groups.size());
      if (at_pace.valid && !t1.empty()) {
        const StepEstimate& e = at_pace.estimate;
        for (std::size_t g = 0; g < rates.size(); ++g) rates[g].fits = true;
        for (int st = 0; st < pp; ++st) {
          GroupRate& r = rates[c.stage_groups[st]];
          const bool stage_fits = st >= static_cast<int>(e.stage_peak_memory.size()) ||
                                  e.stage_peak_memory[st] <= e.stage_capacity(st);
          r.fits = r.fits && stage_fits;
          r.rate += static_cast<double>(samples) * counts[st] / std::max(t1[st], 1e-12);
        }
      }
      if (!fit) return rates;
      std::vector<int> other = counts;
      const int half = pp / 2;
      for (int st = 0; st < half; ++st) other[st] += st == 0 && pp % 2 ? 2 : 1;
      for (int st = half; st < pp; ++st) other[st] -= 1;
      const bool linear = !t1.empty() && std::all_of(other.begin(), other.end(), [](int n) { return n >= 1; });
      std::vector<double> t2;
      if (linear) t2 = stage_seconds(restaged(c, c.plan, other), c.stage_groups);
      if (!t2.empty()) {
        std::vector<double> per_layer(pp), extra(pp);
        for (int st = 0; st < pp; ++st) {
          per_layer[st] = std::max(0.0, (t2[st] - t1[st]) / (other[st] - counts[st]));
          extra[st] = std::max(0.0, t1[st] - counts[st] * per_layer[st]);
        }
        std::vector<int> balanced(pp, 1);
        for (int n = pp; n < layers; ++n) {
          int to = 0;
          for (int st = 1; st < pp; ++st)
            if (extra[st] + (balanced[st] + 1) * per_layer[st] < extra[to] + (balanced[to] + 1) * per_layer[to]) to = st;
          ++balanced[to];
        }
        double slowest = 0;
        for (int st = 0; st < pp; ++st) slowest = std::max(slowest, extra[st] + balanced[st] * per_layer[st]);
        Plan plan = restaged(c, c.plan, balanced);
        plan.recompute_layers.clear();
        if (fit_memory(plan, c.knobs.fsdp)) {
          c.plan = std::move(plan);
          c.predicted = slowest * (c.plan.micro_batches + pp - 1);
        }
      }
      if (c.predicted == 0) {
        double slowest = 0;
        for (double x : t1) slowest = std::max(slowest, x);
        c.predicted = t1.empty() ? kInfinity : slowest * (c.plan.micro_batches + pp - 1);
      }
      // Recomputing no layer of any stage, it is the candidate without recomputation of the
      // same knobs (whose split balances alike): not kept twice.
      if (c.plan.recompute == RecomputePolicy::full && !c.plan.recompute_layers.empty() &&
          std::all_of(c.plan.recompute_layers.begin(), c.plan.recompute_layers.end(), [](int n) { return n == 0; }))
        return rates;
      candidates.push_back(std::move(c));
      return rates;
    };
    // Context parallelism as Megatron-best prices it (from 4k-token sequences), the same degree
    // on every stage of a uniform candidate.
    const std::vector<int> cps =
        context_parallel_sizes(graph, layouts.structure(), layouts.spaces(), on.num_devices());
    for (int stage_nodes : divisors(gcd_of(nodes))) {
      const int pp = on.levels.back().size / stage_nodes;
      if (pp < 2 || pp > layers) continue;
      // Selective recomputation where it prices as none (selective_recompute_is_none) would
      // only repeat its candidates.
      std::vector<RecomputePolicy> recomputes{RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
      if (selective_is_none) recomputes.erase(recomputes.begin() + 1);
      // Per recomputation policy, per group: the fastest layout at which its stages fit (the
      // uniform candidates measure each group at each layout), and its rate.
      std::vector<std::vector<std::pair<double, GroupLayout>>> best(
          recomputes.size(), std::vector<std::pair<double, GroupLayout>>(on.groups.size(), {0.0, GroupLayout{0, 0}}));
      for (int cp : cps) {
        for (int tp : {8, 4, 2, 1}) {
          if (per_node % tp != 0) continue;
          for (std::size_t r = 0; r < recomputes.size(); ++r) {
            const std::vector<GroupRate> rates =
                add_candidate(std::vector<GroupLayout>(on.groups.size(), {tp, cp}), recomputes[r], stage_nodes, pp);
            for (std::size_t g = 0; g < rates.size(); ++g)
              if (rates[g].fits && rates[g].rate > best[r][g].first) best[r][g] = {rates[g].rate, {tp, cp}};
          }
        }
      }
      // Per-stage layouts: each group's stages at the tp and cp that run them fastest, where the
      // groups differ (H100 stages holding many layers at tp=4, A100 stages few at tp=1).
      for (std::size_t r = 0; r < recomputes.size(); ++r) {
        std::vector<GroupLayout> group_layout;
        for (const auto& [rate, layout] : best[r]) group_layout.push_back(layout);
        if (std::find(group_layout.begin(), group_layout.end(), GroupLayout{0, 0}) != group_layout.end())
          continue;  // a group fits at no layout
        if (std::adjacent_find(group_layout.begin(), group_layout.end(), std::not_equal_to<>()) == group_layout.end())
          continue;
        add_candidate(group_layout, recomputes[r], stage_nodes, pp);
      }
    }
    // The balanced splits ranked by their prediction; the simulator referees the best three,
    // then refines the best of those by moving layers while the simulated step drops.
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.predicted < b.predicted; });
    if (candidates.size() > 3) candidates.resize(3);
    // The first split simulated of each candidate that fit: its knobs, layer counts and step
    // (shortened: simulate_shortened).
    struct FirstSplit {
      MegatronKnobs knobs;
      std::vector<int> stage_zero;  // Plan::stage_zero_stages
      std::vector<GroupLayout> group_layout;
      std::vector<int> counts;
      double step_time_s;
    };
    std::vector<FirstSplit> first_splits;
    // Per candidate: the best split simulated and the splits tried.
    struct Trials {
      FleetStep best;
      std::vector<int> best_counts;
      std::vector<double> best_compute;  // per stage, simulated compute seconds of the best split
      bool best_shortened = false;       // its step from simulate_shortened's extension
      ShorterSteps best_steps;           // the shorter steps simulated then
      std::vector<std::vector<int>> tried;
    };
    std::vector<Trials> trials(candidates.size());
    auto label = [&](const Candidate& c, const std::vector<int>& layers_per_stage, const Plan& plan) {
      std::string split;
      for (std::size_t s = 0; s < c.stage_groups.size(); ++s)
        split += fmt::format("{}{}:{}", s ? " " : "", on.groups[c.stage_groups[s]].profile, layers_per_stage[s]);
      std::string knobs = knobs_label(c.knobs, &plan);
      const std::vector<GroupLayout>& l = c.group_layout;
      if (std::adjacent_find(l.begin(), l.end(), std::not_equal_to<>()) != l.end()) {
        const int stage_gpus = c.knobs.dp * c.knobs.tp * c.knobs.cp;
        std::vector<std::string> per_group;
        for (std::size_t g = 0; g < l.size(); ++g)
          per_group.push_back(fmt::format("{} tp={}{} dp={}", on.groups[g].profile, l[g].tp,
                                          l[g].cp > 1 ? fmt::format(" cp={}", l[g].cp) : "", stage_gpus / (l[g].tp * l[g].cp)));
        knobs = fmt::format("parallelism by group: {}; pp={} recompute={}{}", fmt::join(per_group, ", "), c.knobs.pp,
                            describe_recompute(plan), plan.stage_zero_stages.empty() ? "" : " " + describe_zero(plan));
      }
      return fmt::format("pipeline over the groups, layers by speed ({}; {})", split, knobs);
    };
    // Simulates candidate i at a split not tried before; keeps it when it beats the
    // candidate's best. Returns whether it did.
    auto attempt = [&](std::size_t i, const std::vector<int>& counts) {
      const Candidate& c = candidates[i];
      Trials& t = trials[i];
      if (counts.empty() || std::find(t.tried.begin(), t.tried.end(), counts) != t.tried.end()) return false;
      t.tried.push_back(counts);
      FleetStep step;
      std::vector<double> compute;
      bool shortened = false;
      ShorterSteps steps;
      try {
        step.plan = restaged(c, c.plan, counts);
        // The new split's stages recompute, or shard, what they need.
        if (!c.plan.recompute_layers.empty() || !c.plan.stage_zero_stages.empty()) {
          step.plan.recompute_layers.clear();
          if (!fit_memory(step.plan, c.knobs.fsdp)) return false;
        }
        // A split that cannot beat the best so far is not simulated (the attempt is spent).
        if (t.best.found && t.best.fits && compute_bound(step.plan, c.stage_groups) >= t.best.step_time_s) return false;
        ++result.simulations;
        const SearchSimulation s = simulate_shortened(simulations_on, step.plan, &steps);
        step.found = true, step.fits = s.fits, step.step_time_s = s.step_time_s;
        compute = s.stage_compute_s;
        shortened = s.extended;
      } catch (const std::exception&) {
        return false;
      }
      if (compute.size() != c.stage_groups.size() || !faster(step, t.best)) return false;
      step.cluster = on.name, step.label = label(c, counts, step.plan);
      t.best = std::move(step), t.best_counts = counts, t.best_compute = std::move(compute);
      t.best_shortened = shortened, t.best_steps = std::move(steps);
      return true;
    };
    // The candidates are refereed on shortened simulations (simulate_shortened); one that
    // wins there is simulated as a step is reported (simulated(): the whole step's figures),
    // and adopted at that step if it still wins.
    auto adopt_if_faster = [&](std::size_t i) {
      Trials& t = trials[i];
      if (!t.best.found || !faster(t.best, result.plan)) return false;
      FleetStep whole =
          t.best_shortened ? simulated(simulations_on, t.best.plan, t.best.label, result.simulations, &t.best_steps) : t.best;
      if (!faster(whole, result.plan)) return false;
      result.plan = std::move(whole);
      result.heterogeneous = true;
      result.batch_shares = false;
      result.stage_groups.clear();
      for (int g : candidates[i].stage_groups) result.stage_groups.push_back(to_fleet[g]);
      result.stage_layers = t.best_counts;
      return true;
    };
    // First each candidate's balanced split, then the refinement of those that fit, the
    // fastest first, while simulations are left.
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      // A candidate that cannot beat the plan so far is not simulated: its busiest stage's
      // compute alone takes as long.
      if (result.plan.fits && compute_bound(c.plan, c.stage_groups) >= result.plan.step_time_s) continue;
      std::vector<int> counts(c.stage_groups.size(), 0);
      for (NodeId anchor : layouts.structure().layer_anchors) ++counts[c.plan.stage_of_node[anchor]];
      // Nor one that is a simulated candidate's plan with more recomputation (the same layout
      // and split): recomputation only adds compute blocks before each backward, so its step is
      // no shorter than that candidate's, which the plan so far already matches or beats.
      // (Full recomputation of some layers per stage recomputes more than none, but not more
      // than selective recomputation of every layer.) Only with the same ZeRO stages: sharding
      // more adds gathers and reduce-scatters that recomputation may beat.
      const bool dominated = std::any_of(first_splits.begin(), first_splits.end(), [&](const FirstSplit& f) {
        MegatronKnobs same = c.knobs;
        same.recompute = f.knobs.recompute;
        const bool more = f.knobs.recompute < c.knobs.recompute &&
                          (f.knobs.recompute == RecomputePolicy::none || c.plan.recompute_layers.empty());
        return more && f.stage_zero == c.plan.stage_zero_stages && same == f.knobs && f.group_layout == c.group_layout &&
               f.counts == counts && result.plan.fits && f.step_time_s >= result.plan.step_time_s;
      });
      if (dominated) continue;
      attempt(i, counts);
      const Trials& t = trials[i];
      if (t.best.found && t.best.fits)
        first_splits.push_back({c.knobs, c.plan.stage_zero_stages, c.group_layout, counts, t.best.step_time_s});
      adopt_if_faster(i);
    }
    // Then, while the step drops: layers in proportion to each stage's simulated speed
    // (layers per second of compute), else one layer off the busiest stage onto the idlest or
    // a neighbour; four splits refereed at most in all, so a candidate whose refinement stalls
    // leaves the rest to the next (a split 2% slower at first may refine to the fastest).
    std::vector<std::size_t> by_step;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (trials[i].best.found && trials[i].best.fits) by_step.push_back(i);
    std::stable_sort(by_step.begin(), by_step.end(),
                     [&](std::size_t a, std::size_t b) { return trials[a].best.step_time_s < trials[b].best.step_time_s; });
    int refine = 4;
    for (std::size_t next = 0; next < by_step.size() && refine > 0;) {
      const std::size_t i = by_step[next];
      const Trials& t = trials[i];
      const int stages = static_cast<int>(t.best_counts.size());
      std::vector<std::vector<int>> moves;
      std::vector<double> speed;
      for (int st = 0; st < stages; ++st) speed.push_back(t.best_counts[st] / std::max(t.best_compute[st], 1e-12));
      moves.push_back(proportional_parts(speed, layers));
      const int busiest = static_cast<int>(std::max_element(t.best_compute.begin(), t.best_compute.end()) - t.best_compute.begin());
      const int idlest = static_cast<int>(std::min_element(t.best_compute.begin(), t.best_compute.end()) - t.best_compute.begin());
      for (int to : {idlest, busiest - 1, busiest + 1}) {
        if (to < 0 || to >= stages || to == busiest || t.best_counts[busiest] <= 1) continue;
        std::vector<int> moved = t.best_counts;
        --moved[busiest], ++moved[to];
        moves.push_back(moved);
      }
      // A move that the simulated speeds predict leaves the busiest stage's compute as long
      // (each stage's seconds scaled by its new layer count) is not simulated.
      const double busiest_s = t.best_compute[busiest];
      auto relieves = [&](const std::vector<int>& m) {
        if (m.size() != t.best_counts.size()) return false;
        double most = 0;
        for (int st = 0; st < stages; ++st) most = std::max(most, m[st] / speed[st]);
        return most < busiest_s * (1 - 1e-9);
      };
      bool improved = false;
      for (const std::vector<int>& m : moves) {
        if (refine <= 0) break;
        if (!relieves(m)) continue;
        const std::size_t before = t.tried.size();
        improved = attempt(i, m);
        if (t.tried.size() > before) --refine;
        if (improved) break;
      }
      if (improved) adopt_if_faster(i);
      else ++next;
    }
  };
  if (options.mode == ExecutionMode::train) {
    std::vector<int> all(fleet.groups.size());
    std::iota(all.begin(), all.end(), 0);
    pipelines(fleet, all);
    // Some of the groups only (two or more of three or more): a slow group behind a slow
    // network may cost a pipeline more than its layers give.
    const std::vector<std::vector<int>> parts = hardware::fleet_parts(fleet, 2);
    for (const std::vector<int>& some : parts) pipelines(hardware::sub_fleet(fleet, some), some);
    // Batch shares, after the pipelines (their step is the bar a grid's bound must beat), on
    // the whole fleet and (three or more groups) on some of its groups, as the pipelines: the
    // best three grids by the estimate; one whose first simulation beats the plan so far is
    // then rebalanced from its simulated times.
    auto shares = [&](const hardware::Cluster& on, const std::vector<int>& to_fleet) {
      std::vector<SharesCandidate> grids =
          batch_share_candidates(graph, on, options, ng, result.plan.fits ? result.plan.step_time_s : kInfinity);
      if (grids.size() > 3) grids.resize(3);
      SimulationAnalyzers simulations_on(graph, on, ng);
      for (SharesCandidate& c : grids) {
        FleetStep best;
        std::vector<std::vector<int>> tried;
        std::vector<int> counts = c.plan.group_micro_batches;
        int total = 0;
        for (std::size_t g = 0; g < counts.size(); ++g) total += counts[g] * c.replicas[g];
        for (int round = 0; round < 4 && !counts.empty(); ++round) {
          if (std::find(tried.begin(), tried.end(), counts) != tried.end()) break;
          tried.push_back(counts);
          Plan plan = c.plan;
          plan.group_micro_batches = counts;
          const double bound = round == 0 ? c.bound : shares_compute_bound(graph, on, plan, ng);
          const FleetStep& beat = best.found && best.fits && faster(best, result.plan) ? best : result.plan;
          if (beat.fits && bound >= beat.step_time_s) break;  // cannot win
          ++result.simulations;
          FleetStep step;
          step.plan = std::move(plan);
          step.cluster = on.name, step.found = true;
          std::vector<double> seconds(on.groups.size(), 0);  // simulated compute per micro-batch, per group
          try {
            const SearchSimulation s = simulate_for_search(simulations_on, step.plan);
            step.step_time_s = s.step_time_s, step.fits = s.fits;
            for (std::size_t r = 0; r < s.stage_group.size(); ++r)
              if (const int g = s.stage_group[r]; g >= 0)
                seconds.at(g) = std::max(seconds[g], s.stage_compute_s[r] / counts.at(g));
          } catch (const std::exception&) {
            break;
          }
          step.label = fmt::format("batch shares by speed ({}; {})", describe_batch_shares(step.plan, on, c.knobs.dp),
                                   knobs_label(c.knobs));
          if (!faster(step, best)) break;
          best = std::move(step);
          if (!faster(best, result.plan)) break;  // only a grid that wins is refined
          if (!best.fits || std::any_of(seconds.begin(), seconds.end(), [](double x) { return x <= 0; })) break;
          counts = share_counts(c.replicas, seconds, total);  // rebalanced from the simulated times
        }
        if (best.found && faster(best, result.plan)) {
          result.plan = std::move(best);
          result.heterogeneous = false;
          result.batch_shares = true;
          result.shares_dp = c.knobs.dp;
          result.share_groups = to_fleet;
          result.stage_layers.clear();
        }
      }
    };
    if (batch_shares) {
      shares(fleet, all);
      for (const std::vector<int>& some : parts) shares(hardware::sub_fleet(fleet, some), some);
    }
  }
  if (!result.heterogeneous) result.stage_groups.clear();
  result.plan.plan.strategy = "symtensor";
  if (result.ceiling > 0 && result.plan.fits && result.plan.step_time_s > 0)
    result.ceiling_share = result.megatron.subset.step_time_s / result.plan.step_time_s / result.ceiling;
  return result;
}

}  // namespace symtensor::compiler
