#pragma once
// The sharding of a value in the field names of ONNX's multi-device messages (onnx.proto
// from ONNX 1.18, IR version 11: ShardingSpecProto, ShardedDimProto, SimpleShardedDimProto,
// NodeDeviceConfigurationProto), as JSON inside our metadata, so a tool on a newer ONNX can
// lift it into the real messages. Devices are global ranks. Each shard (row-major over the
// sharded dims) is a negative id in `device`, mapped by `index_to_device_group_map` to the
// ranks holding it (its replica group). ONNX has no pending-reduction state nor named mesh
// axes: `symtensor_partial_axes` and `symtensor_sharding` keep ours beside it.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/sharding/tensor_sharding.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

// `ranks`: the ranks over which the value lies (one pipeline stage's).
nlohmann::json sharding_spec_json(const std::string& tensor_name, const TensorSharding& sharding,
                                  const std::vector<std::int64_t>& global_shape, const hardware::DeviceMesh& mesh,
                                  const std::vector<int>& ranks);

// {"configuration": DeviceConfigurationProto, "node_device_configuration":
//  NodeDeviceConfigurationProto{configuration_id, pipeline_stage, sharding_spec[]}}.
nlohmann::json multi_device_json(const hardware::DeviceMesh& mesh, int stage, nlohmann::json sharding_specs);

}  // namespace symtensor::compiler
