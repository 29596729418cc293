#pragma once
// Internals of collectives.cc shared with the symbolic forms and the tests.
#include "hardware/collectives.h"

namespace symtensor::hardware::detail {

// A group seen as flat: its size, the largest alpha and the bandwidths of its links.
struct FlatLinks {
  int ranks = 1;
  int spanned_levels = 0;
  double alpha = 0;
  // B_l below is the level's bandwidth for the group's r_l ranks there (group_bandwidth: on a
  // mesh, r_l - 1 of its size - 1 links).
  double bandwidth_rails = 0;   // min over spanned levels of B_l x ranks inside level l
  double bandwidth_single = 0;  // min over spanned levels of B_l
  double bandwidth_peer = 0;    // min over spanned levels of one peer's bandwidth (one mesh link)
};

FlatLinks flat_links(const Cluster& cluster, const GroupShape& group);
int ceil_log2(int p);
// Time of a ring or tree algorithm (send_recv ignores the algorithm).
double flat_time(Collective kind, CollectiveAlgorithm algorithm, const FlatLinks& links, double bytes);

}  // namespace symtensor::hardware::detail
