#include "compiler/cost/memory_breakdown.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/analysis/layer_parts.h"
#include "compiler/analysis/model_stats.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

std::string zero_text(int zero, int from_stage, bool hsdp) {
  if (zero < from_stage) return "replicated";
  return hsdp ? fmt::format("sharded inside each data-parallel replica (HSDP, ZeRO-{})", zero)
              : fmt::format("sharded over data parallel (ZeRO-{})", zero);
}

}  // namespace

std::vector<StageMemoryBreakdown> memory_breakdown(Graph& graph, const Plan& plan, const PlanAnalysis& analysis) {
  std::vector<StageMemoryBreakdown> out;
  const std::vector<LayerPart> parts = layer_parts(graph, find_transformer_structure(graph, node_iteration_spaces(graph)));
  const auto part_of = [&](NodeId n) { return parts.empty() ? graph.node(n).op_type : std::string(to_string(parts[n])); };
  const bool train = plan.mode == ExecutionMode::train;
  const hardware::StackMemory& bytes = analysis.state_bytes;
  const auto dtype = [](double b) { return b == 4 ? std::string("fp32") : b == 2 ? std::string("16-bit") : fmt::format("{:g} B", b); };
  const std::string weights =
      dtype(bytes.weights) + " weights" + (!hardware::is_low_precision(plan.precision) ? ""
                                      : bytes.low_precision_copies_kept ? " + their low-precision copies"
                                                                        : " (low-precision copies made per use, none kept)");
  const std::string optimizer = bytes.master_weights > 0
                                    ? fmt::format("fp32 master weights + Adam m, v ({:g} B/parameter)", bytes.master_weights + bytes.optimizer)
                                    : fmt::format("Adam m, v ({:g} B/parameter)", bytes.optimizer);
  for (std::size_t s = 0; s < analysis.stage_memory.size(); ++s) {
    const StageMemory& m = analysis.stage_memory[s];
    StageMemoryBreakdown b;
    b.stage = static_cast<int>(s);
    b.parameters = m.parameters, b.gradients = m.gradients, b.optimizer = m.optimizer;
    const int zero = plan.zero_stage_of(b.stage);
    const bool hsdp = !plan.replicate_axes.empty();
    b.parameters_detail = fmt::format("{}, {}", weights, zero_text(zero, 3, hsdp));
    b.gradients_detail = train ? fmt::format("{} gradients, {}", dtype(bytes.gradients), zero_text(zero, 2, hsdp)) : "inference: none";
    b.optimizer_detail = train ? fmt::format("{}, {}", optimizer,
                                             plan.distributed_optimizer && zero == 0
                                                 ? hsdp ? "sharded inside each data-parallel replica (distributed optimizer)"
                                                        : "sharded over data parallel (distributed optimizer)"
                                                 : zero_text(zero, 1, hsdp))
                               : "inference: none";
    std::map<std::string, double> by_class;
    for (const OpWork& w : analysis.ops)
      if (w.stage == b.stage && w.saved_bytes > 0) by_class[part_of(w.node)] += w.saved_bytes;
    b.activations_by_class.assign(by_class.begin(), by_class.end());
    std::stable_sort(b.activations_by_class.begin(), b.activations_by_class.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    b.activations_per_micro_batch = m.activations_per_micro_batch;
    b.micro_batches_in_flight = m.micro_batches_in_flight;
    b.activations = m.activations_per_micro_batch * m.micro_batches_in_flight;
    b.working_buffers = m.working_buffers;
    if (m.working_buffers_node != kNone) {
      const Node& node = graph.node(m.working_buffers_node);
      b.working_buffers_detail = fmt::format("inputs and outputs of '{}' ({}){}", node.name, node.op_type,
                                             train ? ", then their gradients" : "");
    }
    b.collective_buffers = m.collective_buffers;
    const int effective_zero = plan.effective_zero_stage_of(b.stage);
    b.collective_buffers_detail = !train || effective_zero < 2 ? "none (gradients reduced in their buffer)"
                                  : effective_zero == 2       ? "largest layer's gradients before their reduce-scatter"
                                                              : "largest layer's weights gathered + the next prefetched, and its gradients";
    b.transient = b.working_buffers + b.collective_buffers;
    b.reserve = m.reserve;
    b.peak = b.parameters + b.gradients + b.optimizer + b.activations + b.transient + b.reserve;
    out.push_back(std::move(b));
  }
  return out;
}

nlohmann::json memory_breakdown_json(const std::vector<StageMemoryBreakdown>& stages) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : stages) {
    nlohmann::json by_class = nlohmann::json::object();
    for (const auto& [cls, bytes] : b.activations_by_class) by_class[cls] = bytes;
    out.push_back({{"stage", b.stage},
                   {"parameters_bytes", b.parameters},
                   {"parameters", b.parameters_detail},
                   {"gradients_bytes", b.gradients},
                   {"gradients", b.gradients_detail},
                   {"optimizer_bytes", b.optimizer},
                   {"optimizer", b.optimizer_detail},
                   {"activations_bytes", b.activations},
                   {"activations_per_micro_batch_bytes", b.activations_per_micro_batch},
                   {"micro_batches_in_flight", b.micro_batches_in_flight},
                   {"activations_by_class_per_micro_batch_bytes", by_class},
                   {"transient_bytes", b.transient},
                   {"working_buffers_bytes", b.working_buffers},
                   {"working_buffers", b.working_buffers_detail},
                   {"collective_buffers_bytes", b.collective_buffers},
                   {"collective_buffers", b.collective_buffers_detail},
                   {"reserve_bytes", b.reserve},
                   {"peak_bytes", b.peak}});
  }
  return out;
}

