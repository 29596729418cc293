#include "compiler/report/plan_explain.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

std::string axes_text(const std::vector<int>& axes, const hardware::DeviceMesh& mesh) {
  std::string s;
  for (int a : axes) s += (s.empty() ? "" : "x") + mesh.axes().at(a).name;
  return s;
}

std::string cut_text(const NumericNode& node, const NodeCut& cut, const hardware::DeviceMesh& mesh) {
  std::string s;
  for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
    if (cut.loop_axes[l].empty()) continue;
    const std::string loop = l < node.space.loops.size() ? node.space.loops[l].name : "loop" + std::to_string(l);
    s += (s.empty() ? "" : "; ") + loop + "->" + axes_text(cut.loop_axes[l], mesh);
  }
  return s.empty() ? "replicated" : s;
}

std::string comm_text(const std::vector<CommOp>& ops, const char* pass, const hardware::DeviceMesh& mesh) {
  std::string s;
  for (const auto& op : ops)
    s += (s.empty() ? "" : ", ") + std::string(pass) + " " + std::string(hardware::to_string(op.kind)) + " " +
         format_bytes(op.bytes) + " over " + axes_text(op.axes, mesh);
  return s;
}

bool shown_kind(OpKind k) { return k == OpKind::gemm || k == OpKind::convolution || k == OpKind::routing; }

// Sums of one kind of parameter collective per (kind, axes).
void summarise(const std::vector<ParamWork>& params, bool gathers, const char* what, const hardware::DeviceMesh& mesh,
               std::vector<std::string>& out) {
  // (key, run each micro-batch: ZeRO-2/3's reduce-scatters) -> bytes, seconds
  std::map<std::pair<std::string, bool>, std::pair<double, double>> sums;
  for (const auto& p : params)
    for (const auto& op : gathers ? p.gather : p.grad_sync) {
      const std::string key = std::string(hardware::to_string(op.kind)) + " over " + axes_text(op.axes, mesh);
      auto& [bytes, seconds] = sums[{key, op.every_micro_batch}];
      bytes += op.bytes;
      seconds += op.seconds;
    }
  for (const auto& [key, v] : sums)
    out.push_back(std::string(what) + ": " + key.first + ", " + format_bytes(v.first) + " per device per " +
                  (key.second ? "micro-batch, " : "step, ") + format_seconds(v.second) + " if not overlapped");
}

}  // namespace

std::string layer_pattern(const std::string& node_name) {
  std::string out;
  for (std::size_t i = 0; i < node_name.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(node_name[i]))) {
      if (out.empty() || out.back() != '*') out += '*';
    } else {
      out += node_name[i];
    }
  }
  return out;
}

PlanExplanation explain_plan(const NumericGraph& ng, const PlanAnalysis& a, const Plan& plan,
                             const hardware::Cluster& cluster, std::size_t max_groups) {
  const Graph& graph = ng.graph();
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  PlanExplanation e;

  // Roles of the axes from the cuts: batch-dependent loops are data parallel.
  std::vector<bool> data(mesh.axes().size()), tensor(mesh.axes().size());
  for (std::size_t n = 0; n < plan.node_cuts.size() && n < graph.nodes().size(); ++n) {
    const NumericNode& node = ng.node(static_cast<NodeId>(n));
    const auto& cut = plan.node_cuts[n].loop_axes;
    for (std::size_t l = 0; l < cut.size(); ++l)
      for (int axis : cut[l]) {
        const bool batch = l < node.loops.size() && node.loops[l].extent.per_batch > 0;
        (batch ? data : tensor).at(axis) = true;
      }
  }
  for (std::size_t i = 0; i < mesh.axes().size(); ++i) {
    const auto& axis = mesh.axes()[i];
    MeshAxisText t{axis.name, axis.size, cluster.levels.at(axis.level).name, "unused"};
    if (static_cast<int>(i) == plan.pipeline_axis) t.role = "pipeline";
    else if (data[i] && tensor[i]) t.role = "data+tensor";
    else if (data[i]) t.role = "data";
    else if (tensor[i]) t.role = "tensor";
    e.mesh.push_back(t);
  }

  std::string mesh_text;
  for (const auto& t : e.mesh) mesh_text += (mesh_text.empty() ? "" : " x ") + t.name + "=" + std::to_string(t.size);
  e.summary = "mesh " + mesh_text + "; " + std::to_string(plan.pipeline_stages()) + " pipeline stage(s), " +
              std::string(to_string(plan.schedule)) +
              (plan.virtual_stages > 1 ? " x" + std::to_string(plan.virtual_stages) + " virtual" : "") + ", " +
              std::to_string(plan.micro_batches) + " micro-batch(es) of the global batch " +
              format_count(plan.global_batch) + "; recompute " + describe_recompute(plan) +
              (plan.stage_zero_stages.empty() ? "; ZeRO stage " + std::to_string(plan.zero_stage) : "; " + describe_zero(plan)) +
              (plan.distributed_optimizer ? "; distributed optimizer" : "") +
              (plan.sequence_parallel ? "; sequence parallel" : "");

  struct Group {
    LayerOpText text;
    double flops = 0;
  };
  std::map<std::string, Group> groups;
  for (const OpWork& w : a.ops) {
    const Node& node = graph.node(w.node);
    const NumericNode& nn = ng.node(w.node);
    if (!shown_kind(nn.kind) && w.fwd_comm.empty() && w.bwd_comm.empty()) continue;
    const std::string cut = cut_text(nn, plan.node_cuts.at(w.node), mesh);
    const std::string pattern = layer_pattern(node.name.empty() ? node.op_type : node.name);
    Group& g = groups[pattern + "|" + cut];
    if (g.text.count == 0) {
      g.text.pattern = pattern;
      g.text.op_type = node.op_type;
      g.text.cut = cut;
      std::string comm = comm_text(w.fwd_comm, "fwd", mesh);
      const std::string back = comm_text(w.bwd_comm, "bwd", mesh);
      g.text.comm = comm.empty() ? back : back.empty() ? comm : comm + ", " + back;
    }
    ++g.text.count;
    g.flops += w.fwd_flops;
    for (const auto* ops : {&w.fwd_comm, &w.bwd_comm})
      for (const auto& op : *ops) g.text.comm_seconds += op.seconds;
  }
  std::vector<Group> sorted;
  for (auto& [key, g] : groups) sorted.push_back(g);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Group& x, const Group& y) { return x.flops > y.flops; });
  for (std::size_t i = 0; i < sorted.size() && i < max_groups; ++i) e.ops.push_back(sorted[i].text);

  summarise(a.params, false, "gradient synchronisation", mesh, e.communication);
  summarise(a.params, true, "ZeRO-3 parameter gathers (forward and backward)", mesh, e.communication);
  for (std::size_t s = 0; s < a.p2p_bytes.size(); ++s)
    if (a.p2p_bytes[s] > 0)
      e.communication.push_back("pipeline send stage " + std::to_string(s) + " -> " + std::to_string(s + 1) + ": " +
                                format_bytes(a.p2p_bytes[s]) + " per micro-batch (and its gradient back)");
  if (e.communication.empty()) e.communication.push_back("no parameter or pipeline communication");
  return e;
}

}  // namespace symtensor::compiler
