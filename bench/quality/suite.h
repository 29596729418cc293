#pragma once
// The strategy-quality suite: workloads (a zoo model, a cluster, dim bindings) read from
// bench/quality/suite.yaml. Format documented at the top of that file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnx_models/presets.h"

namespace symtensor::quality {

struct Workload {
  std::string name;
  std::string note;                       // what the workload stands for
  std::string preset;                     // zoo preset, e.g. "llama2-7b"
  models::Overrides overrides;            // changed model fields
  std::string cluster;                    // bundled profile name or .yaml path
  std::optional<int> nodes, gpus;         // scale_cluster arguments
  // The software stack's memory conventions and kernel factors (hardware/stacks/), with its
  // default headroom, as `symtensor --stack` applies them; unset: the profiles' own curves,
  // the default stack's memory conventions and no headroom (the homogeneous suite's baseline).
  std::optional<std::string> stack;
  std::map<std::string, std::int64_t> bind;  // batch (global), seq, ...
  // The workload's own columns (empty: the suite's) and the one its ratios divide by
  // ("megatron" unless given; "megatron-mimo" for a vision-language model).
  std::vector<std::string> strategies;
  std::string baseline = "megatron";
};

struct Suite {
  std::vector<std::string> strategies;  // in column order; the ratio column divides by "megatron"
  std::vector<Workload> workloads;
};

// Throws std::runtime_error "FILE: workload N (name): key 'k': problem".
Suite load_suite(const std::string& path);

// "batch=64,seq=2048" (keys sorted).
std::string bind_text(const Workload& w);

}  // namespace symtensor::quality
