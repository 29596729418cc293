// The busiest expert-parallel rank's work under the plan's routing load (moe_load.h): the
// operators computing on routed tokens and the collectives moving them, scaled.
#include "compiler/cost/analyzer.h"

#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler::analyzer_internal {

double Analyzer::routed_load(float capacity) const {
  return capacity == kDroplessRouting && plan_.moe_load_imbalance != 1 && expert_parallel() ? plan_.moe_load_imbalance : 1.0;
}

bool Analyzer::expert_parallel() const {
  if (expert_parallel_ >= 0) return expert_parallel_ != 0;
  expert_parallel_ = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(graph_.nodes().size()) && !expert_parallel_; ++id) {
    const NumericNode& nn = ng_.node(id);
    if (!nn.expert_gemm) continue;
    const NodeCut& cut = plan_.node_cuts[id];
    const Node& node = graph_.node(id);
    for (std::size_t i = 0; i < node.inputs.size() && i < nn.space.input_dims.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNone || !(ng_.facts(t).parameter || ng_.facts(t).weight_derived)) continue;
      const int loop = gemm_expert_loop(nn.space, static_cast<int>(i));
      if (loop >= 0 && loop < static_cast<int>(cut.loop_axes.size()) && ways(cut.loop_axes[loop]) > 1) expert_parallel_ = 1;
    }
  }
  return expert_parallel_ != 0;
}

void Analyzer::scale_routed_work(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut) const {
  const double load = routed_load(ng_.node(w.node).routed_capacity);
  if (load == 1) return;
  double weights = 0;  // read once whatever the tokens
  for (std::size_t i = 0; i < node.inputs.size() && i < nn.space.input_dims.size(); ++i) {
    const TensorId t = node.inputs[i];
    if (t == kNone) continue;
    const TensorFacts& facts = ng_.facts(t);
    if (facts.parameter || facts.weight_derived || facts.constant)
      weights += local_elements(t, OperandLayout::input(nn.space, cut, static_cast<int>(i))) * element_bytes(t);
  }
  const double bytes = w.fwd_bytes;
  w.fwd_bytes = std::min(weights, bytes) + std::max(0.0, bytes - weights) * load;
  if (bytes > 0) w.bwd_bytes *= w.fwd_bytes / bytes;
  w.fwd_flops *= load, w.bwd_flops *= load;
  // At the balanced kernel's rate: F times the tokens take F times as long.
  w.fwd_seconds *= load, w.bwd_seconds *= load;
  w.buffer_bytes *= load;  // activations only
}

void Analyzer::scale_routed_comm(CommOp& op, TensorId t) const {
  const double load = routed_load(ng_.facts(t).routed_capacity);
  if (load == 1) return;
  op.bytes *= load;
  op.seconds = hardware::collective_time(cluster_, op.kind, op.group, op.bytes).seconds;
}

}  // namespace symtensor::compiler::analyzer_internal
