#pragma once
// Analytic (alpha-beta) cost of collectives on a group of a cluster's devices, the one
// home of communication pricing shared by the compiler's cost model and the simulator.
// `bytes` is S as nccl-tests defines it: the full all-reduce buffer, the gathered
// all-gather output, the reduce-scatter input, the all-to-all buffer per rank.
#include <string_view>

#include "hardware/cluster.h"
#include "hardware/device_mesh.h"

namespace symtensor::hardware {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv };
enum class CollectiveAlgorithm { automatic, ring, tree, hierarchical };

std::string_view to_string(Collective c);
std::string_view to_string(CollectiveAlgorithm a);

struct CollectiveCost {
  double seconds = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;  // the one used (resolved from automatic)
};

CollectiveCost collective_time(const Cluster& cluster, Collective kind, const GroupShape& group,
                               double bytes, CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic);

// nccl-tests bus-bandwidth factor: 2(n-1)/n all-reduce, (n-1)/n gather/scatter/all-to-all, 1 else.
double bus_bandwidth_factor(Collective kind, int n);

}  // namespace symtensor::hardware
