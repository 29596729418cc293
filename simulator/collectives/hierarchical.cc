// Two-level collectives for a group spanning several topology levels. Inner groups are
// the members that share the coordinates of the group's outermost level (one node);
// outer groups are the members at the same position of every inner group.
// all-reduce: reduce-scatter inside (S), all-reduce across (S/g), all-gather inside (S):
//   2[(g-1)α1 + (g-1)/g·S/B1] + 2(n-1)α2 + 2(n-1)/n·(S/g)/B2 with ring steps.
// all-gather: across (S/g) then inside (S); reduce-scatter: inside (S) then across (S/g).
// Other collectives use the flat ring.
#include "simulator/collectives/phases.h"

namespace symtensor::sim {

Phases hierarchical_phases(hardware::Collective kind, const std::vector<int>& ranks, const MeshAxes& axes,
                           double bytes) {
  using C = hardware::Collective;
  const int p = static_cast<int>(ranks.size());
  const NodeGroups nodes = node_groups(ranks, axes);
  const int n = static_cast<int>(nodes.inner.size());
  const int g = nodes.g();
  if (n == 1 || g == 1 || !nodes.uniform ||
      (kind != C::all_reduce && kind != C::all_gather && kind != C::reduce_scatter))
    return ring_phases(kind, p, bytes);

  std::vector<std::vector<int>> outer_groups(g);
  for (const auto& members : nodes.inner)
    for (int j = 0; j < g; ++j) outer_groups[j].push_back(members[j]);

  auto inside = [&](C k, double s) {
    Phases out;
    for (const auto& members : nodes.inner) merge_concurrent(out, remap(ring_phases(k, g, s), members));
    return out;
  };
  auto across = [&](C k, double s) {
    Phases out;
    for (const auto& members : outer_groups) merge_concurrent(out, remap(ring_phases(k, n, s), members));
    return out;
  };
  Phases phases;
  auto append = [&](const Phases& more) { phases.insert(phases.end(), more.begin(), more.end()); };
  switch (kind) {
    case C::all_reduce:
      append(inside(C::reduce_scatter, bytes));
      append(across(C::all_reduce, bytes / g));
      append(inside(C::all_gather, bytes));
      break;
    case C::all_gather:
      append(across(C::all_gather, bytes / g));
      append(inside(C::all_gather, bytes));
      break;
    default:  // reduce_scatter
      append(inside(C::reduce_scatter, bytes));
      append(across(C::reduce_scatter, bytes / g));
      break;
  }
  return phases;
}

}  // namespace symtensor::sim
