#include "compiler/search/fleet_shares.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

#include "compiler/cost/plan_analysis.h"
#include "compiler/plan/batch_shares.h"
#include "compiler/search/fleet_estimate.h"

namespace symtensor::compiler {
namespace {

// Whether each pipeline of the plan (its ranks along the pipeline axis) lies inside one group,
// as batch shares need (a group's replicas run their own micro-batch count).
bool pipelines_inside_groups(const Plan& plan, const hardware::Cluster& fleet) {
  if (plan.pipeline_axis < 0) return true;
  const hardware::DeviceMesh mesh = plan_mesh(plan, fleet);
  const hardware::MeshAxis& axis = mesh.axes().at(plan.pipeline_axis);
  for (int r = 0; r < mesh.num_devices(); ++r)
    if ((r / axis.stride) % axis.size + 1 < axis.size && fleet.group_of_rank(r) != fleet.group_of_rank(r + axis.stride))
      return false;
  return true;
}

// The compute lower bound of one group's replicas from their analysis (`plan`: the group's,
// plan_for_group).
double compute_bound_of(const StageTotals& t, const Plan& plan) {
  return pipeline_compute_bound(t.fwd_compute, t.bwd_compute, plan.micro_batches, plan.virtual_stages <= 1);
}

}  // namespace

std::vector<int> share_counts(const std::vector<int>& replicas, const std::vector<double>& seconds, int total) {
  const int n = static_cast<int>(replicas.size());
  if (n == 0 || seconds.size() != replicas.size()) return {};
  // Equal times: count_g x seconds_g = tau for every g, sum of replicas x count = total.
  double speed = 0;
  for (int g = 0; g < n; ++g) speed += replicas[g] / std::max(seconds[g], 1e-30);
  const double tau = total / speed;
  std::vector<int> best, counts(n, 0);
  double best_time = std::numeric_limits<double>::infinity(), best_off = 0;
  const int reach = n <= 3 ? 3 : 1;
  // Counts near tau / seconds for all groups but the last, whose count the total fixes.
  std::function<void(int, long long)> walk = [&](int g, long long used) {
    if (g == n - 1) {
      const long long left = total - used;
      if (left < replicas[g] || left % replicas[g] != 0) return;
      counts[g] = static_cast<int>(left / replicas[g]);
      double time = 0, off = 0;
      for (int h = 0; h < n; ++h) {
        time = std::max(time, counts[h] * seconds[h]);
        off += std::abs(counts[h] - tau / seconds[h]);
      }
      if (time < best_time * (1 - 1e-12) || (time <= best_time * (1 + 1e-12) && off < best_off))
        best = counts, best_time = time, best_off = off;
      return;
    }
    const double ideal = tau / seconds[g];
    const int lo = std::max(1, static_cast<int>(std::floor(ideal)) - reach), hi = static_cast<int>(std::ceil(ideal)) + reach;
    for (int c = lo; c <= hi; ++c) {
      counts[g] = c;
      walk(g + 1, used + static_cast<long long>(c) * replicas[g]);
    }
  };
  walk(0, 0);
  return best;
}

double shares_compute_bound(Graph& graph, const hardware::Cluster& fleet, const Plan& plan, const NumericGraph& ng) {
  double bound = 0;
  GroupAnalyzers on_group(graph, fleet, ng);
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    try {
      const Plan pg = plan_for_group(plan, static_cast<int>(g));
      bound = std::max(bound, compute_bound_of(on_group[g].totals(pg), pg));
    } catch (const std::exception&) {
      return 0;
    }
  }
  return bound;
}

