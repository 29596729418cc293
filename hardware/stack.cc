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
#include "hardware/names.h"
#include "hardware/yaml_reader.h"

namespace symtensor::hardware {
namespace {

// `all`: every key required (a stack of its own); else only those that differ from its base.
void read_memory(YamlReader& r, const YAML::Node& node, StackMemory& m, bool all) {
  const std::string path = "memory";
  r.expect_map(node, path,
               {"weights", "master_weights", "gradients", "optimizer", "gradient_reduce", "weight_gather", "loss_per_logit",
                "low_precision_params", "low_precision_copies"});
  for (auto [key, value] : {std::pair{"weights", &m.weights}, std::pair{"gradients", &m.gradients},
                            std::pair{"optimizer", &m.optimizer}, std::pair{"gradient_reduce", &m.gradient_reduce},
                            std::pair{"weight_gather", &m.weight_gather}, std::pair{"loss_per_logit", &m.loss_per_logit}})
    if (all || node[key].IsDefined()) *value = r.positive(node, path, key);
  if (all || node["master_weights"].IsDefined()) m.master_weights = r.non_negative(node, path, "master_weights");
  if (const YAML::Node copies = node["low_precision_copies"]; copies.IsDefined()) {
    const std::string value = copies.IsScalar() ? copies.Scalar() : "";
    if (value != "kept" && value != "per_use") r.fail(copies, path + ".low_precision_copies", "expected kept or per_use");
    m.low_precision_copies_kept = value == "kept";
  }
  if (const YAML::Node list = node["low_precision_params"]; list.IsDefined()) {
    const std::string key = path + ".low_precision_params";
    if (!list.IsSequence()) r.fail(list, key, "expected a list of precisions (fp8, mxfp8, fp4)");
    m.low_precision_params.clear();
    for (const YAML::Node& item : list) {
      const auto p = item.IsScalar() ? parse_precision(item.Scalar()) : std::nullopt;
      if (!p || !is_low_precision(*p)) r.fail(item, key, "expected fp8, mxfp8 or fp4");
      m.low_precision_params.push_back(*p);
    }
  }
}

// `gpu: H100` or `gpu: [H100, H200]`.
std::vector<std::string> read_gpus(YamlReader& r, const YAML::Node& node, const std::string& path) {
  const YAML::Node value = r.required(node, path, "gpu");
  std::vector<std::string> gpus;
  if (value.IsScalar()) gpus.push_back(value.Scalar());
  else if (value.IsSequence())
    for (const YAML::Node& item : value) gpus.push_back(item.IsScalar() ? item.Scalar() : "");
  if (gpus.empty() || std::count(gpus.begin(), gpus.end(), "") > 0)
    r.fail(value, path + ".gpu", "must name GPUs (prefixes of profiles' device.name), one or a list");
  return gpus;
}

StackKernels read_kernels(YamlReader& r, const YAML::Node& node, std::size_t index) {
  const std::string path = fmt::format("kernels[{}]", index);
  r.expect_map(node, path, {"gpu", "gemm", "attention", "fp8_gemm", "fp4_gemm", "grouped_gemm", "source"});
  StackKernels k;
  k.gpus = read_gpus(r, node, path);
  for (auto [key, value] : {std::pair{"gemm", &k.gemm}, std::pair{"attention", &k.attention}, std::pair{"fp8_gemm", &k.fp8_gemm},
                             std::pair{"fp4_gemm", &k.fp4_gemm}, std::pair{"grouped_gemm", &k.grouped_gemm}})
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
  std::size_t best_length = 0;
  for (const StackKernels& k : kernels)
    for (const std::string& gpu : k.gpus)
      if (device_name.rfind(gpu, 0) == 0 && gpu.size() > best_length) best = &k, best_length = gpu.size();
  return best;
}

bool StackMemory::low_precision_params_for(Precision p) const {
  return std::find(low_precision_params.begin(), low_precision_params.end(), p) != low_precision_params.end();
}

Stack parse_stack(const std::string& yaml_text, const std::string& source) {
  YamlReader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  r.expect_map(root, "", {"name", "description", "base", "memory", "overlap", "kernels", "fusion", "recompute"});
  // `base: NAME`: the bundled stack this one runs on (the same kernels), with other memory.
  Stack stack;
  if (root["base"].IsDefined()) {
    const std::string base = r.string(root, "", "base");
    // A chain of bases is short; a longer one is a cycle (a stack naming itself).
    thread_local int depth = 0;
    if (depth >= 8) r.fail(root["base"], "base", fmt::format("'{}': the chain of bases does not end (a cycle?)", base));
    ++depth;
    try {
      stack = load_stack(base);
    } catch (const std::exception& e) {
      if (--depth > 0) throw;  // the outermost stack names the file
      r.fail(root["base"], "base", e.what());
    }
    --depth;
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
        for (const std::string& gpu : k.gpus)
          if (std::count(other.gpus.begin(), other.gpus.end(), gpu) > 0)
            r.fail(list[i]["gpu"], fmt::format("kernels[{}].gpu", i), fmt::format("'{}' is listed twice", gpu));
      stack.kernels.push_back(std::move(k));
    }
  }
  if (const YAML::Node fusion = root["fusion"]; fusion.IsDefined()) {
    r.expect_map(fusion, "fusion", {"elementwise"});
    if (const YAML::Node v = fusion["elementwise"]; v.IsDefined()) {
      if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) r.fail(v, "fusion.elementwise", "expected true or false");
      stack.fused_elementwise = v.Scalar() == "true";
    }
  }
  if (const YAML::Node recompute = root["recompute"]; recompute.IsDefined()) {
    r.expect_map(recompute, "recompute", {"selective"});
    if (const YAML::Node v = recompute["selective"]; v.IsDefined()) {
      if (!v.IsScalar() || (v.Scalar() != "attention_core" && v.Scalar() != "every_other_matmul"))
        r.fail(v, "recompute.selective", "expected attention_core or every_other_matmul");
      stack.selective_recompute =
          v.Scalar() == "every_other_matmul" ? SelectiveRecompute::every_other_matmul : SelectiveRecompute::attention_core;
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
  if (path.extension() != ".yaml") {  // a bundled name, whatever its case: Megatron is megatron
    const std::vector<std::string> bundled = list_stacks();
    const std::string name = name_in_any_case(name_or_path, bundled);
    if (name.empty()) {
      std::string known;
      for (const std::string& n : bundled) known += (known.empty() ? "" : ", ") + n;
      throw std::runtime_error(fmt::format("--stack: unknown stack '{}'{} (bundled: {}; or a path to a .yaml file)", name_or_path,
                                           did_you_mean(similar_names(name_or_path, bundled)), known));
    }
    path = std::filesystem::path(stack_directory()) / (name + ".yaml");
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
  for (DeviceGroup& g : cluster.groups) g.device.memory_headroom = software.memory_headroom;
  return cluster;
}

namespace {

void apply_kernels(Device& device, const Stack& stack) {
  if (const StackKernels* k = stack.kernels_for(device.name)) {
    for (EfficiencyPoint& p : device.efficiency) p.efficiency = std::min(1.0, p.efficiency * k->gemm);
    for (AttentionEfficiencyPoint& p : device.attention_efficiency) {
      p.forward = std::min(1.0, p.forward * k->attention);
      p.backward = std::min(1.0, p.backward * k->attention);
    }
    device.low_precision_gemm_factor = k->fp8_gemm;
    device.fp4_gemm_factor = k->fp4_gemm;
    device.grouped_gemm_factor = k->grouped_gemm;
  }
}

}  // namespace

Cluster apply_stack(Cluster cluster, const Stack& stack) {
  apply_kernels(cluster.device, stack);
  for (DeviceGroup& g : cluster.groups) apply_kernels(g.device, stack);
  cluster.stack = stack;
  return cluster;
}

}  // namespace symtensor::hardware
