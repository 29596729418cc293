#pragma once
// A collective expanded into phases of point-to-point transfers. Transfers of one phase
// run concurrently; a phase starts when the previous one has finished on every member.
// Members are indices into the group (ascending concrete ranks).
#include <vector>

#include "hardware/collectives.h"
#include "simulator/program/mesh_groups.h"

namespace symtensor::sim {

struct Transfer {
  int src = 0;  // member index
  int dst = 0;
  double bytes = 0;
};

using Phase = std::vector<Transfer>;
using Phases = std::vector<Phase>;

// Runs several sub-collectives side by side: phase k of the result holds phase k of each.
void merge_concurrent(Phases& into, const Phases& more);
// Renumbers a sub-group's transfers: member i of the sub-group is `members[i]` of the group.
Phases remap(const Phases& phases, const std::vector<int>& members);

// The members of a group split by its outermost topology level: `inner[k]` holds the
// member indices of one node (ascending), n = inner.size() nodes of g members each when
// `uniform`. A group inside one node has one inner group.
struct NodeGroups {
  std::vector<std::vector<int>> inner;
  bool uniform = true;
  int g() const { return inner.empty() ? 0 : static_cast<int>(inner.front().size()); }
};
NodeGroups node_groups(const std::vector<int>& ranks, const MeshAxes& axes);

// One file per algorithm. `p` members, S = `bytes` as nccl-tests defines it.
Phases ring_phases(hardware::Collective kind, int p, double bytes);
// A ring over several nodes as NCCL runs it: g rings (channels) side by side, each with S/g,
// the order inside every node rotated per ring so that each ring leaves a node through a
// different GPU, hence a different NIC. Falls back to one ring inside a node or when the
// nodes hold different numbers of members.
Phases multi_ring_phases(hardware::Collective kind, const std::vector<int>& ranks, const MeshAxes& axes,
                         double bytes);
Phases tree_phases(hardware::Collective kind, int p, double bytes);      // recursive halving/doubling, binomial
Phases pairwise_all_to_all(int p, double bytes);
// Two levels: inside each inner group (same outer coordinates), then across them.
Phases hierarchical_phases(hardware::Collective kind, const std::vector<int>& ranks, const MeshAxes& axes,
                           double bytes);

// Dispatch on the (already resolved, never automatic) algorithm.
Phases expand_collective(hardware::Collective kind, hardware::CollectiveAlgorithm algorithm,
                         const std::vector<int>& ranks, const MeshAxes& axes, double bytes);

}  // namespace symtensor::sim
