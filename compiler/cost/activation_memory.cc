#include "compiler/cost/analyzer.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/cost/interleaved_pipeline.h"
#include "compiler/cost/saved_activations.h"

namespace symtensor::compiler::analyzer_internal {

bool Analyzer::recomputed(NodeId id) const {
  if (layer_recompute()) return in_recomputed_layer_[id];
  // Full recomputation re-runs the layers; the operators outside them (embedding, final
  // norm, head) keep their tensors (layer_checkpoints) and are not run again.
  if (plan_.recompute == RecomputePolicy::full && ng_.num_layers() > 0) return ng_.node_layers()[id] >= 0;
  // The stack's op-level selective policy re-runs a layer but the operators whose outputs it keeps.
  if (op_level_selective()) return ng_.node_layers()[id] >= 0 && !ng_.keeps_outputs_under_op_policy(id);
  return plan_.recompute == RecomputePolicy::full ||
         (plan_.recompute == RecomputePolicy::selective && ng_.node(id).quadratic_output);
}

bool Analyzer::op_level_selective() const {
  return plan_.recompute == RecomputePolicy::selective && ng_.num_layers() > 0 &&
         cluster_.stack.selective_recompute == hardware::SelectiveRecompute::every_other_matmul;
}

void Analyzer::mark_recomputed_layers() {
  const int stages = plan_.pipeline_stages();
  if (static_cast<int>(plan_.recompute_layers.size()) != stages)
    throw std::runtime_error("plan: recompute_layers has " + std::to_string(plan_.recompute_layers.size()) +
                             " counts for " + std::to_string(stages) + " pipeline stages");
  PlanAnalyzer::State::LayerOrdinals& made = state_.layer_ordinals;
  if (made.stages != stages || made.stage_of_node != plan_.stage_of_node) {
    made.ordinals = stage_layer_ordinals(ng_, plan_);
    made.stages = stages;
    made.stage_of_node = plan_.stage_of_node;
  }
  const std::vector<int>& ordinals = made.ordinals;
  in_recomputed_layer_.assign(graph_.nodes().size(), 0);
  for (NodeId id = 0; id < static_cast<NodeId>(ordinals.size()); ++id)
    in_recomputed_layer_[id] = ordinals[id] >= 0 && ordinals[id] < plan_.recompute_layers[plan_.stage_of_node[id]];
}

void Analyzer::saved_activations(std::vector<double>& per_stage, std::vector<double>* by_node,
                                 Offloaded* offloaded) const {
  if (plan_.offload_layers == 0) offloaded = nullptr;
  if (offloaded) {
    if (plan_.offload_layers >= ng_.num_layers())
      throw std::runtime_error(fmt::format("plan: offload_layers {} must be less than the model's {} layers",
                                           plan_.offload_layers, ng_.num_layers()));
    offloaded->bytes.assign(plan_.offload_layers, 0.0);
    offloaded->holder.assign(plan_.offload_layers, kNone);
  }
  if (!layer_recompute()) {
    add_saved(plan_.recompute == RecomputePolicy::full ? ng_.layer_checkpoints()
              : op_level_selective()                   ? ng_.op_checkpoints()
                                                       : ng_.saved_tensors(),
              nullptr, per_stage, by_node, offloaded);
  } else {
    auto kept = [&](const SavedTensor& s, NodeId holder) {
      return !in_recomputed_layer_[holder] || read_from_outside_its_layer(ng_, s, holder);
    };
    add_saved(ng_.saved_tensors(), kept, per_stage, by_node, offloaded);
    // The inputs of recomputed layers that no operator saves (layer_checkpoints).
    add_saved(ng_.layer_checkpoints(),
              [&](const SavedTensor& s, NodeId holder) { return s.layer_input_only && in_recomputed_layer_[holder]; },
              per_stage, by_node, offloaded);
  }
  if (!offloaded || offloaded->bytes.empty()) return;
  add_offload_exposure(*offloaded);
  const auto transit = std::max_element(offloaded->bytes.begin(), offloaded->bytes.end());
  const NodeId holder = offloaded->holder[transit - offloaded->bytes.begin()];
  if (holder == kNone) return;
  per_stage[plan_.stage_of_node[holder]] += *transit;
  if (by_node) (*by_node)[holder] += *transit;
}

void Analyzer::add_offload_exposure(Offloaded& offloaded) const {
  const int layers = ng_.num_layers();
  std::vector<double> fwd(layers, 0.0), bwd(layers, 0.0);
  for (const OpWork& w : state_.analysis.ops) {
    const int l = ng_.node_layers()[w.node];
    if (l < 0) continue;
    fwd[l] += w.fwd_seconds;
    bwd[l] += w.bwd_seconds + (recomputed(w.node) ? w.fwd_seconds : 0);
  }
  const double bandwidth = cluster_.device.host_link_bandwidth;
  if (bandwidth <= 0)
    throw std::runtime_error("plan: offload_layers needs the profile's host link (device.host_link_gb_per_s)");
  offloaded.fwd_seconds.assign(offloaded.bytes.size(), 0.0);
  offloaded.bwd_seconds.assign(offloaded.bytes.size(), 0.0);
  for (std::size_t l = 0; l < offloaded.bytes.size(); ++l) {
    const double copy = offloaded.bytes[l] / bandwidth;
    const std::size_t next = std::min<std::size_t>(l + 1, layers - 1);
    offloaded.fwd_seconds[l] = std::max(0.0, copy - fwd[next]);
    offloaded.bwd_seconds[l] = std::max(0.0, copy - bwd[next]);
  }
}

double Analyzer::saved_elements(const SavedTensor& s, NodeId holder) const {
  // The recomputation policies price their saved tensors from the same operator work.
  auto& made = state_.sums.saved_elements;
  if (made.empty()) made.assign(graph_.tensors().size(), {kNone, 0.0});
  auto& [made_holder, made_elements] = made[s.tensor];
  if (made_holder == holder) return made_elements;
  made_holder = holder;
  made_elements = saved_elements_of(s, holder);
  return made_elements;
}

double Analyzer::saved_elements_of(const SavedTensor& s, NodeId holder) const {
  const bool produced = produced_sharding(s.tensor).has_value() && produced_sharding(s.tensor)->partial_axes() == 0;
  double elements = produced ? state_.produced_elements[s.tensor] : std::numeric_limits<double>::infinity();
  const Node& node = graph_.node(holder);
  const NumericNode& nn = ng_.node(holder);
  for (std::size_t i = 0; i < node.inputs.size() && i < nn.space.input_dims.size(); ++i)
    if (node.inputs[i] == s.tensor)
      elements = std::min(elements, local_elements(s.tensor, OperandLayout::input(nn.space, plan_.node_cuts[holder], static_cast<int>(i))));
  if (std::isinf(elements)) elements = ng_.tensor_elements(s.tensor).at(batch_) / cut_ways(plan_.node_cuts[holder], mesh_);
  return elements;
}

void Analyzer::add_saved(const std::vector<SavedTensor>& saved, const std::function<bool(const SavedTensor&, NodeId)>& kept,
               std::vector<double>& per_stage, std::vector<double>* by_node, Offloaded* offloaded) const {
  for (const SavedTensor& s : saved) {
    if (plan_.recompute == RecomputePolicy::selective && s.quadratic_in_sequence) continue;
    const NodeId holder = saved_tensor_holder(graph_, s);
    if (holder == kNone) continue;
    if (kept && !kept(s, holder)) continue;
    if (s.view_of_kept && !low_precision_gemm(holder)) continue;
    if (ng_.facts(s.tensor).routing_table) continue;  // index-sized
    const double elements = saved_elements(s, holder);
    // The busiest expert rank keeps routed_load times the routed tokens the experts save.
    const double load = ng_.node(holder).routed_capacity == kNotRouted ? 1 : routed_load(ng_.facts(s.tensor).routed_capacity);
    const double bytes =
        load * elements * (s.mask ? 1.0 : low_precision_gemm(holder) ? low_precision_copy_bytes() / 2 : activation_bytes_);
    const int layer = ng_.node_layers()[holder];
    if (offloaded && layer >= 0 && layer < static_cast<int>(offloaded->bytes.size())) {
      offloaded->bytes[layer] += bytes;
      if (offloaded->holder[layer] == kNone) offloaded->holder[layer] = holder;
      continue;
    }
    per_stage[plan_.stage_of_node[holder]] += bytes;
    if (by_node) (*by_node)[holder] += bytes;
  }
}

void Analyzer::add_activations(PlanAnalysis& a, bool train) {
  if (!train) {
    inference_weights(a.stage_memory);
    return;
  }
  std::vector<OpWork*> by_node(graph_.nodes().size(), nullptr);
  for (auto& w : a.ops) by_node[w.node] = &w;
  std::vector<double> per_stage(a.stage_memory.size(), 0.0), saved_by_node(graph_.nodes().size(), 0.0);
  Offloaded offloaded;
  saved_activations(per_stage, &saved_by_node, &offloaded);
  for (NodeId n = 0; n < static_cast<NodeId>(by_node.size()); ++n)
    if (by_node[n]) by_node[n]->saved_bytes += saved_by_node[n];
  // What is not kept is recomputed in the backward pass.
  for (auto& w : a.ops) w.recomputed = recomputed(w.node);
  for (std::size_t l = 0; l < offloaded.bytes.size(); ++l)
    if (offloaded.holder[l] != kNone)
      by_node[offloaded.holder[l]]->offload_fwd_seconds += offloaded.fwd_seconds[l],
          by_node[offloaded.holder[l]]->offload_bwd_seconds += offloaded.bwd_seconds[l];
  const std::vector<std::vector<SavedPosition>> positions =
      chunked_in_flight() ? saved_positions(a.ops, saved_by_node) : std::vector<std::vector<SavedPosition>>{};
  for (std::size_t s = 0; s < a.stage_memory.size(); ++s) {
    a.stage_memory[s].activations_per_micro_batch = per_stage[s];
    a.stage_memory[s].micro_batches_in_flight =
        positions.empty() ? micro_batches_in_flight(plan_, static_cast<int>(s)) : in_flight(static_cast<int>(s), positions[s]);
  }
}

bool Analyzer::chunked_in_flight() const {
  const int stages = plan_.pipeline_stages();
  return plan_.mode == ExecutionMode::train && plan_.schedule == Schedule::interleaved_1f1b && stages > 1 &&
         plan_.virtual_stages > 1 && plan_.micro_batches % stages == 0;
}

std::vector<std::vector<SavedPosition>> Analyzer::saved_positions(const std::vector<OpWork>& ops,
                                                                  const std::vector<double>& saved_by_node) const {
  const int stages = std::max(plan_.pipeline_stages(), 1);
  const std::vector<double> fraction = forward_flops_fractions(ops, stages);
  std::vector<std::vector<SavedPosition>> positions(stages);
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (const double bytes = saved_by_node[ops[i].node]; bytes != 0) positions[ops[i].stage].push_back({fraction[i], bytes});
  return positions;
}

double Analyzer::in_flight(int s, const std::vector<SavedPosition>& positions) const {
  const std::vector<double> bytes = chunk_activations(positions, plan_.virtual_stages);
  double per_micro_batch = 0;
  for (double b : bytes) per_micro_batch += b;
  return per_micro_batch > 0 ? interleaved_peak_activations(plan_, s, bytes) / per_micro_batch
                             : micro_batches_in_flight(plan_, s);
}

void Analyzer::add_pipeline_transfers(std::vector<double>& p2p_bytes) const {
  if (p2p_bytes.empty()) return;
  for (TensorId t = 0; t < static_cast<TensorId>(graph_.tensors().size()); ++t) {
    const Tensor& tensor = graph_.tensor(t);
    if (tensor.producer == kNone) continue;
    const int from = plan_.stage_of_node[tensor.producer];
    int to = from;
    for (NodeId c : tensor.consumers) to = std::max(to, plan_.stage_of_node[c]);
    if (to == from) continue;
    // A value its producer's iteration space does not describe (an opaque operator's, a
    // secondary output) crosses whole.
    const bool produced = produced_sharding(t).has_value();
    const double elements = produced ? state_.produced_elements[t] : ng_.tensor_elements(t).at(batch_);
    const double bytes = elements * element_bytes(t);
    for (int s = from; s < to; ++s) p2p_bytes[s] += bytes;
  }
}

}  // namespace symtensor::compiler::analyzer_internal
