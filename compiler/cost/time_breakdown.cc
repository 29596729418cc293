#include "compiler/cost/time_breakdown.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace symtensor::compiler {

std::vector<StageTimeBreakdown> time_breakdown(const Graph& graph, const Plan& plan, const PlanAnalysis& analysis,
                                               std::size_t slowest) {
  const bool train = plan.mode == ExecutionMode::train;
  std::vector<StageTimeBreakdown> stages(plan.pipeline_stages());
  std::vector<std::map<std::string, OpClassTime>> by_class(stages.size());
  for (const OpWork& w : analysis.ops) {
    const Node& node = graph.node(w.node);
    OpClassTime op;  // this operator's share
    op.operators = 1;
    op.forward_s = w.fwd_seconds;
    op.exposed_comm_s = exposed_seconds(w.fwd_comm, w.fwd_seconds);
    op.flops = w.fwd_flops;
    double bytes = w.fwd_bytes;
    if (train) {
      op.backward_s = w.bwd_seconds;
      op.exposed_comm_s += exposed_seconds(w.bwd_comm, w.bwd_seconds);
      op.flops += w.bwd_flops;
      bytes += w.bwd_bytes;
      if (w.recomputed) {
        op.recompute_s = w.fwd_seconds;
        op.exposed_comm_s += exposed_seconds(w.fwd_comm, w.fwd_seconds);
        op.flops += w.fwd_flops;
        bytes += w.fwd_bytes;
      }
    }
    OpClassTime& c = by_class.at(w.stage)[node.op_type];
    c.operators += op.operators;
    c.forward_s += op.forward_s, c.backward_s += op.backward_s, c.recompute_s += op.recompute_s;
    c.exposed_comm_s += op.exposed_comm_s, c.flops += op.flops;
    stages[w.stage].offload_s += w.offload_fwd_seconds + (train ? w.offload_bwd_seconds : 0);
    stages[w.stage].slowest.push_back(
        {node.name, node.op_type, op.forward_s + op.backward_s + op.recompute_s, op.exposed_comm_s, op.flops, bytes});
  }
  for (std::size_t s = 0; s < stages.size(); ++s) {
    stages[s].stage = static_cast<int>(s);
    for (auto& [name, c] : by_class[s]) {
      c.op_class = name;
      stages[s].classes.push_back(c);
    }
    std::stable_sort(stages[s].classes.begin(), stages[s].classes.end(),
                     [](const OpClassTime& a, const OpClassTime& b) { return a.total_s() > b.total_s(); });
    auto& ops = stages[s].slowest;
    const auto by_time = [](const OperatorTime& a, const OperatorTime& b) {
      return a.kernel_s + a.exposed_comm_s > b.kernel_s + b.exposed_comm_s;
    };
    const std::size_t keep = std::min(slowest, ops.size());
    std::partial_sort(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(keep), ops.end(), by_time);
    ops.resize(keep);
  }
  return stages;
}

std::string time_breakdown_text(const std::vector<StageTimeBreakdown>& stages) {
  std::string out = "time by operator class, one micro-batch (kernels; exposed comm: its collectives past them):\n";
  for (const StageTimeBreakdown& st : stages) {
    double total = st.offload_s;
    for (const OpClassTime& c : st.classes) total += c.total_s();
    out += fmt::format("  stage{}  {:.4g} s\n", st.stage, total);
    out += fmt::format("    {:<22} {:>5} {:>10} {:>10} {:>10} {:>10} {:>6} {:>9}\n", "class", "ops", "forward", "backward",
                       "recompute", "exp. comm", "share", "TFLOP/s");
    for (const OpClassTime& c : st.classes) {
      const double kernels = c.forward_s + c.backward_s + c.recompute_s;
      out += fmt::format("    {:<22} {:>5} {:>9.4g}s {:>9.4g}s {:>9.4g}s {:>9.4g}s {:>5.1f}% {:>9.1f}\n", c.op_class, c.operators,
                         c.forward_s, c.backward_s, c.recompute_s, c.exposed_comm_s, total > 0 ? 100 * c.total_s() / total : 0.0,
                         kernels > 0 ? c.flops / kernels / 1e12 : 0.0);
    }
    if (st.offload_s > 0) out += fmt::format("    {:<22} {:>5} {:>9.4g}s\n", "offload (exposed)", "", st.offload_s);
    if (st.slowest.empty()) continue;
    out += fmt::format("    slowest operators: {:>10} {:>10} {:>9} {:>10}  name\n", "kernels", "exp. comm", "TFLOP/s", "GB moved");
    for (const OperatorTime& op : st.slowest)
      out += fmt::format("    {:<18} {:>9.4g}s {:>9.4g}s {:>9.1f} {:>10.3f}  {}\n", op.op_type, op.kernel_s, op.exposed_comm_s,
                         op.kernel_s > 0 ? op.flops / op.kernel_s / 1e12 : 0.0, op.bytes / 1e9, op.name);
  }
  return out;
}

nlohmann::json time_breakdown_json(const std::vector<StageTimeBreakdown>& stages) {
  nlohmann::json j = nlohmann::json::array();
  for (const StageTimeBreakdown& st : stages) {
    nlohmann::json classes = nlohmann::json::array();
    for (const OpClassTime& c : st.classes)
      classes.push_back({{"class", c.op_class}, {"operators", c.operators}, {"forward_s", c.forward_s},
                         {"backward_s", c.backward_s}, {"recompute_s", c.recompute_s}, {"exposed_comm_s", c.exposed_comm_s},
                         {"flops", c.flops}});
    nlohmann::json slowest = nlohmann::json::array();
    for (const OperatorTime& op : st.slowest)
      slowest.push_back({{"name", op.name}, {"op_type", op.op_type}, {"kernel_s", op.kernel_s},
                         {"exposed_comm_s", op.exposed_comm_s}, {"flops", op.flops}, {"bytes", op.bytes}});
    j.push_back({{"stage", st.stage}, {"classes", classes}, {"slowest", slowest}, {"offload_s", st.offload_s}});
  }
  return j;
}

}  // namespace symtensor::compiler
