#include "compiler/analysis/model_stats.h"

#include "compiler/fusion/fusion_pass.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {

IterationSpace iteration_space_of(Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  OpContext ctx{node, {}, {}, graph.symbols};
  for (TensorId in : node.inputs) ctx.inputs.push_back(in == kNone ? nullptr : &graph.tensor(in));
  for (TensorId out : node.outputs) ctx.outputs.push_back(out == kNone ? nullptr : &graph.tensor(out));
  const OpRule* rule = node.opaque ? nullptr : find_op_rule(node.domain, node.op_type);
  if (rule && rule->iteration_space) return rule->iteration_space(ctx);
  return opaque_iteration_space(ctx);
}

std::vector<IterationSpace> node_iteration_spaces(Graph& graph) {
  std::vector<IterationSpace> spaces;
  spaces.reserve(graph.nodes().size());
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes().size()); ++n) spaces.push_back(iteration_space_of(graph, n));
  return spaces;
}

ModelStats compute_model_stats(Graph& graph) {
  ModelStats s;
  s.parameter_count = 0;
  s.parameter_bytes = 0;
  s.forward_flops = 0;
  s.gemm_flops = 0;
  s.attention_flops = 0;
  const std::string prefix = kFusedMetadataPrefix;
  for (const auto& [key, value] : graph.metadata)
    if (key.rfind(prefix, 0) == 0) s.fused[key.substr(prefix.size())] = value;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_parameter) continue;
    s.parameter_count += t.num_elements();
    s.parameter_bytes += t.num_bytes();
  }
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    const Node& node = graph.node(id);
    ++s.op_histogram[node.domain.empty() ? node.op_type : node.domain + "." + node.op_type];
    if (node.opaque) s.opaque_ops.push_back(node.name + " (" + node.op_type + ")");
    const IterationSpace space = iteration_space_of(graph, id);
    s.forward_flops += space.flops;
    if (space.kind == OpKind::gemm || space.kind == OpKind::convolution) s.gemm_flops += space.flops;
    if (space.kind == OpKind::attention) s.attention_flops += space.flops;
    s.node_costs.push_back({id, space.flops, space.bytes});
  }
  s.parameter_count = s.parameter_count.expand();
  s.parameter_bytes = s.parameter_bytes.expand();
  s.forward_flops = s.forward_flops.expand();
  s.gemm_flops = s.gemm_flops.expand();
  s.attention_flops = s.attention_flops.expand();
  return s;
}

}  // namespace symtensor::compiler