std::vector<StageMemoryBreakdown> memory_breakdown_from_json(const nlohmann::json& stages) {
  std::vector<StageMemoryBreakdown> out;
  for (const nlohmann::json& j : stages) {
    StageMemoryBreakdown b;
    b.stage = j.at("stage");
    b.parameters = j.at("parameters_bytes"), b.parameters_detail = j.at("parameters");
    b.gradients = j.at("gradients_bytes"), b.gradients_detail = j.at("gradients");
    b.optimizer = j.at("optimizer_bytes"), b.optimizer_detail = j.at("optimizer");
    b.activations = j.at("activations_bytes");
    b.activations_per_micro_batch = j.at("activations_per_micro_batch_bytes");
    b.micro_batches_in_flight = j.at("micro_batches_in_flight");
    for (const auto& [cls, bytes] : j.at("activations_by_class_per_micro_batch_bytes").items())
      b.activations_by_class.emplace_back(cls, bytes.get<double>());
    std::stable_sort(b.activations_by_class.begin(), b.activations_by_class.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    b.working_buffers = j.at("working_buffers_bytes"), b.working_buffers_detail = j.at("working_buffers");
    b.collective_buffers = j.at("collective_buffers_bytes"), b.collective_buffers_detail = j.at("collective_buffers");
    b.transient = j.at("transient_bytes");
    b.reserve = j.at("reserve_bytes");
    b.peak = j.at("peak_bytes");
    out.push_back(std::move(b));
  }
  return out;
}

const StageMemoryBreakdown* fullest_stage(const std::vector<StageMemoryBreakdown>& stages) {
  const StageMemoryBreakdown* best = nullptr;
  for (const auto& b : stages)
    if (!best || b.peak > best->peak) best = &b;
  return best;
}

std::string memory_breakdown_text(const std::vector<StageMemoryBreakdown>& stages) {
  std::string s;
  for (const auto& b : stages) {
    s += fmt::format("  stage {} peak {}:\n", b.stage, format_bytes(b.peak));
    s += fmt::format("    {:<34}{:>12}  {}\n", "parameters", format_bytes(b.parameters), b.parameters_detail);
    s += fmt::format("    {:<34}{:>12}  {}\n", "gradients", format_bytes(b.gradients), b.gradients_detail);
    s += fmt::format("    {:<34}{:>12}  {}\n", "optimizer states", format_bytes(b.optimizer), b.optimizer_detail);
    s += fmt::format("    {:<34}{:>12}  {} per micro-batch x {:.3g} in flight\n", "activations saved for backward",
                     format_bytes(b.activations), format_bytes(b.activations_per_micro_batch), b.micro_batches_in_flight);
    std::size_t shown = 0;
    for (const auto& [cls, bytes] : b.activations_by_class) {
      if (++shown > 6) break;
      s += fmt::format("      {:<32}{:>12}  per micro-batch\n", cls, format_bytes(bytes));
    }
    s += fmt::format("    {:<34}{:>12}  {}\n", "transient: working buffers", format_bytes(b.working_buffers),
                     b.working_buffers_detail);
    s += fmt::format("    {:<34}{:>12}  {}\n", "transient: collective buffers", format_bytes(b.collective_buffers),
                     b.collective_buffers_detail);
    s += fmt::format("    {:<34}{:>12}  {}\n", "CUDA context/NCCL/allocator reserve", format_bytes(b.reserve),
                     b.reserve > 0 ? "as the cluster profile states (device.memory_reserve_gb)"
                                   : "none stated by the cluster profile (device.memory_reserve_gb)");
  }
  return s;
}

}  // namespace symtensor::compiler
