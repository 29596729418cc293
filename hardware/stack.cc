// Loads and validates software stacks (schema: hardware/stacks/README.md), and applies one to
// a cluster.
#include "hardware/stack.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hardware/cluster.h"
#include "hardware/yaml_reader.h"

namespace symtensor::hardware {
namespace {

// `all`: every key required (a stack of its own); else only those that differ from its base.
void read_memory(YamlReader& r, const YAML::Node& node, StackMemory& m, bool all) {
  const std::string path = "memory";
  r.expect_map(node, path,
               {"weights", "master_weights", "gradients", "optimizer", "gradient_reduce", "weight_gather", "loss_per_logit"});
  for (auto [key, value] : {std::pair{"weights", &m.weights}, std::pair{"gradients", &m.gradients},
                            std::pair{"optimizer", &m.optimizer}, std::pair{"gradient_reduce", &m.gradient_reduce},
                            std::pair{"weight_gather", &m.weight_gather}, std::pair{"loss_per_logit", &m.loss_per_logit}})
    if (all || node[key].IsDefined()) *value = r.positive(node, path, key);
  if (all || node["master_weights"].IsDefined()) m.master_weights = r.non_negative(node, path, "master_weights");
}

StackKernels read_kernels(YamlReader& r, const YAML::Node& node, std::size_t index) {
  const std::string path = fmt::format("kernels[{}]", index);
  r.expect_map(node, path, {"gpu", "gemm", "attention", "fp8_gemm", "source"});
  StackKernels k;
  k.gpu = r.string(node, path, "gpu");
  if (k.gpu.empty()) r.fail(node["gpu"], path + ".gpu", "must name a GPU (a prefix of a profile's device.name)");
  for (auto [key, value] : {std::pair{"gemm", &k.gemm}, std::pair{"attention", &k.attention}, std::pair{"fp8_gemm", &k.fp8_gemm}})
    if (node[key].IsDefined()) {
      *value = r.positive(node, path, key);
      if (*value > 2) r.fail(node[key], path + "." + key, fmt::format("a factor of {} is implausible (at most 2)", *value));
    }
  k.source = r.string(node, path, "source");
  return k;
}

}  // namespace

const StackKernels* Stack::kernels_for(const std::string& device_name) const {
  const StackKernels* best = nullptr;
  for (const StackKernels& k : kernels)
    if (device_name.rfind(k.gpu, 0) == 0 && (!best || k.gpu.size() > best->gpu.size())) best = &k;
  return best;
}

Stack parse_stack(const std::string& yaml_text, const std::string& source) {
  YamlReader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  r.expect_map(root, "", {"name", "description", "base", "memory", "overlap", "kernels"});
  // `base: NAME`: the bundled stack this one runs on (the same kernels), with other memory.
  Stack stack;
  if (root["base"].IsDefined()) {
    const std::string base = r.string(root, "", "base");
    try {
      stack = load_stack(base);
    } catch (const std::exception& e) {
      r.fail(root["base"], "base", e.what());
    }
  }
  const bool own = !root["base"].IsDefined();
  stack.source = source;
  stack.name = r.string(root, "", "name");
  if (root["description"].IsDefined()) stack.description = r.string(root, "", "description");
  if (own) read_memory(r, r.required(root, "", "memory"), stack.memory, true);
  else if (root["memory"].IsDefined()) read_memory(r, root["memory"], stack.memory, false);
  if (root["kernels"].IsDefined()) {
    if (!own) r.fail(root["kernels"], "kernels", "a stack with a base runs its base's kernels");
    const YAML::Node list = root["kernels"];
    if (!list.IsSequence()) r.fail(list, "kernels", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      StackKernels k = read_kernels(r, list[i], i);
      for (const StackKernels& other : stack.kernels)
        if (other.gpu == k.gpu) r.fail(list[i]["gpu"], fmt::format("kernels[{}].gpu", i), fmt::format("'{}' is listed twice", k.gpu));
      stack.kernels.push_back(std::move(k));
    }
  }
  if (const YAML::Node overlap = root["overlap"]; overlap.IsDefined()) {
    r.expect_map(overlap, "overlap", {"tp_comm"});
    if (overlap["tp_comm"].IsDefined()) {
      const YAML::Node v = overlap["tp_comm"];
      if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) r.fail(v, "overlap.tp_comm", "expected true or false");
      stack.overlap_tp_comm = v.Scalar() == "true";
    }
  }
  return stack;
}

std::string stack_directory() { return SYMTENSOR_STACK_DIR; }

std::vector<std::string> list_stacks() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(stack_directory()))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Stack load_stack(const std::string& name_or_path) {
  std::filesystem::path path = name_or_path;
  if (path.extension() != ".yaml") {
    path = std::filesystem::path(stack_directory()) / (name_or_path + ".yaml");
    if (!std::filesystem::exists(path)) {
      std::string known;
      for (const std::string& n : list_stacks()) known += (known.empty() ? "" : ", ") + n;
      throw std::runtime_error(fmt::format("--stack: unknown stack '{}' (bundled: {}; or a path to a .yaml file)", name_or_path, known));
    }
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read the stack file", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return parse_stack(text.str(), path.string());
}

Cluster with_software(Cluster cluster, const Software& software) {
  if (!(software.memory_headroom >= 0 && software.memory_headroom <= 0.5))
    throw std::runtime_error(fmt::format("--memory-headroom: {} is not a fraction between 0 and 0.5", software.memory_headroom));
  cluster = apply_stack(std::move(cluster), load_stack(software.stack));
  cluster.device.memory_headroom = software.memory_headroom;
  return cluster;
}

Cluster apply_stack(Cluster cluster, const Stack& stack) {
  if (const StackKernels* k = stack.kernels_for(cluster.device.name)) {
    for (EfficiencyPoint& p : cluster.device.efficiency) p.efficiency = std::min(1.0, p.efficiency * k->gemm);
    for (AttentionEfficiencyPoint& p : cluster.device.attention_efficiency) {
      p.forward = std::min(1.0, p.forward * k->attention);
      p.backward = std::min(1.0, p.backward * k->attention);
    }
    cluster.device.low_precision_gemm_factor = k->fp8_gemm;
  }
  cluster.stack = stack;
  return cluster;
}

}  // namespace symtensor::hardware
