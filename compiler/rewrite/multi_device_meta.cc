#include "compiler/rewrite/multi_device_meta.h"

#include <map>

namespace symtensor::compiler {

nlohmann::json sharding_spec_json(const std::string& tensor_name, const TensorSharding& sharding,
                                  const std::vector<std::int64_t>& global_shape, const hardware::DeviceMesh& mesh,
                                  const std::vector<int>& ranks) {
  const auto& axes = mesh.axes();
  const auto coordinate = [&](int rank, int a) { return (rank / axes[a].stride) % axes[a].size; };
  nlohmann::json sharded_dims = nlohmann::json::array();
  std::vector<int> shards_per_dim(sharding.dim_axes.size(), 1);
  for (std::size_t d = 0; d < sharding.dim_axes.size(); ++d) {
    for (int a : sharding.dim_axes[d]) shards_per_dim[d] *= axes[a].size;
    if (shards_per_dim[d] == 1) continue;
    nlohmann::json simple{{"num_shards", shards_per_dim[d]}};
    if (d < global_shape.size()) simple["dim_value"] = global_shape[d];
    sharded_dims.push_back({{"axis", d}, {"simple_sharding", nlohmann::json::array({simple})}});
  }
  // The shard each rank holds: per dim its piece (mixed radix over the dim's axes, major
  // first), row-major over the dims.
  std::map<long long, std::vector<int>> groups;
  for (int r : ranks) {
    long long shard = 0;
    for (std::size_t d = 0; d < sharding.dim_axes.size(); ++d) {
      long long piece = 0;
      for (int a : sharding.dim_axes[d]) piece = piece * axes[a].size + coordinate(r, a);
      shard = shard * shards_per_dim[d] + piece;
    }
    groups[shard].push_back(r);
  }
  nlohmann::json device = nlohmann::json::array(), map = nlohmann::json::array();
  for (const auto& [shard, members] : groups) {
    const long long id = -(shard + 1);
    device.push_back(id);
    map.push_back({{"key", id}, {"value", members}});
  }
  nlohmann::json partial = nlohmann::json::array();
  for (int a : sharding.partial_axes) partial.push_back(axes[a].name);
  return {{"tensor_name", tensor_name},          {"device", device},
          {"index_to_device_group_map", map},    {"sharded_dim", sharded_dims},
          {"symtensor_partial_axes", partial},   {"symtensor_sharding", to_string(sharding, mesh)}};
}

nlohmann::json multi_device_json(const hardware::DeviceMesh& mesh, int stage, nlohmann::json sharding_specs) {
  nlohmann::json devices = nlohmann::json::array();
  for (int r = 0; r < mesh.num_devices(); ++r) devices.push_back(std::to_string(r));
  return {{"configuration", {{"name", "symtensor_mesh"}, {"num_devices", mesh.num_devices()}, {"device", devices}}},
          {"node_device_configuration",
           {{"configuration_id", "symtensor_mesh"}, {"pipeline_stage", stage}, {"sharding_spec", std::move(sharding_specs)}}}};
}

}  // namespace symtensor::compiler
