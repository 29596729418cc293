#include "compiler/analysis/model_stats.h"

#include <map>
#include <string>

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

namespace {

// Per layer (layer_of) with a routed mixture of experts: E and top_k.
struct RoutedLayer {
  GiNaC::ex experts;
  std::int64_t top_k = 0;
};

std::map<std::string, RoutedLayer> routed_layers(const Graph& graph) {
  std::map<std::string, RoutedLayer> layers;
  for (const Node& node : graph.nodes()) {
    if (node.op_type != "MoeCombine" || node.inputs.empty() || node.inputs[0] == kNone) continue;
    const Shape& routing = graph.tensor(node.inputs[0]).shape;  // [b, s, E, C]
    const std::int64_t k = node.attr_int("top_k", 0);
    if (routing.size() == 4 && k > 0) layers[layer_of(node.name)] = {routing[2], k};
  }
  return layers;
}

// Parameter elements one token does not run through: (1 - top_k / E) of every expert-stacked
// parameter (leading dim E) read by its routed layer.
GiNaC::ex inactive_expert_elements(const Graph& graph) {
  const std::map<std::string, RoutedLayer> layers = routed_layers(graph);
  GiNaC::ex inactive = 0;
  if (layers.empty()) return inactive;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_parameter || t.shape.empty() || t.consumers.empty()) continue;
    const auto layer = layers.find(layer_of(graph.node(t.consumers.front()).name));
    if (layer == layers.end() || !(t.shape.front() - layer->second.experts).expand().is_zero()) continue;
    inactive += t.num_elements() * (1 - GiNaC::numeric(layer->second.top_k) / layer->second.experts);
  }
  return inactive;
}

}  // namespace

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
  s.active_parameter_count = (s.parameter_count - inactive_expert_elements(graph)).expand();
  s.parameter_count = s.parameter_count.expand();
  s.parameter_bytes = s.parameter_bytes.expand();
  s.forward_flops = s.forward_flops.expand();
  s.gemm_flops = s.gemm_flops.expand();
  s.attention_flops = s.attention_flops.expand();
  return s;
}

}  // namespace symtensor::compiler
