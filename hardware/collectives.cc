// Alpha-beta collective costs (p ranks, N = bytes as nccl-tests defines it). The formulas
// are written out once in hardware/collective_expr.h; the algorithms are:
//   ring:         NCCL's rings; pairwise exchange for all-to-all; a pipelined chain for
//                 broadcast/reduce.
//   tree:         pipelined double binary tree (NCCL) for all-reduce, broadcast and reduce;
//                 recursive doubling/halving (Bruck's variant for any p) for all-gather and
//                 reduce-scatter; Bruck's algorithm for all-to-all.
//   hierarchical: one phase per spanned topology level (two-level all-reduce of
//                 CALIBRATION.md generalised): reduce-scatter inwards-out, all-gather back.
// A flat algorithm on a group spanning several levels pays each step the largest alpha of
// those levels; its bandwidth is the smallest over levels l of B_l x (group ranks inside
// level l), because NCCL runs one ring per NIC rail so the ranks below share the traffic
// that crosses level l. All-to-all and send/recv move every rank's own bytes over its own
// link, so they use the smallest B_l.
// On a mesh level (point-to-point links, one per pair of GPUs) B_l is the group's share of the
// GPU's egress: r_l - 1 of the size - 1 links, bandwidth x (r_l - 1)/(size - 1), for rings, the
// hierarchical phases, all-to-all and send/recv alike (a pair of GPUs gets one link). A tree
// step exchanges with one partner, so it gets one link whatever the group.
#include "hardware/collectives.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "hardware/collective_detail.h"

namespace symtensor::hardware {

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::send_recv: return "send_recv";
  }
  return "?";
}

std::string_view to_string(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::automatic: return "automatic";
    case CollectiveAlgorithm::ring: return "ring";
    case CollectiveAlgorithm::tree: return "tree";
    case CollectiveAlgorithm::hierarchical: return "hierarchical";
  }
  return "?";
}

