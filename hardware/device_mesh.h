#pragma once
// The device mesh derived from a cluster: named axes, each lying on one topology level.
// A level may be factored into several axes (8 GPUs of a node as 2x4); any device count.
// The last axis of a level may reach into the next inner level, as Megatron's rank order puts
// a pipeline of 8 stages on 4 racks: every rack holds two stages, each on half its GPUs.
#include <span>
#include <string>
#include <vector>

#include "hardware/cluster.h"

namespace symtensor::hardware {

struct MeshAxis {
  std::string name;  // e.g. "node", "gpu", or "gpu0"/"gpu1" when a level is factored
  int size = 1;
  int level = 0;     // index into Cluster::levels
  int stride = 1;    // rank distance between neighbours along this axis
  // When the axis reaches into level-1: how many of its consecutive coordinates share one
  // block of `level` (2 for 8 stages on 4 racks); 1 otherwise.
  int inner_part = 1;
  // The level where two coordinates of this axis differ (level, or level-1 inside a block).
  int level_between(int coordinate_a, int coordinate_b) const;
  // Adds this axis's ranks to a group's per-level counts.
  void add_ranks(std::vector<int>& ranks_per_level) const;
};

// How many ranks of a communication group sit at each topology level
// (index = level; 1 where the group does not span that level).
struct GroupShape {
  std::vector<int> ranks_per_level;
  int size() const;
  int outermost_level() const;  // highest level with more than one rank; 0 if size()==1
};

class DeviceMesh {
 public:
  // One axis per topology level, outermost first; ranks inside a node are contiguous.
  static DeviceMesh from_cluster(const Cluster& cluster);
  // Each level split into the given factors (outermost level first, each list's product
  // equal to that level's size).
  static DeviceMesh factored(const Cluster& cluster, const std::vector<std::vector<int>>& factors_per_level);

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int num_devices() const;
  int axis_index(const std::string& name) const;  // -1 when absent
  GroupShape group_shape(std::span<const int> axis_ids) const;
  // The ranks that differ from `rank` only in coordinates along `axis_ids`, ascending.
  std::vector<int> group_of(int rank, std::span<const int> axis_ids) const;

 private:
  std::vector<MeshAxis> axes_;  // outermost first
  int num_levels_ = 0;
};

}  // namespace symtensor::hardware
