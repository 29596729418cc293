#include "compiler/cost/analyzer.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace symtensor::compiler::analyzer_internal {

void Analyzer::find_gather_units() {
  if (!state_.param_units.empty() || ng_.parameters().empty()) return;
  // The layers' units first, then one per operator outside them (its parameters gathered
  // together, as the lowering does).
  int units = ng_.num_layers();
  std::map<NodeId, int> outside;
  for (const ParameterUses& uses : ng_.parameters()) {
    const NodeId first = uses.uses.front().first;
    const int layer = ng_.node_layers()[first];
    if (layer >= 0) {
      state_.param_units.push_back(layer);
      continue;
    }
    const auto [it, added] = outside.try_emplace(first, units);
    if (added) ++units;
    state_.param_units.push_back(it->second);
  }
}

void Analyzer::group_parameters() {
  find_gather_units();
  // Refilled in place: each group's vectors keep their storage (a search analyses hundreds of
  // plans from scratch, each with a group per parameter).
  auto& groups = state_.param_groups;
  groups.resize(ng_.parameters().size());
  // The shapes of the few axis sets (ascending ids) the groups span, each made once.
  std::vector<std::pair<std::uint64_t, hardware::GroupShape>> shapes;
  auto shape_of = [&](const std::vector<int>& axes) -> const hardware::GroupShape& {
    std::uint64_t key = 0;
    for (int a : axes) key |= std::uint64_t{1} << a;
    for (const auto& [k, shape] : shapes)
      if (k == key) return shape;
    return shapes.emplace_back(key, mesh_.group_shape(axes)).second;
  };
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const ParameterUses& uses = ng_.parameters()[k];
    const auto [first, first_input] = uses.uses.front();
    std::uint64_t partial = 0;
    for (const auto* slots : {&uses.uses, &uses.derived_uses})
      for (const auto& [c, i] : *slots)
        partial |= OperandLayout::input_gradient(ng_.node(c).space, plan_.node_cuts[c], i).partial_axes();
    PlanAnalyzer::State::ParamGroup& g = groups[k];
    g.tensor = uses.tensor;
    g.unit = state_.param_units[k];
    g.stage = plan_.stage_of_node[first];
    // Split as its first reader holds it; padded where any reader pads it (a tied vocabulary
    // table holds the padded rows whichever reader comes first).
    double padded = 1;
    for (const auto& [c, i] : uses.uses)
      if (!plan_.node_cuts[c].padded_extents.empty())
        padded = std::max(padded, padding(uses.tensor, OperandLayout::input(ng_.node(c).space, plan_.node_cuts[c], i)));
    g.local_elements = ng_.facts(uses.tensor).elements.at(batch_) /
                       OperandLayout::input(ng_.node(first).space, plan_.node_cuts[first], first_input).ways(mesh_) * padded;
    axes_in(partial, g.axes);
    g.shard_axes.clear(), g.replica_axes.clear();
    for (int a : g.axes)
      (std::find(plan_.replicate_axes.begin(), plan_.replicate_axes.end(), a) == plan_.replicate_axes.end() ? g.shard_axes
                                                                                                            : g.replica_axes)
          .push_back(a);
    g.ways = ways(g.shard_axes);
    for (auto [axes, shape] : {std::pair{&g.axes, &g.group}, {&g.shard_axes, &g.shard_group}, {&g.replica_axes, &g.replica_group}})
      if (axes->empty()) shape->ranks_per_level.clear();
      else *shape = shape_of(*axes);
    g.all_reduce_s = g.reduce_scatter_s = g.all_gather_s = g.replica_all_reduce_s = -1;  // priced when asked
    g.extra_weight_bytes = 0;
    g.weight_gather_bytes = cluster_.stack.memory.weight_gather;
    for (const auto& [c, i] : uses.uses)
      if (low_precision_gemm(c) && cluster_.stack.memory.low_precision_copies_kept) {
        // Quantized copies beside the bf16 weights, or instead of them where the stack keeps
        // the compute weights quantized (and gathers one copy).
        const bool quantized_only = cluster_.stack.memory.low_precision_params_for(plan_.precision);
        g.extra_weight_bytes = low_precision_copy_bytes() - (quantized_only ? cluster_.stack.memory.weights : 0);
        if (quantized_only) g.weight_gather_bytes = low_precision_copy_bytes() / 2;
      }
  }
}

