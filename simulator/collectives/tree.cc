// Logarithmic algorithms. all-reduce: recursive halving reduce-scatter then recursive
// doubling all-gather (Rabenseifner), 2·log2(p) steps; all-gather: recursive doubling;
// reduce-scatter: recursive halving; broadcast / reduce: binomial tree of S from/to member 0.
// With p not a power of two, the p - p2 extra members first hand their data to a partner
// among the first p2 (and get the result back at the end), as MPICH does.
#include <algorithm>
#include <stdexcept>

#include "simulator/collectives/phases.h"

namespace symtensor::sim {

namespace {

int floor_pow2(int p) {
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  return p2;
}

Phase exchange(int p2, int distance, double bytes) {
  Phase phase;
  phase.reserve(p2);
  for (int i = 0; i < p2; ++i) phase.push_back({i, i ^ distance, bytes});
  return phase;
}

Phase fold(int p, int p2, double bytes, bool inward) {
  Phase phase;
  for (int i = p2; i < p; ++i) phase.push_back(inward ? Transfer{i, i - p2, bytes} : Transfer{i - p2, i, bytes});
  return phase;
}

Phases halving(int p2, double bytes) {  // reduce-scatter of S=bytes over p2 members
  Phases phases;
  for (int d = p2 / 2, k = 1; d >= 1; d /= 2, ++k) phases.push_back(exchange(p2, d, bytes / (1 << k)));
  return phases;
}

Phases doubling(int p2, double bytes) {  // all-gather of S=bytes over p2 members
  Phases phases;
  for (int d = 1; d < p2; d *= 2) phases.push_back(exchange(p2, d, bytes / p2 * d));
  return phases;
}

}  // namespace

Phases tree_phases(hardware::Collective kind, int p, double bytes) {
  using C = hardware::Collective;
  if (p <= 1) return {};
  int p2 = floor_pow2(p);
  bool extra = p2 != p;
  Phases phases;
  switch (kind) {
    case C::all_reduce: {
      if (extra) phases.push_back(fold(p, p2, bytes, true));
      Phases rs = halving(p2, bytes), ag = doubling(p2, bytes);
      phases.insert(phases.end(), rs.begin(), rs.end());
      phases.insert(phases.end(), ag.begin(), ag.end());
      if (extra) phases.push_back(fold(p, p2, bytes, false));
      return phases;
    }
    case C::all_gather: {
      if (extra) phases.push_back(fold(p, p2, bytes / p, true));
      Phases ag = doubling(p2, bytes);
      phases.insert(phases.end(), ag.begin(), ag.end());
      if (extra) phases.push_back(fold(p, p2, bytes, false));
      return phases;
    }
    case C::reduce_scatter: {
      if (extra) phases.push_back(fold(p, p2, bytes, true));
      Phases rs = halving(p2, bytes);
      phases.insert(phases.end(), rs.begin(), rs.end());
      if (extra) phases.push_back(fold(p, p2, bytes / p, false));
      return phases;
    }
    case C::broadcast:
    case C::reduce: {
      for (int span = 1; span < p; span *= 2) {
        Phase phase;
        for (int i = 0; i < span && i + span < p; ++i)
          phase.push_back(kind == C::broadcast ? Transfer{i, i + span, bytes} : Transfer{i + span, i, bytes});
        phases.push_back(std::move(phase));
      }
      if (kind == C::reduce) std::reverse(phases.begin(), phases.end());
      return phases;
    }
    case C::all_to_all: return pairwise_all_to_all(p, bytes);
    case C::send_recv: return {{{0, 1, bytes}}};
  }
  throw std::logic_error("tree_phases: unknown collective");
}

}  // namespace symtensor::sim
