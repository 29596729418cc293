#include "compiler/lowering/simulation_report.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

std::string palm_mfu_line(const SimulationReport& r) {
  const std::string terms = describe_palm_flops(r.palm);
  if (!r.mfu_6n) return palm_mfu_label(r.palm) + ": " + terms;
  return fmt::format("{}: {:.1f}%   ({})", palm_mfu_label(r.palm), 100 * *r.mfu_6n, terms);
}

}  // namespace

std::string describe_palm_flops(const PalmFlops& p) {
  if (!p.applies()) return "not applicable" + (p.not_applicable.empty() ? "" : " (" + p.not_applicable + ")");
  return fmt::format("N = {} parameters, L = {}, h = {}, s = {}", format_count(p.parameters), p.layers, p.hidden,
                     p.sequence);
}

SimulationReport make_report(const PlanAnalysis& a, const Plan& plan, const hardware::Cluster& cluster,
                             const sim::SimResult& result, double tokens_per_sample, const PalmFlops& palm) {
  SimulationReport r;
  r.full_mode = result.full_mode;
  r.devices = cluster.num_devices();
  r.step_time_s = result.step_time_s;
  r.device_memory_bytes = result.device_memory_bytes;
  r.moe_load = a.moe_load;
  const double stages = std::max(plan.pipeline_stages(), 1);
  const double replicas = r.devices / stages;  // devices per stage, each doing its op's local work
  const double training = plan.mode == ExecutionMode::train ? 1 : 0;
  double model = 0, recompute = 0;
  for (const auto& op : a.ops) {
    model += op.fwd_flops + training * op.bwd_flops;
    if (op.recomputed && training) recompute += op.fwd_flops;
  }
  const double m = plan.micro_batches;
  r.model_flops = model * m * replicas;
  r.hardware_flops = (model + recompute) * m * replicas;
  if (r.step_time_s > 0) {
    const double peak = hardware::total_peak(cluster, plan.precision) * r.step_time_s;
    r.mfu = r.model_flops / peak;
    r.hfu = r.hardware_flops / peak;
    r.samples_per_s = plan.global_batch / r.step_time_s;
    r.tokens_per_s = r.samples_per_s * tokens_per_sample;
  }
  r.palm = palm;
  r.mfu_6n = palm_mfu(palm, plan.mode == ExecutionMode::train, plan.precision, cluster, r.samples_per_s);
  const sim::ClassResult* critical = nullptr;
  for (const auto& c : result.classes) {
    StageReport s;
    s.name = c.name;
    s.ranks = c.num_ranks;
    if (c.device_groups.size() == 1) s.group = c.device_groups.front();
    s.finish_s = c.finish_s;
    s.compute_s = c.compute_busy_s - c.optimizer_s;
    s.exposed_comm_s = c.exposed_comm_s;
    s.bubble_s = c.bubble_s;
    s.optimizer_s = c.optimizer_s;
    s.static_memory_bytes = c.static_memory_bytes;
    s.peak_memory_bytes = c.peak_memory_bytes;
    s.memory_capacity_bytes = c.memory_capacity_bytes;
    s.out_of_memory = c.out_of_memory;
    s.overage_bytes = c.memory_overage_bytes;
    r.fits = r.fits && !c.out_of_memory;
    r.stages.push_back(s);
    if (!critical || c.finish_s > critical->finish_s) critical = &c;
  }
  if (critical) {
    r.critical_stage = critical->name;
    r.compute_s = critical->compute_busy_s - critical->optimizer_s;
    r.exposed_comm_s = critical->exposed_comm_s;
    r.bubble_s = critical->bubble_s;
    r.optimizer_s = critical->optimizer_s;
    r.collectives_s = critical->collective_busy_s;
  }
  return r;
}

