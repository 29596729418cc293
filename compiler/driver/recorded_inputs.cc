#include "compiler/driver/recorded_inputs.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/onnx_import/import.h"
#include "compiler/plan/sha256.h"
#include "hardware/cluster.h"

namespace symtensor::driver {
namespace {

// The given value wins; a notice when the plan recorded another.
template <typename T>
void take(bool given, T& value, const T& recorded, const std::string& option, const std::string& shown_given,
          const std::string& shown_recorded) {
  if (!given) {
    value = recorded;
    return;
  }
  if (value != recorded)
    std::cerr << fmt::format("symtensor: note: {} {} differs from the plan's {} (the command line wins)\n", option, shown_given,
                             shown_recorded);
}

// Whether two --cluster values name one profile: the same text, or the same file loaded
// ("DGX-H100", "dgx-h100x2" and a path to it are dgx-h100). A profile that no longer loads
// is another.
bool same_profile(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    std::error_code error;
    return std::filesystem::equivalent(hardware::load_cluster(a).source, hardware::load_cluster(b).source, error);
  } catch (const std::exception&) {
    return false;
  }
}

std::string shown(const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("(the profile's)"); }
std::string shown(const std::string& v) { return v.empty() ? std::string("(none)") : v; }

}  // namespace

compiler::PlanInputs recorded_inputs(const ModelChoice& model, const ClusterChoice& cluster, const hardware::Cluster& loaded) {
  compiler::PlanInputs in;
  in.model = model.path;
  in.cluster = cluster.profile;
  in.nodes = cluster.nodes, in.gpus = cluster.gpus;
  in.devices = loaded.num_devices();
  in.stack = cluster.software.stack;
  in.memory_headroom = cluster.software.memory_headroom;
  in.bind = model.bind, in.attention = model.attention, in.batch_dim = model.batch_dim, in.seq_dim = model.sequence_dim;
  return compiler::make_plan_inputs(in);
}

void merge_recorded_inputs(const std::string& plan_path, const GivenOptions& given, ModelChoice& model, ClusterChoice& cluster) {
  const std::optional<compiler::PlanInputs> recorded = compiler::read_plan_inputs(plan_path);
  if (!recorded) {
    if (given.model && given.cluster) return;
    throw std::runtime_error(plan_path + ": the plan records no inputs (written by an older symtensor): give --model and --cluster");
  }
  const compiler::PlanInputs& r = *recorded;
  if (given.model) {
    if (std::filesystem::absolute(model.path).lexically_normal().string() != r.model)
      std::cerr << fmt::format("symtensor: note: --model {} differs from the plan's {} (the command line wins)\n", model.path, r.model);
  } else {
    model.path = r.model;
    if (!std::filesystem::exists(r.model))
      throw std::runtime_error(fmt::format("{}: key 'inputs.model': {} no longer exists (give --model)", plan_path, r.model));
    if (!r.model_sha256.empty() && compiler::sha256_file(r.model) != r.model_sha256)
      throw std::runtime_error(fmt::format("{}: key 'inputs.model_sha256': {} has changed since the plan was made "
                                           "(give --model to export for it anyway)", plan_path, r.model));
  }
  if (!given.cluster || !same_profile(cluster.profile, r.cluster))
    take(given.cluster, cluster.profile, r.cluster, "--cluster", cluster.profile, r.cluster);
  take(given.nodes, cluster.nodes, r.nodes, "--nodes", shown(cluster.nodes), shown(r.nodes));
  take(given.gpus, cluster.gpus, r.gpus, "--gpus", shown(cluster.gpus), shown(r.gpus));
  take(given.stack, cluster.software.stack, r.stack, "--stack", cluster.software.stack, r.stack);
  take(given.headroom, cluster.software.memory_headroom, r.memory_headroom, "--memory-headroom",
       fmt::format("{}", cluster.software.memory_headroom), fmt::format("{}", r.memory_headroom));
  take(given.bind, model.bind, r.bind, "--bind", shown(model.bind), shown(r.bind));
  take(given.attention, model.attention, r.attention.empty() ? std::string("fused") : r.attention, "--attention",
       model.attention, r.attention.empty() ? std::string("fused") : r.attention);
  take(given.batch_dim, model.batch_dim, r.batch_dim, "--batch-dim", shown(model.batch_dim), shown(r.batch_dim));
  take(given.seq_dim, model.sequence_dim, r.seq_dim, "--seq-dim", shown(model.sequence_dim), shown(r.seq_dim));
}

GivenOptions given_software(const CLI::Option* stack, const CLI::Option* headroom, const CLI::Option* cluster) {
  GivenOptions g;
  g.stack = stack && stack->count() > 0;
  g.headroom = headroom && headroom->count() > 0;
  g.cluster = cluster && cluster->count() > 0;
  return g;
}

void take_recorded_software(const std::string& plan_path, const GivenOptions& given, ClusterChoice& cluster, ModelChoice& model) {
  const std::optional<compiler::PlanInputs> recorded = compiler::read_plan_inputs(plan_path);
  if (!recorded) return;
  const compiler::PlanInputs& r = *recorded;
  take(given.stack, cluster.software.stack, r.stack, "--stack", cluster.software.stack, r.stack);
  take(given.headroom, cluster.software.memory_headroom, r.memory_headroom, "--memory-headroom",
       fmt::format("{}", cluster.software.memory_headroom), fmt::format("{}", r.memory_headroom));
  if (given.cluster && !same_profile(cluster.profile, r.cluster))
    std::cerr << fmt::format("symtensor: note: --cluster {} differs from the plan's {} (the plan is priced on {})\n",
                             cluster.profile, r.cluster, cluster.profile);
  // The dims the plan was made for, unless --bind gives them; then a notice naming the dims it
  // prices at other values. Another batch is the plan reader's to refuse (batch.global).
  if (model.bind.empty()) {
    model.bind = r.bind;
    return;
  }
  const std::string batch = !model.batch_dim.empty() ? model.batch_dim : !r.batch_dim.empty() ? r.batch_dim : "batch";
  const std::map<std::string, double> bound = compiler::parse_bindings(r.bind);
  std::string changed;
  for (const auto& [dim, value] : compiler::parse_bindings(model.bind)) {
    const auto it = bound.find(dim);
    if (dim != batch && (it == bound.end() || it->second != value))
      changed += fmt::format("{}{}={}", changed.empty() ? "" : ",", dim, value);
  }
  if (!changed.empty())
    std::cerr << fmt::format("symtensor: note: --bind {} differs from the plan's {} (the plan is priced at {})\n", model.bind,
                             shown(r.bind), changed);
}

}  // namespace symtensor::driver
