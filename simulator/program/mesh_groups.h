#pragma once
// Rank arithmetic on a program's mesh axes (outermost first, each with a stride):
// coordinates, communication groups and the topology level that joins two ranks.
#include <span>
#include <string>
#include <vector>

#include "hardware/device_mesh.h"

namespace symtensor::sim {

using MeshAxes = std::vector<hardware::MeshAxis>;

int mesh_size(const MeshAxes& axes);
int axis_index(const MeshAxes& axes, const std::string& name);  // -1 when absent
int coordinate(const hardware::MeshAxis& axis, int rank);
// Ranks that differ from `rank` only along `axis_ids`, ascending.
std::vector<int> group_of(const MeshAxes& axes, int rank, std::span<const int> axis_ids);
// Ranks per topology level for a group spanning `axis_ids` (index = level).
hardware::GroupShape group_shape(const MeshAxes& axes, std::span<const int> axis_ids, int num_levels);
// Outermost level on which two ranks' coordinates differ; 0 when they are equal.
int link_level(const MeshAxes& axes, int a, int b);
// Row-major strides (last axis innermost) for axes given without them.
void assign_default_strides(MeshAxes& axes);

}  // namespace symtensor::sim
