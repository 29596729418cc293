// Ring: every member sends to its successor in each step.
// all-reduce 2(p-1) steps of S/p; all-gather / reduce-scatter p-1 steps of S/p;
// broadcast / reduce as a pipelined chain cut in p-1 chunks: p-1 steps of S/(p-1).
#include <stdexcept>

#include "simulator/collectives/phases.h"

namespace symtensor::sim {

namespace {
Phase ring_step(int p, double bytes) {
  Phase phase;
  phase.reserve(p);
  for (int i = 0; i < p; ++i) phase.push_back({i, (i + 1) % p, bytes});
  return phase;
}

Phase chain_step(int p, double bytes) {
  Phase phase;
  for (int i = 0; i + 1 < p; ++i) phase.push_back({i, i + 1, bytes});
  return phase;
}
}  // namespace

Phases ring_phases(hardware::Collective kind, int p, double bytes) {
  using C = hardware::Collective;
  if (p <= 1) return {};
  switch (kind) {
    case C::all_reduce: return Phases(2 * (p - 1), ring_step(p, bytes / p));
    case C::all_gather:
    case C::reduce_scatter: return Phases(p - 1, ring_step(p, bytes / p));
    case C::broadcast:
    case C::reduce: return Phases(p - 1, chain_step(p, bytes / (p - 1)));
    case C::all_to_all: return pairwise_all_to_all(p, bytes);
    case C::send_recv: return {{{0, 1, bytes}}};
  }
  throw std::logic_error("ring_phases: unknown collective");
}

Phases multi_ring_phases(hardware::Collective kind, const std::vector<int>& ranks, const MeshAxes& axes,
                         double bytes) {
  const int p = static_cast<int>(ranks.size());
  const NodeGroups nodes = node_groups(ranks, axes);
  const int g = nodes.g();
  if (nodes.inner.size() < 2 || g < 2 || !nodes.uniform) return ring_phases(kind, p, bytes);
  Phases out;
  for (int channel = 0; channel < g; ++channel) {
    std::vector<int> order;
    order.reserve(p);
    for (const auto& members : nodes.inner)
      for (int i = 0; i < g; ++i) order.push_back(members[(channel + i) % g]);
    merge_concurrent(out, remap(ring_phases(kind, p, bytes / g), order));
  }
  return out;
}

}  // namespace symtensor::sim
