#include "compiler/plan/plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::compiler {
namespace {

template <typename E, std::size_t N>
E parse_enum(std::string_view text, const std::pair<E, const char*> (&names)[N], const char* what) {
  std::string known;
  for (const auto& [value, name] : names) {
    if (text == name) return value;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw std::runtime_error(std::string("unknown ") + what + " '" + std::string(text) + "' (known: " + known + ")");
}

template <typename E, std::size_t N>
std::string_view enum_name(E value, const std::pair<E, const char*> (&names)[N]) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

constexpr std::pair<ExecutionMode, const char*> kModes[] = {{ExecutionMode::train, "train"}, {ExecutionMode::infer, "infer"}};
constexpr std::pair<Schedule, const char*> kSchedules[] = {
    {Schedule::gpipe, "gpipe"}, {Schedule::one_f_one_b, "1f1b"}, {Schedule::interleaved_1f1b, "interleaved-1f1b"}};
constexpr std::pair<RecomputePolicy, const char*> kRecompute[] = {
    {RecomputePolicy::none, "none"}, {RecomputePolicy::selective, "selective"}, {RecomputePolicy::full, "full"}};
constexpr std::pair<ContextParallelComm, const char*> kContextComm[] = {{ContextParallelComm::ring, "ring"},
                                                                        {ContextParallelComm::all_gather, "all_gather"}};
constexpr std::pair<MoeDispatcher, const char*> kDispatchers[] = {
    {MoeDispatcher::alltoall, "alltoall"}, {MoeDispatcher::deepep, "deepep"}, {MoeDispatcher::hybridep, "hybridep"}};

}  // namespace

std::string_view to_string(ExecutionMode m) { return enum_name(m, kModes); }
std::string_view to_string(Schedule s) { return enum_name(s, kSchedules); }
std::string_view to_string(RecomputePolicy r) { return enum_name(r, kRecompute); }
ExecutionMode parse_execution_mode(std::string_view text) { return parse_enum(text, kModes, "mode"); }
Schedule parse_schedule(std::string_view text) { return parse_enum(text, kSchedules, "schedule"); }
RecomputePolicy parse_recompute(std::string_view text) { return parse_enum(text, kRecompute, "recompute policy"); }
std::string_view to_string(ContextParallelComm c) { return enum_name(c, kContextComm); }
ContextParallelComm parse_context_parallel_comm(std::string_view text) {
  return parse_enum(text, kContextComm, "context-parallel communication");
}

std::string_view to_string(MoeDispatcher d) { return enum_name(d, kDispatchers); }
MoeDispatcher parse_moe_dispatcher(std::string_view text) { return parse_enum(text, kDispatchers, "MoE token dispatcher"); }

hardware::DeviceMesh plan_mesh(const Plan& plan, const hardware::Cluster& cluster) {
  if (plan.mesh_factors.empty()) return hardware::DeviceMesh::from_cluster(cluster);
  return hardware::DeviceMesh::factored(cluster, plan.mesh_factors);
}

std::string moe_load_imbalance_problem(double imbalance) {
  if (std::isfinite(imbalance) && imbalance >= 1) return "";
  return fmt::format("{} is not a routing load (the busiest expert rank's tokens over the mean: a finite number >= 1)",
                     imbalance);
}

std::string describe_recompute(RecomputePolicy policy, const std::vector<int>& layers) {
  if (layers.empty()) return std::string(to_string(policy));
  return fmt::format("{} (layers {})", to_string(policy), fmt::join(layers, "/"));
}

std::string describe_recompute(const Plan& plan) { return describe_recompute(plan.recompute, plan.recompute_layers); }

std::string describe_zero(const Plan& plan) {
  if (!plan.stage_zero_stages.empty()) return fmt::format("ZeRO {} by stage", fmt::join(plan.effective_zero_stages(), "/"));
  return plan.zero_stage > 0 ? fmt::format("ZeRO-{}", plan.zero_stage) : "";
}

int Plan::zero_stage_of(int stage) const {
  if (stage_zero_stages.empty()) return zero_stage;
  return stage_zero_stages.at(stage);
}

int Plan::effective_zero_stage_of(int stage) const {
  const int zero = zero_stage_of(stage);
  return distributed_optimizer ? std::max(zero, 1) : zero;
}

std::vector<int> Plan::effective_zero_stages() const {
  std::vector<int> zero(pipeline_stages());
  if (!stage_zero_stages.empty() && stage_zero_stages.size() != zero.size())
    throw std::runtime_error(
        fmt::format("plan: stage_zero_stages has {} entries for {} pipeline stages", stage_zero_stages.size(), zero.size()));
  for (std::size_t s = 0; s < zero.size(); ++s) zero[s] = effective_zero_stage_of(static_cast<int>(s));
  return zero;
}

int Plan::pipeline_stages() const {
  if (pipeline_axis < 0) return 1;
  int axis = 0;
  for (const auto& level : mesh_factors)
    for (int f : level)
      if (axis++ == pipeline_axis) return f;
  throw std::runtime_error("plan: pipeline axis " + std::to_string(pipeline_axis) + " is not a mesh axis");
}

std::uint64_t new_cuts_stamp() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

}  // namespace symtensor::compiler
