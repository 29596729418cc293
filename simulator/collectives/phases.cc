#include "simulator/collectives/phases.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::sim {

void merge_concurrent(Phases& into, const Phases& more) {
  if (into.size() < more.size()) into.resize(more.size());
  for (size_t k = 0; k < more.size(); ++k) into[k].insert(into[k].end(), more[k].begin(), more[k].end());
}

NodeGroups node_groups(const std::vector<int>& ranks, const MeshAxes& axes) {
  int outer_level = 0;
  for (int r : ranks) outer_level = std::max(outer_level, link_level(axes, ranks.front(), r));
  // Key of a member's node: its coordinates on the axes of the outermost level.
  std::map<std::vector<int>, std::vector<int>> by_key;
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    std::vector<int> key;
    if (outer_level > 0)
      for (const auto& a : axes)  // an axis reaching into the outer level's blocks counts by block
        if (a.level >= outer_level) key.push_back(a.level == outer_level ? coordinate(a, ranks[i]) / a.inner_part : coordinate(a, ranks[i]));
    by_key[key].push_back(i);
  }
  NodeGroups out;
  for (auto& [key, members] : by_key) out.inner.push_back(std::move(members));
  for (const auto& members : out.inner) out.uniform = out.uniform && members.size() == out.inner.front().size();
  return out;
}

Phases remap(const Phases& phases, const std::vector<int>& members) {
  Phases out = phases;
  for (auto& phase : out)
    for (auto& t : phase) {
      t.src = members[t.src];
      t.dst = members[t.dst];
    }
  return out;
}

Phases expand_collective(hardware::Collective kind, hardware::CollectiveAlgorithm algorithm,
                         const std::vector<int>& ranks, const MeshAxes& axes, double bytes) {
  int p = static_cast<int>(ranks.size());
  if (p <= 1) return {};
  if (kind == hardware::Collective::send_recv) {
    if (p != 2) throw std::runtime_error(fmt::format("send_recv collective needs a group of 2, got {}", p));
    return {{{0, 1, bytes}}};
  }
  if (kind == hardware::Collective::all_to_all) return pairwise_all_to_all(p, bytes);
  switch (algorithm) {
    case hardware::CollectiveAlgorithm::ring: return multi_ring_phases(kind, ranks, axes, bytes);
    case hardware::CollectiveAlgorithm::tree: return tree_phases(kind, p, bytes);
    case hardware::CollectiveAlgorithm::hierarchical: return hierarchical_phases(kind, ranks, axes, bytes);
    case hardware::CollectiveAlgorithm::automatic: break;
  }
  throw std::logic_error("expand_collective: algorithm must be resolved before expansion");
}

}  // namespace symtensor::sim
