#include "compiler/search/fleet_shares.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "compiler/cost/plan_analysis.h"
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
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    hardware::Cluster view = fleet;
    view.device = fleet.groups[g].device;
    PlanAnalyzer analyzer(graph, view, ng);
    try {
      const StageTotals& t = analyzer.totals(plan);
      const int m = plan.group_micro_batches.empty() ? plan.micro_batches : plan.group_micro_batches.at(g);
      const bool chained = plan.virtual_stages <= 1;
      double fill = 0, drain = 0;
      for (std::size_t st = 0; st < t.fwd_compute.size(); ++st) {
        bound = std::max(bound, (chained ? fill + drain : 0.0) + (t.fwd_compute[st] + t.bwd_compute[st]) * m);
        fill += t.fwd_compute[st], drain += t.bwd_compute[st];
      }
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
  const int devices = fleet.num_devices(), per_node = fleet.devices_per_node();
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
      for (int mb : {1, 2}) {
        const double per = static_cast<double>(dp) * mb;
        if (std::fmod(batch, per) != 0) continue;
        const int total = static_cast<int>(batch / per) * dp;  // micro-batches of all replicas
        const std::vector<int> counts = share_counts(replicas, seconds, total);
        if (counts.empty() || std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts.front(); })) continue;
        if (pp > 1 && std::any_of(counts.begin(), counts.end(), [&](int c) { return c < pp; })) continue;  // a full pipeline
        for (RecomputePolicy recompute : {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
          MegatronKnobs k;
          k.tp = tp, k.pp = pp, k.dp = dp, k.mb = mb, k.sp = tp > 1, k.distopt = true, k.recompute = recompute;
          SharesCandidate c;
          try {
            c.plan = layouts.make(fleet, k, options);
          } catch (const std::exception&) {
            break;  // the grid does not divide the model or the batch
          }
          if (!pipelines_inside_groups(c.plan, fleet)) break;
          c.plan.group_micro_batches = counts;
          c.bound = shares_compute_bound(graph, fleet, c.plan, ng);
          if (c.bound >= beat) break;  // cannot win, nor with more recomputation
          StepEstimate e;
          try {
            e = fleet_step_estimate(graph, fleet, c.plan, ng);
          } catch (const std::exception&) {
            break;
          }
          if (!e.fits) continue;  // more recomputation may fit
          c.knobs = k, c.replicas = replicas, c.estimate = e.step_time_s;
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