Analyzer::ParamPrices Analyzer::prices(PlanAnalyzer::State::ParamGroup& g, int zero) const {
  ParamPrices p;
  if (g.axes.empty()) return p;
  using hardware::Collective;
  const double grad_bytes = g.local_elements * cluster_.stack.memory.gradient_reduce;
  const double weight_bytes = g.local_elements * g.weight_gather_bytes;
  if (zero == 0) {
    p.grad_sync = price(g.group, Collective::all_reduce, grad_bytes, g.all_reduce_s);
    return p;
  }
  // ZeRO-1 and Megatron's distributed optimizer reduce-scatter the gradients to the shards'
  // owners (each updates its shard) and all-gather the weights after the step.
  if (!g.shard_axes.empty()) {
    p.shard_sync = price(g.shard_group, Collective::reduce_scatter, grad_bytes, g.reduce_scatter_s);
    if (zero == 1 || zero == 2) p.regather = price(g.shard_group, Collective::all_gather, weight_bytes, g.all_gather_s);
    if (zero >= 3) p.gather = price(g.shard_group, Collective::all_gather, weight_bytes, g.all_gather_s);
  }
  if (!g.replica_axes.empty())
    p.replica_sync = price(g.replica_group, Collective::all_reduce, grad_bytes / g.ways, g.replica_all_reduce_s);
  p.grad_sync = p.shard_sync + p.replica_sync;
  return p;
}

void Analyzer::add_param_comm(std::vector<CommOp>& ops, bool wanted, double seconds, const PlanAnalyzer::State::ParamGroup& g,
                           hardware::Collective kind, const std::vector<int>& axes, const hardware::GroupShape& group,
                           double bytes) {
  if (!wanted || axes.empty()) return;
  CommOp& op = ops.emplace_back();
  op.kind = kind;
  op.axes = axes;
  op.group = group;
  op.bytes = bytes;
  op.seconds = seconds;
  op.tensor = g.tensor;
}

void Analyzer::add_parameters(PlanAnalysis& a) {
  const std::vector<int> zero_by_stage = plan_.effective_zero_stages();
  a.params.resize(state_.param_groups.size());
  PlanAnalyzer::State::ParameterSums units(static_cast<int>(a.stage_memory.size()));
  for (std::size_t k = 0; k < state_.param_groups.size(); ++k) {
    PlanAnalyzer::State::ParamGroup& g = state_.param_groups[k];
    ParamWork& p = a.params[k];
    p.tensor = g.tensor;
    p.stage = g.stage;
    p.local_elements = g.local_elements;
    p.gather_unit = g.unit;
    const int zero = zero_by_stage.at(g.stage);
    using hardware::Collective;
    const ParamPrices seconds = prices(g, zero);
    const double grad_bytes = g.local_elements * cluster_.stack.memory.gradient_reduce;
    const double weight_bytes = g.local_elements * g.weight_gather_bytes;
    p.grad_sync.clear(), p.regather.clear(), p.gather.clear();
    add_param_comm(p.grad_sync, zero == 0, seconds.grad_sync, g, Collective::all_reduce, g.axes, g.group, grad_bytes);
    add_param_comm(p.grad_sync, zero >= 1, seconds.shard_sync, g, Collective::reduce_scatter, g.shard_axes, g.shard_group,
                   grad_bytes);
    if (zero >= 2 && !p.grad_sync.empty()) p.grad_sync.back().every_micro_batch = true;
    add_param_comm(p.grad_sync, zero >= 1, seconds.replica_sync, g, Collective::all_reduce, g.replica_axes,
                   g.replica_group, grad_bytes / g.ways);
    add_param_comm(p.regather, zero == 1 || zero == 2, seconds.regather, g, Collective::all_gather, g.shard_axes,
                   g.shard_group, weight_bytes);
    add_param_comm(p.gather, zero >= 3, seconds.gather, g, Collective::all_gather, g.shard_axes, g.shard_group, weight_bytes);
    add_model_state(a.stage_memory[g.stage], cluster_.stack.memory, p.local_elements, zero, g.ways, g.extra_weight_bytes);
    units.add(g.stage, g.unit, g.local_elements, !g.shard_axes.empty(), 0, 0, 0);
  }
  units.finish(zero_by_stage, a.stage_memory);
}

void Analyzer::inference_weights(std::vector<StageMemory>& memory) const {
  for (const ParameterUses& uses : ng_.parameters()) {
    const auto [c, i] = uses.uses.front();
    memory[plan_.stage_of_node[c]].parameters +=
        local_elements(uses.tensor, OperandLayout::input(ng_.node(c).space, plan_.node_cuts[c], i)) * activation_bytes_;
  }
}

}  // namespace symtensor::compiler::analyzer_internal
