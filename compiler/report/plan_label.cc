#include "compiler/report/plan_label.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include <fmt/format.h>

#include "compiler/strategies/propagation.h"
#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler {
namespace {

int ways(const Plan& plan, const hardware::DeviceMesh& mesh, NodeId n, int loop) {
  if (loop < 0 || n >= static_cast<NodeId>(plan.node_cuts.size()) ||
      loop >= static_cast<int>(plan.node_cuts[n].loop_axes.size()))
    return 1;
  int w = 1;
  for (int a : plan.node_cuts[n].loop_axes[loop]) w *= mesh.axes().at(a).size;
  return w;
}

}  // namespace

PlanDegrees plan_degrees(Graph& graph, const Plan& plan, const hardware::Cluster& cluster) {
  PlanDegrees d;
  d.pp = plan.pipeline_stages();
  d.vp = std::max(plan.virtual_stages, 1);
  d.micro_batches = std::max(plan.micro_batches, 1);
  const std::vector<IterationSpace> spaces = node_iteration_spaces(graph);
  const TransformerStructure s = find_transformer_structure(graph, spaces);
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  const auto batch_loop = [&](NodeId n) { return loop_with_symbol(graph, spaces[n], graph.batch_dim); };
  const auto sequence_loop = [&](NodeId n) {
    const int q = loop_with_symbol(graph, spaces[n], graph.sequence_dim);
    return q == batch_loop(n) ? -1 : q;
  };
  // The degrees are the first dense column GEMM's over the sequence: a vision-language
  // model's tower comes first in the graph, and its patches are no sequence, so its cuts
  // would name the tower's plan (cp=1 under a language model's cp=2). Without a sequence
  // dim, the first column GEMM's.
  NodeId degrees_from = -1;
  bool expert_seen = false;
  for (NodeId n : s.column) {
    const int weight = weight_operand(graph, s, n);
    if (const int e = gemm_expert_loop(spaces[n], weight); e >= 0) {
      if (!expert_seen) d.ep = ways(plan, mesh, n, e), expert_seen = true;
    } else if (degrees_from < 0 || (sequence_loop(degrees_from) < 0 && sequence_loop(n) >= 0)) {
      degrees_from = n;
    }
  }
  if (degrees_from >= 0) {
    const NodeId n = degrees_from;
    d.tp = ways(plan, mesh, n, gemm_output_loop(spaces[n], weight_operand(graph, s, n)));
    d.dp = ways(plan, mesh, n, batch_loop(n));
    d.cp = ways(plan, mesh, n, sequence_loop(n));
  } else {  // not a transformer: the widest cuts of the batch, and of anything else in a weight GEMM
    for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes().size()); ++n) {
      const int b = batch_loop(n);
      if (b >= 0) d.dp = std::max(d.dp, ways(plan, mesh, n, b));
      if (!s.weight_gemm[n]) continue;
      for (int l = 0; l < static_cast<int>(spaces[n].loops.size()); ++l)
        if (l != b) d.tp = std::max(d.tp, ways(plan, mesh, n, l));
    }
  }
  d.micro_batch_size = plan.global_batch / d.dp / d.micro_batches;
  for (int a : plan.replicate_axes) d.replicas *= mesh.axes().at(a).size;
  return d;
}

std::string plan_label(const std::string& strategy, const PlanDegrees& d, const Plan& plan) {
  const double mbs = d.micro_batch_size;
  const std::string size = mbs == std::floor(mbs) ? fmt::format("{}", static_cast<long long>(mbs)) : fmt::format("{:.3g}", mbs);
  std::string s = fmt::format("{} tp={} dp={} pp={} cp={} ep={}, ", strategy, d.tp, d.dp, d.pp, d.cp, d.ep);
  if (plan.group_micro_batches.empty()) {
    s += fmt::format("{} micro-batch{}", d.micro_batches, d.micro_batches == 1 ? "" : "es");
  } else {
    // Batch shares on a mixed fleet: each group's replicas run their own count.
    for (std::size_t g = 0; g < plan.group_micro_batches.size(); ++g)
      s += fmt::format("{}{}", g ? " / " : "", plan.group_micro_batches[g]);
    s += " micro-batches per replica by group";
  }
  s += fmt::format(" of {} sample{}", size, mbs == 1 ? "" : "s");
  if (d.vp > 1) s += fmt::format(", vp={}", d.vp);
  if (plan.recompute != RecomputePolicy::none) s += ", recompute " + describe_recompute(plan);
  if (const std::string zero = describe_zero(plan); !zero.empty()) s += ", " + zero;
  if (plan.distributed_optimizer) s += ", distributed optimizer";
  if (d.replicas > 1) s += fmt::format(", HSDP {} replicas x {} shards", d.replicas, d.dp / d.replicas);
  if (plan.sequence_parallel && d.tp > 1) s += ", sequence parallel";
  return s;
}

std::string plan_label_or(const std::string& strategy, Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                          const std::string& otherwise) {
  try {
    return plan_label(strategy, plan_degrees(graph, plan, cluster), plan);
  } catch (const std::exception&) {
    return otherwise;
  }
}

}  // namespace symtensor::compiler
