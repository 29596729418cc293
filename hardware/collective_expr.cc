#include "hardware/collective_expr.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::hardware {

namespace {

bool is_real_number(const GiNaC::ex& e) { return GiNaC::is_a<GiNaC::numeric>(e) && GiNaC::ex_to<GiNaC::numeric>(e).is_real(); }

GiNaC::ex min_of_eval(const GiNaC::ex& a, const GiNaC::ex& b) {
  if (is_real_number(a) && is_real_number(b)) return GiNaC::ex_to<GiNaC::numeric>(b) < GiNaC::ex_to<GiNaC::numeric>(a) ? b : a;
  if (a.is_equal(b)) return a;
  return min_of(a, b).hold();
}
GiNaC::ex min_of_evalf(const GiNaC::ex& a, const GiNaC::ex& b) { return min_of_eval(a.evalf(), b.evalf()); }

GiNaC::ex max_of_eval(const GiNaC::ex& a, const GiNaC::ex& b) {
  if (is_real_number(a) && is_real_number(b)) return GiNaC::ex_to<GiNaC::numeric>(a) < GiNaC::ex_to<GiNaC::numeric>(b) ? b : a;
  if (a.is_equal(b)) return a;
  return max_of(a, b).hold();
}
GiNaC::ex max_of_evalf(const GiNaC::ex& a, const GiNaC::ex& b) { return max_of_eval(a.evalf(), b.evalf()); }

GiNaC::ex ceil_log2_eval(const GiNaC::ex& x) {
  if (!is_real_number(x)) return ceil_log2(x).hold();
  const GiNaC::numeric value = GiNaC::ex_to<GiNaC::numeric>(x);
  int k = 0;
  GiNaC::numeric power = 1;
  while (power < value) {
    power *= 2;
    ++k;
  }
  return k;
}
GiNaC::ex ceil_log2_evalf(const GiNaC::ex& x) { return ceil_log2_eval(x.evalf()); }

GiNaC::ex min_all(const std::vector<GiNaC::ex>& values) {
  GiNaC::ex result = values.front();
  for (std::size_t i = 1; i < values.size(); ++i) result = min_of(result, values[i]);
  return result;
}

// TopologyLevel::group_bandwidth: on a mesh the group's ranks - 1 of the level's links.
GiNaC::ex group_bandwidth(const LevelSymbols& level) {
  if (level.mesh_links.is_zero()) return level.bandwidth;
  return level.bandwidth * (level.ranks - 1) / level.mesh_links;
}
// TopologyLevel::peer_bandwidth: one link of a mesh.
GiNaC::ex peer_bandwidth(const LevelSymbols& level) {
  if (level.mesh_links.is_zero()) return level.bandwidth;
  return level.bandwidth / level.mesh_links;
}

GiNaC::ex flat_expr(Collective kind, CollectiveAlgorithm algorithm, const std::vector<LevelSymbols>& levels,
                    const GiNaC::ex& n) {
  GiNaC::ex p = 1;
  GiNaC::ex alpha = levels.front().latency;
  std::vector<GiNaC::ex> rails, singles, peers;
  for (const LevelSymbols& level : levels) {
    const GiNaC::ex single = group_bandwidth(level);
    rails.push_back(single * p);
    singles.push_back(single);
    peers.push_back(peer_bandwidth(level));
    p *= level.ranks;
    if (&level != &levels.front()) alpha = max_of(alpha, level.latency);
  }
  const GiNaC::ex br = min_all(rails);
  const GiNaC::ex bs = min_all(singles);
  const GiNaC::ex bp = min_all(peers);
  const GiNaC::ex f = (p - 1) / p;
  const GiNaC::ex k = ceil_log2(p);
  if (kind == Collective::send_recv) return alpha + n / bs;
  if (algorithm == CollectiveAlgorithm::ring) {
    switch (kind) {
      case Collective::all_reduce: return 2 * (p - 1) * alpha + 2 * f * n / br;
      case Collective::all_gather:
      case Collective::reduce_scatter: return (p - 1) * alpha + f * n / br;
      case Collective::all_to_all: return (p - 1) * alpha + f * n / bs;
      default: return (p - 1) * alpha + n / br;
    }
  }
  switch (kind) {  // tree: one partner per step, on its own link (collectives.cc)
    case Collective::all_reduce: return 2 * k * alpha + 2 * n / bp;
    case Collective::all_gather:
    case Collective::reduce_scatter: return k * alpha + f * n / bp;
    case Collective::all_to_all: return k * alpha + k * n / (2 * bp);
    default: return k * alpha + n / bp;
  }
}

GiNaC::ex hierarchical_expr(Collective kind, const std::vector<LevelSymbols>& levels, const GiNaC::ex& n) {
  if (kind == Collective::send_recv) return flat_expr(kind, CollectiveAlgorithm::ring, levels, n);
  GiNaC::ex total = 0;
  GiNaC::ex inner = 1;
  for (const LevelSymbols& level : levels) {
    const GiNaC::ex& r = level.ranks;
    const GiNaC::ex latency = (r - 1) * level.latency;
    const GiNaC::ex b = group_bandwidth(level);
    switch (kind) {
      case Collective::all_reduce: total += 2 * (latency + (r - 1) / r * (n / inner) / b); break;
      case Collective::all_gather:
      case Collective::reduce_scatter: total += latency + (r - 1) / r * (n / inner) / b; break;
      case Collective::all_to_all: total += latency + (r - 1) / r * n / b; break;
      default: total += latency + n / b; break;
    }
    inner *= r;
  }
  return total;
}

std::string identifier(const std::string& text) {
  std::string out;
  for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

}  // namespace

REGISTER_FUNCTION(min_of, eval_func(min_of_eval).evalf_func(min_of_evalf))
REGISTER_FUNCTION(max_of, eval_func(max_of_eval).evalf_func(max_of_evalf))
REGISTER_FUNCTION(ceil_log2, eval_func(ceil_log2_eval).evalf_func(ceil_log2_evalf))

GiNaC::ex collective_time_expr(Collective kind, CollectiveAlgorithm algorithm, const std::vector<LevelSymbols>& levels,
                               const GiNaC::ex& bytes) {
  if (levels.empty()) return 0;
  switch (algorithm) {
    case CollectiveAlgorithm::ring:
    case CollectiveAlgorithm::tree: return flat_expr(kind, algorithm, levels, bytes);
    case CollectiveAlgorithm::hierarchical: return hierarchical_expr(kind, levels, bytes);
    case CollectiveAlgorithm::automatic: break;
  }
  GiNaC::ex ring = flat_expr(kind, CollectiveAlgorithm::ring, levels, bytes);
  if (kind == Collective::send_recv) return ring;
  GiNaC::ex best = min_of(ring, flat_expr(kind, CollectiveAlgorithm::tree, levels, bytes));
  if (levels.size() > 1) best = min_of(best, hierarchical_expr(kind, levels, bytes));
  return best;
}

std::vector<LevelSymbols> make_level_symbols(const Cluster& cluster) {
  std::vector<LevelSymbols> result;
  for (const TopologyLevel& level : cluster.levels) {
    std::string name = identifier(level.name);
    result.push_back({GiNaC::symbol("p_" + name), GiNaC::symbol("B_" + name, "B_{" + name + "}"),
                      GiNaC::symbol("alpha_" + name, "\\alpha_{" + name + "}"), level.mesh_links()});
  }
  return result;
}

std::vector<LevelSymbols> spanned_levels(const std::vector<LevelSymbols>& all, const GroupShape& group) {
  if (all.size() != group.ranks_per_level.size()) {
    throw std::runtime_error(fmt::format("spanned_levels: {} level symbols for a group over {} levels", all.size(),
                                         group.ranks_per_level.size()));
  }
  std::vector<LevelSymbols> result;
  for (std::size_t l = 0; l < all.size(); ++l) {
    if (group.ranks_per_level[l] > 1) result.push_back(all[l]);
  }
  return result;
}

GiNaC::exmap level_values(const Cluster& cluster, const std::vector<LevelSymbols>& all, const GroupShape& group) {
  if (all.size() != cluster.levels.size() || group.ranks_per_level.size() != cluster.levels.size()) {
    throw std::runtime_error(fmt::format("level_values: cluster '{}' has {} levels; got {} symbols, group over {}",
                                         cluster.name, cluster.levels.size(), all.size(), group.ranks_per_level.size()));
  }
  GiNaC::exmap values;
  for (std::size_t l = 0; l < all.size(); ++l) {
    if (GiNaC::is_a<GiNaC::symbol>(all[l].ranks)) values[all[l].ranks] = group.ranks_per_level[l];
    if (GiNaC::is_a<GiNaC::symbol>(all[l].bandwidth)) values[all[l].bandwidth] = GiNaC::numeric(cluster.levels[l].bandwidth);
    if (GiNaC::is_a<GiNaC::symbol>(all[l].latency)) values[all[l].latency] = GiNaC::numeric(cluster.levels[l].latency_s);
  }
  return values;
}

double evaluate_seconds(const GiNaC::ex& expression, const GiNaC::exmap& values) {
  GiNaC::ex result = expression.subs(values).evalf();
  if (!is_real_number(result)) {
    std::ostringstream text;
    text << result;
    throw std::runtime_error("collective cost still has free symbols after substitution: " + text.str());
  }
  return GiNaC::ex_to<GiNaC::numeric>(result).to_double();
}

}  // namespace symtensor::hardware
