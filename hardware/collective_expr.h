#pragma once
// Collective costs as GiNaC expressions, for formulas in mesh sizes and hardware constants.
// They are the same model as collective_time() (collectives.cc), term for term:
//
// Flat view of a group over levels l (innermost first) with r_l ranks, B_l, alpha_l, where
// on a mesh level of m_l = size - 1 links B_l is the group's share B * (r_l - 1)/m_l of the
// GPU's egress B and a single peer gets one link, P_l = B/m_l (P_l = B_l elsewhere):
//   p = prod r_l,  a = max alpha_l,  Bs = min B_l,  Br = min_l B_l * prod_{j<l} r_j,
//   Bp = min P_l,  f = (p-1)/p,   k = ceil_log2(p)
//                   ring                        tree
//   all_reduce      2(p-1)a + 2f N/Br           2k a + 2N/Bp
//   all_gather,
//   reduce_scatter  (p-1)a + f N/Br             k a + f N/Bp
//   all_to_all      (p-1)a + f N/Bs             k a + k N/(2 Bp)
//   broadcast,
//   reduce          (p-1)a + N/Br               k a + N/Bp
//   send_recv       a + N/Bs (every algorithm)
// Hierarchical, with N_l = N / prod_{j<l} r_j:
//   all_gather, reduce_scatter: sum_l (r_l-1)alpha_l + (r_l-1)/r_l N_l/B_l
//   all_reduce: twice that;  all_to_all: sum_l (r_l-1)alpha_l + (r_l-1)/r_l N/B_l
//   broadcast, reduce: sum_l (r_l-1)alpha_l + N/B_l
// Automatic: min_of over ring, tree and (two or more levels) hierarchical.
//
// min_of, max_of and ceil_log2 are GiNaC functions that evaluate once their arguments
// are numbers. Include this header only where GiNaC is wanted (it is heavy).
#include <vector>

#include "hardware/collectives.h"
#include "hardware/symbolic.h"

namespace symtensor::hardware {

DECLARE_FUNCTION_2P(min_of)
DECLARE_FUNCTION_2P(max_of)
DECLARE_FUNCTION_1P(ceil_log2)

// One topology level the group spans: its ranks in the group, per-GPU bandwidth per
// direction (bytes/s) and latency (s). Any of them may be a symbol or a number.
// `mesh_links`: on a mesh level, the GPU's point-to-point links there (TopologyLevel::
// mesh_links(), size - 1) and `bandwidth` their total egress; 0 elsewhere.
struct LevelSymbols {
  GiNaC::ex ranks;
  GiNaC::ex bandwidth;
  GiNaC::ex latency;
  GiNaC::ex mesh_links = 0;
};

// `levels`: the levels the group spans, innermost first (levels where the group has one
// rank left out, as collective_time() does). Automatic gives the min_of the algorithms.
GiNaC::ex collective_time_expr(Collective kind, CollectiveAlgorithm algorithm, const std::vector<LevelSymbols>& levels,
                               const GiNaC::ex& bytes);

// Symbols for every level of the cluster, innermost first: p_<level>, B_<level>, alpha_<level>.
std::vector<LevelSymbols> make_level_symbols(const Cluster& cluster);
// The entries of `all` (one per cluster level) for the levels where `group` has > 1 rank.
std::vector<LevelSymbols> spanned_levels(const std::vector<LevelSymbols>& all, const GroupShape& group);
// Numbers for the symbols in `all`: bandwidth and latency from the cluster, ranks from `group`.
GiNaC::exmap level_values(const Cluster& cluster, const std::vector<LevelSymbols>& all, const GroupShape& group);
// Substitutes and evaluates to a double; throws std::runtime_error if symbols remain.
double evaluate_seconds(const GiNaC::ex& expression, const GiNaC::exmap& values);

}  // namespace symtensor::hardware
