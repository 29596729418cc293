#include "simulator/program/mesh_groups.h"

#include <algorithm>

namespace symtensor::sim {

int mesh_size(const MeshAxes& axes) {
  int n = 1;
  for (const auto& a : axes) n *= a.size;
  return n;
}

int axis_index(const MeshAxes& axes, const std::string& name) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == name) return static_cast<int>(i);
  return -1;
}

int coordinate(const hardware::MeshAxis& axis, int rank) { return (rank / axis.stride) % axis.size; }

std::vector<int> group_of(const MeshAxes& axes, int rank, std::span<const int> axis_ids) {
  int base = rank;
  for (int id : axis_ids) base -= coordinate(axes[id], rank) * axes[id].stride;
  std::vector<int> group{base};
  for (int id : axis_ids) {
    std::vector<int> next;
    next.reserve(group.size() * axes[id].size);
    for (int r : group)
      for (int c = 0; c < axes[id].size; ++c) next.push_back(r + c * axes[id].stride);
    group = std::move(next);
  }
  std::sort(group.begin(), group.end());
  return group;
}

hardware::GroupShape group_shape(const MeshAxes& axes, std::span<const int> axis_ids, int num_levels) {
  hardware::GroupShape shape;
  shape.ranks_per_level.assign(num_levels, 1);
  for (int id : axis_ids) axes[id].add_ranks(shape.ranks_per_level);
  return shape;
}

int link_level(const MeshAxes& axes, int a, int b) {
  int level = 0;
  for (const auto& axis : axes)
    if (coordinate(axis, a) != coordinate(axis, b))
      level = std::max(level, axis.level_between(coordinate(axis, a), coordinate(axis, b)));
  return level;
}

void assign_default_strides(MeshAxes& axes) {
  int stride = 1;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    it->stride = stride;
    stride *= it->size;
  }
}

}  // namespace symtensor::sim