double bus_bandwidth_factor(Collective kind, int n) {
  if (n < 1) throw std::runtime_error(fmt::format("bus_bandwidth_factor: group of {} ranks", n));
  switch (kind) {
    case Collective::all_reduce: return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

namespace detail {

int ceil_log2(int p) {
  int k = 0;
  while ((1LL << k) < p) ++k;
  return k;
}

double flat_time(Collective kind, CollectiveAlgorithm algorithm, const FlatLinks& g, double n) {
  const double p = g.ranks;
  const double a = g.alpha;
  const double frac = (p - 1) / p;
  const double logp = ceil_log2(g.ranks);
  if (kind == Collective::send_recv) return a + n / g.bandwidth_single;
  if (algorithm == CollectiveAlgorithm::ring) {
    switch (kind) {
      case Collective::all_reduce: return 2 * (p - 1) * a + 2 * frac * n / g.bandwidth_rails;
      case Collective::all_gather:
      case Collective::reduce_scatter: return (p - 1) * a + frac * n / g.bandwidth_rails;
      case Collective::all_to_all: return (p - 1) * a + frac * n / g.bandwidth_single;
      default: return (p - 1) * a + n / g.bandwidth_rails;  // broadcast, reduce
    }
  }
  // Tree: recursive doubling / halving, binomial trees. Each step pairs a GPU with one
  // partner, so a step that leaves the node runs on that GPU's own link: unlike a ring's
  // channels, no aggregation over the node's NICs (not bandwidth_rails), and on a mesh one
  // link of the GPU's (bandwidth_peer, which is bandwidth_single on every other kind).
  switch (kind) {
    case Collective::all_reduce: return 2 * logp * a + 2 * n / g.bandwidth_peer;
    case Collective::all_gather:
    case Collective::reduce_scatter: return logp * a + frac * n / g.bandwidth_peer;
    case Collective::all_to_all: return logp * a + logp * n / (2 * g.bandwidth_peer);
    default: return logp * a + n / g.bandwidth_peer;  // broadcast, reduce
  }
}

}  // namespace detail

namespace {

void check_group(const Cluster& cluster, const GroupShape& group, double bytes) {
  if (group.ranks_per_level.size() != cluster.levels.size()) {
    throw std::runtime_error(fmt::format("collective on '{}': group shape has {} levels, the cluster {}", cluster.name,
                                         group.ranks_per_level.size(), cluster.levels.size()));
  }
  for (std::size_t l = 0; l < cluster.levels.size(); ++l) {
    int r = group.ranks_per_level[l];
    if (r < 1 || r > cluster.levels[l].size) {
      throw std::runtime_error(fmt::format("collective on '{}': {} ranks on level '{}' of size {}", cluster.name, r,
                                           cluster.levels[l].name, cluster.levels[l].size));
    }
  }
  if (!(bytes >= 0)) throw std::runtime_error(fmt::format("collective of {} bytes", bytes));
}

double hierarchical_time(const Cluster& cluster, Collective kind, const GroupShape& group, double n) {
  if (kind == Collective::send_recv) {
    return detail::flat_time(kind, CollectiveAlgorithm::ring, detail::flat_links(cluster, group), n);
  }
  double total = 0;
  double inner = 1;  // ranks of the group inside the current level
  for (std::size_t l = 0; l < cluster.levels.size(); ++l) {
    const double r = group.ranks_per_level[l];
    if (r > 1) {
      const TopologyLevel& level = cluster.levels[l];
      const double latency = (r - 1) * level.latency_s;
      const double b = level.group_bandwidth(group.ranks_per_level[l]);
      switch (kind) {
        case Collective::all_reduce: total += 2 * (latency + (r - 1) / r * (n / inner) / b); break;
        case Collective::all_gather:
        case Collective::reduce_scatter: total += latency + (r - 1) / r * (n / inner) / b; break;
        case Collective::all_to_all: total += latency + (r - 1) / r * n / b; break;
        default: total += latency + n / b; break;  // broadcast, reduce
      }
    }
    inner *= r;
  }
  return total;
}

}  // namespace

namespace detail {

FlatLinks flat_links(const Cluster& cluster, const GroupShape& group) {
  FlatLinks links;
  bool first = true;
  double inner = 1;
  for (std::size_t l = 0; l < cluster.levels.size(); ++l) {
    const int r = group.ranks_per_level[l];
    if (r > 1) {
      const TopologyLevel& level = cluster.levels[l];
      const double single = level.group_bandwidth(r);
      const double peer = level.peer_bandwidth();
      const double rails = single * inner;
      links.alpha = first ? level.latency_s : std::max(links.alpha, level.latency_s);
      links.bandwidth_rails = first ? rails : std::min(links.bandwidth_rails, rails);
      links.bandwidth_single = first ? single : std::min(links.bandwidth_single, single);
      links.bandwidth_peer = first ? peer : std::min(links.bandwidth_peer, peer);
      links.spanned_levels += 1;
      first = false;
    }
    links.ranks *= r;
    inner *= r;
  }
  return links;
}

}  // namespace detail

CollectiveCost collective_time(const Cluster& cluster, Collective kind, const GroupShape& group, double bytes,
                               CollectiveAlgorithm algorithm) {
  check_group(cluster, group, bytes);
  const detail::FlatLinks links = detail::flat_links(cluster, group);
  if (links.ranks <= 1) {
    return {0.0, algorithm == CollectiveAlgorithm::automatic ? CollectiveAlgorithm::ring : algorithm};
  }
  switch (algorithm) {
    case CollectiveAlgorithm::ring:
    case CollectiveAlgorithm::tree: return {detail::flat_time(kind, algorithm, links, bytes), algorithm};
    case CollectiveAlgorithm::hierarchical: return {hierarchical_time(cluster, kind, group, bytes), algorithm};
    case CollectiveAlgorithm::automatic: break;
  }
  // The cheapest modelled algorithm; ties keep the earlier of ring, tree, hierarchical.
  CollectiveCost best{detail::flat_time(kind, CollectiveAlgorithm::ring, links, bytes), CollectiveAlgorithm::ring};
  if (kind == Collective::send_recv) return best;
  double tree = detail::flat_time(kind, CollectiveAlgorithm::tree, links, bytes);
  if (tree < best.seconds) best = {tree, CollectiveAlgorithm::tree};
  if (links.spanned_levels > 1) {
    double hierarchical = hierarchical_time(cluster, kind, group, bytes);
    if (hierarchical < best.seconds) best = {hierarchical, CollectiveAlgorithm::hierarchical};
  }
  return best;
}

}  // namespace symtensor::hardware
