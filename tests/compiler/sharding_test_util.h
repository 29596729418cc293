#pragma once
// Meshes and shapes shared by the sharding tests.
#include "hardware/device_mesh.h"
#include "hardware/symbolic.h"

namespace symtensor::testing {

// 2 nodes x 4 GPUs: mesh axes node (id 0, size 2), gpu (id 1, size 4); NVLink-like GPU
// links, a slower network between the nodes.
inline hardware::DeviceMesh mesh_2x4() {
  hardware::Cluster c;
  c.name = "test-2x4";
  hardware::TopologyLevel gpu, node;
  gpu.name = "gpu";
  gpu.size = 4;
  gpu.bandwidth = 300e9;
  node.name = "node";
  node.size = 2;
  node.bandwidth = 25e9;
  c.levels = {gpu, node};
  return hardware::DeviceMesh::from_cluster(c);
}

inline GiNaC::ex num(long v) { return GiNaC::numeric(v); }

}  // namespace symtensor::testing
