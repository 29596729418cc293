#pragma once
// What `compile` was given, recorded in plan.yaml (key `inputs`) so that `export PLAN --to T`
// needs nothing else: the model file (absolute, with its SHA-256), the cluster as the
// command line chose it (profile, --nodes, --gpus), the software stack and headroom, and how
// the model was read (--bind, --attention, --batch-dim, --seq-dim).
//
//   inputs:
//     model: /data/llama.onnx
//     model_sha256: 3f2a...
//     cluster: {profile: dgx-h100, nodes: 4, gpus: 8, devices: 32}   # devices: for the reader
//     stack: megatron
//     memory_headroom: 0.05
//     bind: batch=512,seq=8192
//     attention: fused
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace symtensor::compiler {

struct PlanInputs {
  std::string model, model_sha256;
  std::string cluster;               // a profile name, NAMExN or an absolute .yaml path
  std::optional<int> nodes, gpus;    // as given; absent: the profile's own
  int devices = 0;
  std::string stack = "megatron";    // a stack name or an absolute .yaml path
  double memory_headroom = 0.05;
  std::string bind, attention, batch_dim, seq_dim;

  bool empty() const { return model.empty(); }
  friend bool operator==(const PlanInputs&, const PlanInputs&) = default;
};

// Paths made absolute (a profile or stack given as a .yaml file, the model), the model's
// checksum taken; throws naming the model when it cannot be read.
PlanInputs make_plan_inputs(PlanInputs given);

void emit_plan_inputs(YAML::Emitter& out, const PlanInputs& inputs);
// Errors: "SOURCE:LINE: key 'inputs.K': problem".
PlanInputs plan_inputs_from_yaml(const YAML::Node& node, const std::string& source);
// The `inputs` of the plan file at `path`, nullopt when it has none (plans written before
// they were recorded). Throws naming the file when it cannot be read or parsed.
std::optional<PlanInputs> read_plan_inputs(const std::string& path);

}  // namespace symtensor::compiler
