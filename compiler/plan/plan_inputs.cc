#include "compiler/plan/plan_inputs.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/plan/sha256.h"

namespace symtensor::compiler {
namespace {

std::string absolute_if_yaml(const std::string& text) {
  if (text.ends_with(".yaml") || text.ends_with(".yml")) return std::filesystem::absolute(text).lexically_normal().string();
  return text;
}

[[noreturn]] void inputs_fail(const std::string& source, const YAML::Node& node, const std::string& key, const std::string& problem) {
  const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  throw std::runtime_error(fmt::format("{}:{}: key 'inputs.{}': {}", source, line, key, problem));
}

template <typename T>
std::optional<T> inputs_scalar(const std::string& source, const YAML::Node& map, const std::string& key) {
  const YAML::Node v = map[key];
  if (!v.IsDefined()) return std::nullopt;
  try {
    if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "not a scalar");
    return v.as<T>();
  } catch (const YAML::Exception&) {
    inputs_fail(source, v, key, "not a valid value");
  }
}

void inputs_only_keys(const std::string& source, const YAML::Node& map, const std::string& where, const std::set<std::string>& known) {
  if (!map.IsMap()) inputs_fail(source, map, where, "expected a mapping");
  for (const auto& kv : map)
    if (!known.count(kv.first.as<std::string>()))
      inputs_fail(source, kv.first, (where.empty() ? "" : where + ".") + kv.first.as<std::string>(), "unknown key");
}

}  // namespace

PlanInputs make_plan_inputs(PlanInputs given) {
  given.model = std::filesystem::absolute(given.model).lexically_normal().string();
  given.model_sha256 = sha256_file(given.model);
  given.cluster = absolute_if_yaml(given.cluster);
  given.stack = absolute_if_yaml(given.stack);
  return given;
}

void emit_plan_inputs(YAML::Emitter& out, const PlanInputs& in) {
  out << YAML::Key << "inputs" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << in.model;
  out << YAML::Key << "model_sha256" << YAML::Value << in.model_sha256;
  out << YAML::Key << "cluster" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "profile" << YAML::Value
      << in.cluster;
  if (in.nodes) out << YAML::Key << "nodes" << YAML::Value << *in.nodes;
  if (in.gpus) out << YAML::Key << "gpus" << YAML::Value << *in.gpus;
  out << YAML::Key << "devices" << YAML::Value << in.devices << YAML::EndMap;
  out << YAML::Key << "stack" << YAML::Value << in.stack;
  out << YAML::Key << "memory_headroom" << YAML::Value << fmt::format("{}", in.memory_headroom);
  for (const auto& [key, value] : {std::pair{"bind", &in.bind}, std::pair{"attention", &in.attention},
                                   std::pair{"batch_dim", &in.batch_dim}, std::pair{"seq_dim", &in.seq_dim}})
    if (!value->empty()) out << YAML::Key << key << YAML::Value << *value;
  out << YAML::EndMap;
}

PlanInputs plan_inputs_from_yaml(const YAML::Node& node, const std::string& source) {
  inputs_only_keys(source, node, "", {"model", "model_sha256", "cluster", "stack", "memory_headroom", "bind", "attention", "batch_dim", "seq_dim"});
  PlanInputs in;
  in.model = inputs_scalar<std::string>(source, node, "model").value_or("");
  if (in.model.empty()) inputs_fail(source, node, "model", "missing");
  in.model_sha256 = inputs_scalar<std::string>(source, node, "model_sha256").value_or("");
  const YAML::Node cluster = node["cluster"];
  if (!cluster.IsDefined()) inputs_fail(source, node, "cluster", "missing");
  inputs_only_keys(source, cluster, "cluster", {"profile", "nodes", "gpus", "devices"});
  in.cluster = inputs_scalar<std::string>(source, cluster, "profile").value_or("");
  if (in.cluster.empty()) inputs_fail(source, cluster, "cluster.profile", "missing");
  in.nodes = inputs_scalar<int>(source, cluster, "nodes");
  in.gpus = inputs_scalar<int>(source, cluster, "gpus");
  in.devices = inputs_scalar<int>(source, cluster, "devices").value_or(0);
  in.stack = inputs_scalar<std::string>(source, node, "stack").value_or("megatron");
  in.memory_headroom = inputs_scalar<double>(source, node, "memory_headroom").value_or(0.05);
  in.bind = inputs_scalar<std::string>(source, node, "bind").value_or("");
  in.attention = inputs_scalar<std::string>(source, node, "attention").value_or("");
  in.batch_dim = inputs_scalar<std::string>(source, node, "batch_dim").value_or("");
  in.seq_dim = inputs_scalar<std::string>(source, node, "seq_dim").value_or("");
  return in;
}

std::optional<PlanInputs> read_plan_inputs(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::runtime_error(path + ": cannot read the plan file");
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap() || !root["inputs"].IsDefined()) return std::nullopt;
  return plan_inputs_from_yaml(root["inputs"], path);
}

}  // namespace symtensor::compiler
