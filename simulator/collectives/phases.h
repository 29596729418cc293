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

// One file per algorithm. `p` members, S = `bytes` as nccl-tests defines it.
Phases ring_phases(hardware::Collective kind, int p, double bytes);
Phases tree_phases(hardware::Collective kind, int p, double bytes);      // recursive halving/doubling, binomial
Phases pairwise_all_to_all(int p, double bytes);
// Two levels: inside each inner group (same outer coordinates), then across them.
Phases hierarchical_phases(hardware::Collective kind, const std::vector<int>& ranks, const MeshAxes& axes,
                           double bytes);

// Dispatch on the (already resolved, never automatic) algorithm.
Phases expand_collective(hardware::Collective kind, hardware::CollectiveAlgorithm algorithm,
                         const std::vector<int>& ranks, const MeshAxes& axes, double bytes);

}  // namespace symtensor::sim