nlohmann::json report_to_json(const SimulationReport& r, const Plan& plan) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : r.stages)
    stages.push_back({{"name", s.name},
                      {"ranks", s.ranks},
                      {"finish_s", s.finish_s},
                      {"compute_s", s.compute_s},
                      {"exposed_comm_s", s.exposed_comm_s},
                      {"bubble_s", s.bubble_s},
                      {"optimizer_s", s.optimizer_s},
                      {"static_memory_bytes", s.static_memory_bytes},
                      {"peak_memory_bytes", s.peak_memory_bytes},
                      {"memory_capacity_bytes", s.memory_capacity_bytes},
                      {"out_of_memory", s.out_of_memory},
                      {"overage_bytes", s.overage_bytes}});
  nlohmann::json tokens = r.tokens_per_s > 0 ? nlohmann::json(r.tokens_per_s) : nlohmann::json(nullptr);
  return {{"mode", r.full_mode ? "full" : "symmetric"},
          {"moe_load", moe_load_json(r.moe_load)},
          {"devices", r.devices},
          {"step_time_s", r.step_time_s},
          {"samples_per_s", r.samples_per_s},
          {"tokens_per_s", tokens},
          {"model_flops", r.model_flops},
          {"hardware_flops", r.hardware_flops},
          {"mfu", r.mfu},
          {"mfu_6n", r.mfu_6n ? nlohmann::json(*r.mfu_6n) : nlohmann::json(nullptr)},
          {"hfu", r.hfu},
          {"breakdown",
           {{"critical_stage", r.critical_stage},
            {"compute_s", r.compute_s},
            {"exposed_comm_s", r.exposed_comm_s},
            {"bubble_s", r.bubble_s},
            {"optimizer_s", r.optimizer_s},
            {"collectives_s", r.collectives_s}}},
          {"device_memory_bytes", r.device_memory_bytes},
          {"fits", r.fits},
          {"stages", stages},
          {"plan",
           {{"strategy", plan.strategy},
            {"pipeline_stages", plan.pipeline_stages()},
            {"micro_batches", plan.micro_batches},
            {"schedule", std::string(to_string(plan.schedule))},
            {"virtual_stages", plan.virtual_stages},
            {"recompute", std::string(to_string(plan.recompute))},
            {"recompute_layers", plan.recompute_layers},
            {"zero_stage", plan.zero_stage},
            {"stage_zero_stages", plan.stage_zero_stages},
            {"global_batch", plan.global_batch}}}};
}

std::string report_text(const SimulationReport& r, const Plan& plan, const std::string& label) {
  std::ostringstream o;
  o << fmt::format("plan: {}; {} devices, {} schedule\n", label, r.devices, to_string(plan.schedule));
  o << fmt::format("mode: {}\n", r.full_mode ? "full (every rank simulated)" : "symmetric (one rank per stage)");
  o << "step time: " << describe_step_time(r.step_time_s) << "\n";
  o << "throughput: " << describe_throughput(r.samples_per_s, r.samples_per_s > 0 ? r.tokens_per_s / r.samples_per_s : 0);
  o << fmt::format("\n{}: {:.1f}%   HFU: {:.1f}%   ({}/s per device, model)\n", kExactMfuLabel, 100 * r.mfu,
                   100 * r.hfu, format_si(r.step_time_s > 0 ? r.model_flops / r.devices / r.step_time_s : 0, "FLOP"));
  o << palm_mfu_line(r) << "\n";
  o << "breakdown (" << r.critical_stage << "): compute " << format_seconds(r.compute_s) << ", exposed communication "
    << format_seconds(r.exposed_comm_s) << ", pipeline bubble " << format_seconds(r.bubble_s) << ", optimizer "
    << format_seconds(r.optimizer_s) << "\n";
  if (!r.collectives_s.empty()) {
    o << "collectives (" << r.critical_stage << ", busy, overlapped or not):";
    const char* sep = " ";
    for (const auto& [kind, seconds] : r.collectives_s) o << sep << kind << " " << format_seconds(seconds), sep = ", ";
    o << "\n";
  }
  // A mixed fleet's stages hold their own GPUs' memory: each line names its own.
  bool one_capacity = true;
  for (const auto& s : r.stages) one_capacity &= s.memory_capacity_bytes <= 0 || s.memory_capacity_bytes == r.device_memory_bytes;
  if (one_capacity) o << "memory per stage (capacity " << format_bytes(r.device_memory_bytes) << "):\n";
  else o << "memory per stage (each against its own GPUs' capacity):\n";
  for (const auto& s : r.stages) {
    o << fmt::format("  {:<8} peak {:>11}  (static {:>11})", s.name, format_bytes(s.peak_memory_bytes),
                     format_bytes(s.static_memory_bytes));
    if (!one_capacity) o << " of " << format_bytes(s.memory_capacity_bytes > 0 ? s.memory_capacity_bytes : r.device_memory_bytes);
    if (s.out_of_memory) o << "  OUT OF MEMORY by " << format_bytes(s.overage_bytes);
    o << "\n";
  }
  if (r.moe_load.told()) o << "MoE routing load: " << describe_moe_load(r.moe_load) << "\n";
  if (!r.fits) o << "the plan does not fit in device memory\n";
  return o.str();
}

}  // namespace symtensor::compiler
