#include "hardware/device_mesh.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::hardware {

int GroupShape::size() const {
  int n = 1;
  for (int r : ranks_per_level) n *= r;
  return n;
}

int GroupShape::outermost_level() const {
  for (int l = static_cast<int>(ranks_per_level.size()) - 1; l >= 0; --l) {
    if (ranks_per_level[l] > 1) return l;
  }
  return 0;
}

int MeshAxis::level_between(int coordinate_a, int coordinate_b) const {
  return inner_part > 1 && coordinate_a / inner_part == coordinate_b / inner_part ? level - 1 : level;
}

void MeshAxis::add_ranks(std::vector<int>& ranks_per_level) const {
  ranks_per_level.at(level) *= size / inner_part;
  if (inner_part > 1) ranks_per_level.at(level - 1) *= inner_part;
}

DeviceMesh DeviceMesh::from_cluster(const Cluster& cluster) {
  std::vector<std::vector<int>> factors;
  for (auto it = cluster.levels.rbegin(); it != cluster.levels.rend(); ++it) factors.push_back({it->size});
  return factored(cluster, factors);
}

DeviceMesh DeviceMesh::factored(const Cluster& cluster, const std::vector<std::vector<int>>& factors_per_level) {
  const int num_levels = static_cast<int>(cluster.levels.size());
  if (static_cast<int>(factors_per_level.size()) != num_levels) {
    throw std::runtime_error(fmt::format("mesh of '{}': {} factor lists given for {} topology levels", cluster.name,
                                            factors_per_level.size(), num_levels));
  }
  DeviceMesh mesh;
  mesh.num_levels_ = num_levels;
  int borrowed = 1;  // ranks of this level taken by the outer level's last axis
  for (int i = 0; i < num_levels; ++i) {
    const int level = num_levels - 1 - i;  // factor lists come outermost first
    const TopologyLevel& topology = cluster.levels[level];
    const std::vector<int>& factors = factors_per_level[i];
    if (factors.empty()) throw std::runtime_error(fmt::format("mesh: level '{}' has no factors", topology.name));
    long long product = 1;
    for (int f : factors) {
      if (f < 1) throw std::runtime_error(fmt::format("mesh: level '{}' has factor {} < 1", topology.name, f));
      product *= f;
    }
    const int available = topology.size / borrowed;
    int reach = 1;  // ranks the last axis takes from the next inner level
    if (topology.size % borrowed == 0 && product > available && level > 0 && product % available == 0) {
      reach = static_cast<int>(product / available);
      const long long others = product / factors.back();
      if (available % others != 0 || cluster.levels[level - 1].size % reach != 0) reach = 0;
    }
    if (topology.size % borrowed != 0 || reach == 0 || product != static_cast<long long>(available) * reach) {
      throw std::runtime_error(fmt::format("mesh: factors of level '{}' multiply to {}, not its size {}", topology.name,
                                           product, available));
    }
    for (std::size_t k = 0; k < factors.size(); ++k) {
      MeshAxis axis;
      axis.name = factors.size() == 1 ? topology.name : fmt::format("{}{}", topology.name, k);
      axis.size = factors[k];
      axis.level = level;
      if (k + 1 == factors.size()) axis.inner_part = reach;
      mesh.axes_.push_back(axis);
    }
    borrowed = reach;
  }
  int stride = 1;
  for (auto it = mesh.axes_.rbegin(); it != mesh.axes_.rend(); ++it) {
    it->stride = stride;
    stride *= it->size;
  }
  return mesh;
}

int DeviceMesh::num_devices() const {
  int n = 1;
  for (const MeshAxis& axis : axes_) n *= axis.size;
  return n;
}

int DeviceMesh::axis_index(const std::string& name) const {
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {
void check_axes(std::span<const int> axis_ids, std::size_t num_axes) {
  std::vector<bool> seen(num_axes, false);
  for (int id : axis_ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= num_axes) {
      throw std::runtime_error(fmt::format("mesh axis {} out of range (mesh has {} axes)", id, num_axes));
    }
    if (seen[id]) throw std::runtime_error(fmt::format("mesh axis {} listed twice in a group", id));
    seen[id] = true;
  }
}
}  // namespace

GroupShape DeviceMesh::group_shape(std::span<const int> axis_ids) const {
  check_axes(axis_ids, axes_.size());
  GroupShape shape;
  shape.ranks_per_level.assign(num_levels_, 1);
  for (int id : axis_ids) axes_[id].add_ranks(shape.ranks_per_level);
  return shape;
}

std::vector<int> DeviceMesh::group_of(int rank, std::span<const int> axis_ids) const {
  check_axes(axis_ids, axes_.size());
  if (rank < 0 || rank >= num_devices()) {
    throw std::runtime_error(fmt::format("rank {} out of range (mesh has {} devices)", rank, num_devices()));
  }
  // Zero the rank's coordinates along the group's axes, then enumerate every combination.
  int base = rank;
  for (int id : axis_ids) base -= ((rank / axes_[id].stride) % axes_[id].size) * axes_[id].stride;
  std::vector<int> group{base};
  for (int id : axis_ids) {
    std::vector<int> next;
    next.reserve(group.size() * axes_[id].size);
    for (int r : group) {
      for (int c = 0; c < axes_[id].size; ++c) next.push_back(r + c * axes_[id].stride);
    }
    group = std::move(next);
  }
  std::sort(group.begin(), group.end());
  return group;
}

}  // namespace symtensor::hardware
