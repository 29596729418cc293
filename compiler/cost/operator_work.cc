#include "compiler/cost/analyzer.h"

#include <cmath>
#include <stdexcept>
#include "compiler/cost/moe_exchange.h"

namespace symtensor::compiler::analyzer_internal {

double Analyzer::low_precision_copy_bytes() const {
  switch (plan_.precision) {
    case hardware::Precision::fp8: return 2;
    case hardware::Precision::mxfp8: return 2 + 2.0 / 32;
    case hardware::Precision::fp4: return 1 + 2.0 / 16;
    default: return 0;
  }
}

std::vector<CommOp> Analyzer::redistribute(TensorId t, const TensorSharding& from, const TensorSharding& to) {
  if (from == to) return {};
  state_.shape.clear();
  for (const Affine& d : ng_.tensor_shape(t)) state_.shape.push_back(static_cast<long>(d.at(batch_)));
  const NumericRedistribution& r = memo_.plan(from, to, state_.shape, element_bytes(t));
  if (!r.error.empty()) throw std::runtime_error(r.error);
  auto it = state_.priced.find(&r);
  if (it == state_.priced.end()) {
    std::vector<CommOp> ops;
    for (const NumericCollective& c : r.collectives) {
      CommOp op;
      op.kind = c.kind;
      op.axes = c.axes;
      op.group = c.group;
      op.bytes = c.bytes;
      op.seconds = hardware::collective_time(cluster_, op.kind, op.group, op.bytes).seconds;
      ops.push_back(std::move(op));
    }
    it = state_.priced.emplace(&r, std::move(ops)).first;
  }
  std::vector<CommOp> ops = it->second;
  for (auto& op : ops) op.tensor = t;
  return ops;
}

NodeId Analyzer::routing_node(NodeId consumer, TensorId t) const {
  if (plan_.moe_dispatcher == MoeDispatcher::alltoall) return kNone;
  return exchanged_routing_node(consumer, t);
}

NodeId Analyzer::exchanged_routing_node(NodeId consumer, TensorId t) const {
  const auto is = [&](NodeId id, const char* op) {
    const Node& n = graph_.node(id);
    return n.op_type == op && n.domain == "ai.symtensor" && n.inputs.size() == 2;
  };
  if (is(consumer, "MoeCombine") && graph_.node(consumer).inputs[1] == t) return consumer;
  const NodeId producer = graph_.tensor(t).producer;
  return producer != kNone && is(producer, "MoeDispatch") ? producer : kNone;
}

void Analyzer::deduplicate(CommOp& op, const RoutedTokens& routed) const {
  if (routed.experts == 0 || op.kind != hardware::Collective::all_to_all) return;
  int nodes = 1;
  for (std::size_t l = 1; l < op.group.ranks_per_level.size(); ++l) nodes *= op.group.ranks_per_level[l];
  if (nodes <= 1 || routed.experts % nodes != 0) return;
  op.bytes *= deduplicated_share(routed.experts, routed.top_k, nodes, routed.groups, routed.top_groups);
  op.seconds = hardware::collective_time(cluster_, op.kind, op.group, op.bytes).seconds;
}

Analyzer::RoutedTokens Analyzer::routed_tokens(NodeId consumer, TensorId t) const {
  const NodeId routing = routing_node(consumer, t);
  if (routing == kNone) return {};
  const Node& r = graph_.node(routing);
  // The [b, s, E, C] routing tensor: E experts, C slots per expert and sequence.
  const auto& shape = ng_.tensor_shape(r.inputs[0]);
  if (shape.size() != 4) return {};
  const double experts = shape[2].at(batch_), seq = shape[1].at(batch_);
  double top_k = static_cast<double>(r.attr_int("top_k", 0));
  if (top_k <= 0 && seq > 0) top_k = std::round(experts * shape[3].at(batch_) / seq);
  if (top_k < 1 || top_k > experts) return {};
  return {static_cast<int>(experts), static_cast<int>(top_k), static_cast<int>(r.attr_int("expert_groups", 1)),
          static_cast<int>(r.attr_int("top_groups", 1))};
}

void Analyzer::record_outputs(NodeId id) {
  const Node& node = graph_.node(id);
  const NumericNode& nn = ng_.node(id);
  for (std::size_t o = 0; o < node.outputs.size() && o < nn.space.output_dims.size(); ++o) {
    const TensorId t = node.outputs[o];
    if (t != kNone && !ng_.facts(t).constant) {
      state_.produced[t] = OperandLayout::output(nn.space, state_.ops_plan->node_cuts[id], static_cast<int>(o));
      state_.produced_elements[t] = local_elements(t, *state_.produced[t]);
    }
  }
}

void Analyzer::input_work(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut, std::size_t i, bool train,
                const OpWork* old, const std::vector<char>* dirty, double& local_bytes, int& gradient_inputs) {
  const TensorId t = node.inputs[i];
  if (t == kNone || i >= nn.space.input_dims.size()) return;
  const OperandLayout want = OperandLayout::input(nn.space, cut, static_cast<int>(i));
  const double bytes = local_elements(t, want) * element_bytes(t);
  const TensorFacts& facts = ng_.facts(t);
  if (!on_chip(facts)) local_bytes += bytes;
  if (!facts.parameter && !facts.constant && !facts.weight_derived) w.buffer_bytes += bytes;
  // A fused attention's mask (input 3) gets no gradient; its sinks (input 4) do.
  const bool differentiable = train && needs_gradient(t) && !(nn.kind == OpKind::attention && i == 3);
  if (differentiable) ++gradient_inputs;
  if (old && !(*dirty)[t]) {
    const auto [fwd_begin, bwd_begin] = i == 0 ? std::pair<int, int>{0, 0} : old_ends_[i - 1];
    const auto [fwd_end, bwd_end] = old_ends_[i];
    w.fwd_comm.insert(w.fwd_comm.end(), old->fwd_comm.begin() + fwd_begin, old->fwd_comm.begin() + fwd_end);
    w.bwd_comm.insert(w.bwd_comm.end(), old->bwd_comm.begin() + bwd_begin, old->bwd_comm.begin() + bwd_end);
    return;
  }
  const auto& have = produced_sharding(t);
  if (!have) return;
  // Context parallelism's K and V: passed around a ring while the blocks compute.
  const bool ring = nn.kind == OpKind::attention && (i == 1 || i == 2) &&
                    plan_.context_parallel_comm == ContextParallelComm::ring;
  // Tensor-parallel communication overlap (the stack's): the collectives feeding a GEMM or
  // leaving one run in chunks under it (Megatron's userbuffers, async TP).
  const NodeId producer = graph_.tensor(t).producer;
  // TP communication overlap pipelines the gathers and reduce-scatters beside a GEMM, not
  // the expert dispatch's all-to-all.
  const bool beside_gemm = cluster_.stack.overlap_tp_comm &&
                           (nn.kind == OpKind::gemm || (producer != kNone && ng_.node(producer).kind == OpKind::gemm));
  const RoutedTokens routed = routed_tokens(w.node, t);
  // Combined 1F1B (Plan::moe_comm_overlap): the expert exchanges beside the adjacent micro-batch.
  const bool beside_microbatch = plan_.moe_comm_overlap && exchanged_routing_node(w.node, t) != kNone;
  const auto place = [&](CommOp& op) {
    op.overlapped = ring || (beside_gemm && op.kind != hardware::Collective::all_to_all);
    op.beside_microbatch = beside_microbatch && op.kind == hardware::Collective::all_to_all;
    deduplicate(op, routed);
    scale_routed_comm(op, t);
  };
  if (first_delivery(state_.delivered[t], want) && !(*have == want))
    for (auto& op : redistribute(t, have->sharding(), want.sharding())) {
      place(op);
      w.fwd_comm.push_back(std::move(op));
    }
  // Gradients arriving in the same layout from several consumers are summed locally
  // first (Q, K and V share their input): one redistribution.
  // A weight-derived tensor's gradient keeps its partial sums: the parameter's gradient
  // reduction (once per step) sums them (ParameterUses::derived_uses).
  if (differentiable) {
    const OperandLayout grad = OperandLayout::input_gradient(nn.space, cut, static_cast<int>(i));
    const bool keeps_partial = facts.weight_derived;
    if (first_delivery(state_.delivered_gradients[t], grad) &&
        !((keeps_partial || grad.partial_axes() == 0) && grad.same_split(*have)))
      for (auto& op : redistribute(t, grad.sharding(),
                                   keeps_partial ? with_partial(have->sharding(), grad.sharding()) : without_partial(have->sharding()))) {
        place(op);
        w.bwd_comm.push_back(std::move(op));
      }
  }
}

OpWork Analyzer::op_work(NodeId id, std::size_t position, bool train, const OpWork* old,
               const std::vector<char>* dirty) {
  check_divisible(id);
  const Node& node = graph_.node(id);
  const NumericNode& nn = ng_.node(id);
  const NodeCut& cut = plan_.node_cuts[id];
  OpWork w;
  w.node = id;
  w.stage = plan_.stage_of_node[id];
  w.ways = cut_ways(cut, mesh_);
  w.fwd_flops = nn.flops.at(batch_) / w.ways;
  if (!cut.padded_extents.empty()) w.fwd_flops *= loop_padding(id);
  double local_bytes = 0;
  int gradient_inputs = 0;
  const std::size_t base = static_cast<std::size_t>(state_.input_base[position]);
  if (old) old_ends_.assign(state_.comm_ends.begin() + base, state_.comm_ends.begin() + base + node.inputs.size());
  else state_.comm_ends.resize(static_cast<std::size_t>(state_.input_base.back()));
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    input_work(w, node, nn, cut, i, train, old, dirty, local_bytes, gradient_inputs);
    state_.comm_ends[base + i] = {static_cast<int>(w.fwd_comm.size()), static_cast<int>(w.bwd_comm.size())};
  }
  for (std::size_t o = 0; o < node.outputs.size() && o < nn.space.output_dims.size(); ++o) {
    const TensorId t = node.outputs[o];
    if (t == kNone) continue;
    const OperandLayout out = OperandLayout::output(nn.space, cut, static_cast<int>(o));
    const double bytes = local_elements(t, out) * element_bytes(t);
    if (!on_chip(ng_.facts(t))) local_bytes += bytes;
    w.buffer_bytes += bytes;
    // In training a graph output feeds the loss, which the stacks compute on an fp32 copy
    // (a language model's logits: StackMemory::loss_per_logit bytes each in all).
    if (train && ng_.facts(t).graph_output && ng_.facts(t).floating)
      w.buffer_bytes += local_elements(t, out) * std::max(0.0, cluster_.stack.memory.loss_per_logit - element_bytes(t));
    // A partial graph output is summed where it is produced.
    if (ng_.facts(t).graph_output && out.partial_axes() != 0)
      for (auto& op : redistribute(t, out.sharding(), without_partial(out.sharding()))) w.fwd_comm.push_back(std::move(op));
  }
  record_outputs(id);
  w.fwd_bytes = local_bytes;
  const hardware::Precision precision = kernel_precision(id);
  const double kernel_factor = nn.expert_gemm ? cluster_.device.grouped_gemm_factor : 1;
  w.fwd_seconds = cluster_.device.kernel_seconds(precision, w.fwd_flops, w.fwd_bytes, kernel_factor);
  if (train) {
    // One gradient per operand that needs one, each as costly as the forward.
    w.bwd_flops = w.fwd_flops * gradient_inputs;
    w.bwd_bytes = gradient_inputs > 0 ? w.fwd_bytes * (1 + gradient_inputs) : 0;
    w.bwd_seconds =
        gradient_inputs > 0 ? cluster_.device.kernel_seconds(precision, w.bwd_flops, w.bwd_bytes, kernel_factor) : 0;
  }
  if (low_precision_gemm(id)) add_quantization(w, node, nn, cut, train);
  if (nn.kind == OpKind::attention) price_attention(w, nn, cut, train && gradient_inputs > 0);
  if (nn.no_kernel) w.fwd_seconds = w.bwd_seconds = 0;
  scale_routed_work(w, node, nn, cut);
  return w;
}

