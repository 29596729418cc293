#pragma once
// What is left of a cluster after nodes fail (issue #32, `compile --without 1 node`,
// `sweep --fail-nodes 0..k`): the same profile with fewer nodes, or a mixed fleet with fewer
// nodes in one of its groups.
#include <string>

#include "hardware/cluster.h"

namespace symtensor::hardware {

// Nodes of `cluster` (the outermost level's size; a fleet: the sum over its groups; 1 for a
// cluster of a single topology level).
int node_count(const Cluster& cluster);

// The group of a fleet that loses nodes when none is named: the one with the most nodes
// (the first of those tied). -1 for a cluster of one type.
int group_losing_nodes(const Cluster& cluster);

// `cluster` without `lost` nodes (0: unchanged). On a mixed fleet they are taken from the group
// whose profile is `group` (case-insensitive), else from group_losing_nodes; a group left with
// no node is dropped, and a fleet left with one group is that group's cluster (group_cluster).
// The links the fleet states between the groups kept are kept. Throws a one-line error (no
// flag named: the caller prefixes it) when `lost` is negative, not fewer than the nodes there
// are (at least one must remain), or `group` names no group of the fleet.
Cluster without_nodes(const Cluster& cluster, int lost, const std::string& group = "");

}  // namespace symtensor::hardware