std::vector<SharesCandidate> batch_share_candidates(Graph& graph, const hardware::Cluster& fleet,
                                                    const StrategyOptions& options, const NumericGraph& ng, double beat) {
  std::vector<SharesCandidate> out;
  if (!fleet.mixed() || options.mode != ExecutionMode::train) return out;
  double batch = 0;
  try {
    batch = plan_skeleton("symtensor", graph, fleet, options).global_batch;
  } catch (const std::exception&) {
    return out;  // no batch bound
  }
  MegatronLayouts layouts(graph, ng.spaces());
  // One analyzer per group's device for every grid (the bound and the estimate from one analysis).
  GroupAnalyzers on_group(graph, fleet, ng);
  // The plan's compute lower bound and estimate (shares_compute_bound, fleet_step_estimate),
  // the estimate only when the bound is under `beat`; throws when the analysis refuses the plan.
  auto evaluate = [&](const Plan& plan, double& bound, StepEstimate& estimate) {
    bound = 0;
    std::vector<StepEstimate> per_group;
    for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
      const Plan pg = plan_for_group(plan, static_cast<int>(g));
      const StageTotals& t = on_group[g].totals(pg);
      bound = std::max(bound, compute_bound_of(t, pg));
      per_group.push_back(estimate_step(t, pg, on_group.view(g)));
    }
    if (bound < beat) estimate = combine_share_estimates(fleet, plan, std::move(per_group));
  };
  const int devices = fleet.num_devices(), per_node = fleet.devices_per_node();
  // Selective recomputation where it prices as none (selective_recompute_is_none) fits where
  // none fits: not priced.
  const bool selective_is_none = selective_recompute_is_none(ng, fleet.stack);
  std::vector<double> seconds;  // per micro-batch, relative: 1 / pace
  for (const hardware::DeviceGroup& g : fleet.groups) seconds.push_back(1 / hardware::device_pace(g.device));
  for (int tp : {1, 2, 4, 8}) {
    if (per_node % tp != 0) continue;
    for (int pp : {1, 2, 4, 8}) {
      const int replica = tp * pp;
      if (std::any_of(fleet.groups.begin(), fleet.groups.end(), [&](const hardware::DeviceGroup& g) { return g.devices % replica; }))
        continue;
      const int dp = devices / replica;
      std::vector<int> replicas;
      for (const hardware::DeviceGroup& g : fleet.groups) replicas.push_back(g.devices / replica);
      // Megatron's layout at (tp, pp): built once for every micro-batch size and recomputation
      // policy, which set only the plan's fields (MegatronLayouts::make); none where it is refused.
      std::optional<Plan> layout;
      bool refused = false;
      // A micro-batch twice as large keeps more activations: it cannot fit with less
      // recomputation than the smaller one needed.
      int least = 0;
      for (int mb : {1, 2, 4, 8}) {
        const double per = static_cast<double>(dp) * mb;
        if (std::fmod(batch, per) != 0) continue;
        const int total = static_cast<int>(batch / per) * dp;  // micro-batches of all replicas
        const std::vector<int> counts = share_counts(replicas, seconds, total);
        if (counts.empty() || std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts.front(); })) continue;
        if (pp > 1 && std::any_of(counts.begin(), counts.end(), [&](int c) { return c < pp; })) continue;  // a full pipeline
        const RecomputePolicy levels[] = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
        for (int level = least; level < 3; ++level) {
          const RecomputePolicy recompute = levels[level];
          if (recompute == RecomputePolicy::selective && selective_is_none) continue;
          MegatronKnobs k;
          k.tp = tp, k.pp = pp, k.dp = dp, k.mb = mb, k.sp = tp > 1, k.distopt = true, k.recompute = recompute;
          if (!layout && !refused) {
            try {
              layout = layouts.make(fleet, k, options);
              layout->cuts_stamp = new_cuts_stamp();  // its cuts checked, and its twins found, once per grid
            } catch (const std::exception&) {
              refused = true;  // the grid does not divide the model (the batch divides: checked above)
            }
          }
          if (refused || !pipelines_inside_groups(*layout, fleet)) break;
          SharesCandidate c;
          c.plan = *layout;
          c.plan.micro_batches = static_cast<int>(layout->global_batch / per);
          c.plan.recompute = recompute;
          c.plan.group_micro_batches = counts;
          StepEstimate e;
          try {
            evaluate(c.plan, c.bound, e);
          } catch (const std::exception&) {
            break;
          }
          if (c.bound >= beat) break;  // cannot win, nor with more recomputation
          if (!e.fits) {
            least = level + 1;
            continue;  // more recomputation may fit
          }
          c.knobs = k, c.replicas = replicas, c.estimate = e.step_time_s;
          c.plan.cuts_stamp = 0;  // returned as a search returns its plans (Plan::cuts_stamp)
          out.push_back(std::move(c));
          break;  // the least recomputation that fits
        }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SharesCandidate& a, const SharesCandidate& b) { return a.estimate < b.estimate; });
  return out;
}

}  // namespace symtensor::compiler