void Analyzer::add_quantization(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut, bool train) const {
  double inputs = 0, outputs = 0;
  for (std::size_t i = 0; i < node.inputs.size() && i < nn.space.input_dims.size(); ++i) {
    const TensorId t = node.inputs[i];
    if (t == kNone || ng_.facts(t).parameter || ng_.facts(t).weight_derived || ng_.facts(t).constant) continue;
    inputs += local_elements(t, OperandLayout::input(nn.space, cut, static_cast<int>(i)));
  }
  for (std::size_t o = 0; o < node.outputs.size() && o < nn.space.output_dims.size(); ++o)
    if (node.outputs[o] != kNone) outputs += local_elements(node.outputs[o], OperandLayout::output(nn.space, cut, static_cast<int>(o)));
  const double bandwidth = cluster_.device.hbm_bandwidth;
  w.fwd_seconds += inputs * quantization_bytes() / bandwidth;
  if (train && w.bwd_seconds > 0) w.bwd_seconds += outputs * quantization_bytes() / bandwidth;
}

void Analyzer::price_attention(OpWork& w, const NumericNode& nn, const NodeCut& cut, bool backward) const {
  const double query_ways =
      nn.query_loop < static_cast<int>(cut.loop_axes.size()) ? ways(cut.loop_axes[nn.query_loop]) : 1;
  const double head_dim = nn.loops.at(nn.head_dim_loop).extent.at(batch_);
  const double seq = nn.loops.at(nn.query_loop).extent.at(batch_) / query_ways;
  const hardware::Device& device = cluster_.device;
  const hardware::Precision precision = kernel_precision(w.node);
  w.fwd_seconds = device.attention_seconds(precision, w.fwd_flops, w.fwd_bytes, head_dim, seq, false);
  if (!backward) return;
  w.bwd_flops = 2.5 * w.fwd_flops;
  w.bwd_bytes = 2 * w.fwd_bytes;
  w.bwd_seconds = device.attention_seconds(precision, w.bwd_flops, w.bwd_bytes, head_dim, seq, true);
}

}  // namespace symtensor::compiler::analyzer_internal
