#include "compiler/cost/analyzer.h"

#include <stdexcept>
#include <string>

namespace symtensor::compiler::analyzer_internal {

const PlanAnalysis& Analyzer::run() {
  const bool train = prepare_operator_work();
  copy_pending_collectives();
  const int stages = plan_.pipeline_stages();
  PlanAnalysis& a = state_.analysis;
  a.stage_memory.assign(stages, StageMemory{});
  a.p2p_bytes.assign(std::max(stages - 1, 0), 0.0);
  a.device_memory = cluster_.device.usable_memory();
  a.state_bytes = cluster_.stack.memory;
  a.moe_load = moe_load(ng_, plan_.moe_load_imbalance);
  if (a.moe_load.moe()) a.moe_load.expert_parallel = expert_parallel();
  for (OpWork& w : a.ops) {
    w.saved_bytes = 0, w.recomputed = false, w.offload_fwd_seconds = w.offload_bwd_seconds = 0;  // add_activations' part
    add_working_buffers(a.stage_memory[w.stage], w);
  }
  for (StageMemory& m : a.stage_memory) m.reserve = cluster_.device.memory_reserve_bytes;
  if (train) add_parameters(a);
  else a.params.clear();
  add_activations(a, train);
  add_pipeline_transfers(a.p2p_bytes);
  a.optimizer_seconds_per_stage = train ? optimizer_seconds(a.stage_memory, cluster_.device.hbm_bandwidth) : 0;
  return a;
}

const StageTotals& Analyzer::totals() {
  const bool train = prepare_operator_work();
  const int stages = plan_.pipeline_stages();
  PlanAnalyzer::State::Sums& sums = state_.sums;
  const int recompute = train ? static_cast<int>(plan_.recompute) : 0;
  const bool by_layers = train && layer_recompute();
  if (sums.offload_layers != plan_.offload_layers) {
    for (auto& o : sums.operators) o.reset();
    sums.layer_operators.reset();
    sums.offload_layers = plan_.offload_layers;
  }
  if (by_layers && sums.layer_recompute != plan_.recompute_layers) sums.layer_operators.reset();
  auto& ops = by_layers ? sums.layer_operators : sums.operators.at(recompute);
  if (by_layers) sums.layer_recompute = plan_.recompute_layers;
  if (!ops) {
    // Made whole before it is kept: a throw (saved_activations' offloading) leaves none.
    PlanAnalyzer::State::OperatorSums made(stages);
    const std::vector<OpWork>& work = state_.analysis.ops;
    if (sums.exposures.size() != work.size() || sums.buffers.size() != static_cast<std::size_t>(stages)) {
      sums.exposures.clear();
      sums.timed.clear();
      sums.buffers.assign(stages, StageMemory{});
      const std::vector<int>& twin_of = state_.collectives_of_twin;
      for (std::size_t k = 0; k < work.size(); ++k) {
        const OpWork& w = work[k];
        // A copy's collectives are its twin's (priced before it), on its own operands: they
        // expose the same.
        const int twin = k < twin_of.size() ? twin_of[k] : -1;
        const PlanAnalyzer::State::OpExposure x = twin >= 0 && static_cast<std::size_t>(twin) < k
                                                      ? sums.exposures[static_cast<std::size_t>(twin)]
                                                      : PlanAnalyzer::State::OpExposure::of(w);
        sums.exposures.push_back(x);
        add_working_buffers(sums.buffers[w.stage], w);
        if (PlanAnalyzer::State::OperatorSums::adds_time(w, x)) sums.timed.push_back(k);
      }
    }
    made.buffers = sums.buffers;
    for (std::size_t k : sums.timed) made.add_timed(work[k], sums.exposures[k], train && recomputed(work[k].node), train);
    if (train) {
      Offloaded offloaded;
      saved_activations(made.activations, nullptr, &offloaded);
      for (std::size_t l = 0; l < offloaded.bytes.size(); ++l)
        if (const NodeId holder = offloaded.holder[l]; holder != kNone)
          made.fwd_compute[plan_.stage_of_node[holder]] += offloaded.fwd_seconds[l],
              made.bwd_compute[plan_.stage_of_node[holder]] += offloaded.bwd_seconds[l];
    }
    ops.emplace(std::move(made));
  }
  const std::vector<int> zero_by_stage = plan_.effective_zero_stages();
  const bool by_stage = train && !plan_.stage_zero_stages.empty();
  if (by_stage && sums.stage_zero != zero_by_stage) sums.stage_parameters.reset();
  auto& params = by_stage ? sums.stage_parameters : sums.parameters.at(train ? zero_by_stage.at(0) : 0);
  if (by_stage) sums.stage_zero = zero_by_stage;
  if (!params) {
    params.emplace(stages);
    if (train) {
      for (PlanAnalyzer::State::ParamGroup& g : state_.param_groups) {
        const int zero = zero_by_stage.at(g.stage);
        const ParamPrices p = prices(g, zero);
        // ZeRO-2/3: the shard group's reduce-scatter each micro-batch, the replicas' all-reduce once.
        const bool sharded_grads = zero >= 2;
        params->add(g.stage, g.unit, g.local_elements, !g.shard_axes.empty(), sharded_grads ? p.replica_sync : p.grad_sync,
                    p.gather, p.regather, sharded_grads ? p.shard_sync : 0);
        add_model_state(params->memory[g.stage], cluster_.stack.memory, g.local_elements, zero, g.ways, g.extra_weight_bytes);
      }
      params->finish(zero_by_stage, params->memory);
    } else {
      inference_weights(params->memory);
    }
  }
  if (!sums.p2p_bytes) {
    sums.p2p_bytes.emplace(std::max(stages - 1, 0), 0.0);
    add_pipeline_transfers(*sums.p2p_bytes);
  }
  // Made when a plan needs them (an interleaved one), under the policy the sums were made for.
  const bool chunked = train && chunked_in_flight();
  if (chunked && !ops->saved_positions) {
    std::vector<double> per_stage(stages, 0.0), saved_by_node(graph_.nodes().size(), 0.0);
    Offloaded offloaded;
    saved_activations(per_stage, &saved_by_node, &offloaded);
    ops->saved_positions = saved_positions(state_.analysis.ops, saved_by_node);
  }
  std::vector<StageMemory> memory = params->memory;
  for (int s = 0; s < stages; ++s) {
    memory[s].activations_per_micro_batch = ops->activations[s];
    memory[s].micro_batches_in_flight = chunked ? in_flight(s, ops->saved_positions->at(s))
                                        : train ? micro_batches_in_flight(plan_, s)
                                                : 1;
    memory[s].working_buffers = ops->buffers[s].working_buffers;
    memory[s].working_buffers_node = ops->buffers[s].working_buffers_node;
    memory[s].reserve = cluster_.device.memory_reserve_bytes;
  }
  const double optimizer_s = train ? optimizer_seconds(memory, cluster_.device.hbm_bandwidth) : 0;
  state_.totals = assemble_totals(*ops, *params, *sums.p2p_bytes, memory, optimizer_s, plan_, cluster_.device.usable_memory());
  return state_.totals;
}

bool Analyzer::prepare_operator_work() {
  // A plan with the operator work of one of the last few passed the same checks then.
  bool reuse = state_.ops_plan && same_operator_work(*state_.ops_plan, plan_);
  for (std::size_t i = 0; !reuse && i < state_.kept.size(); ++i)
    if (state_.kept[i].ops_plan && same_operator_work(*state_.kept[i].ops_plan, plan_)) {
      state_.take_kept(i);
      reuse = true;
    }
  const bool train = plan_.mode == ExecutionMode::train;
  check_moe_load_imbalance(plan_.moe_load_imbalance, "plan: moe_load_imbalance");
  const double global_batch = plan_.global_batch > 0 ? plan_.global_batch : ng_.batch_binding();
  if (ng_.batch_symbol() && global_batch <= 0)
    throw std::runtime_error("the batch size is not known: bind it (--bind batch=N)");
  if (plan_.micro_batches < 1) throw std::runtime_error("plan: micro_batches must be at least 1");
  batch_ = ng_.batch_symbol() ? global_batch / plan_.micro_batches : 0;
  activation_bytes_ = bytes_of(plan_.precision);
  if (reuse) {
    // Another HSDP split of the same cuts: the parameters' groups again, their sums anew.
    if (state_.ops_plan->replicate_axes != plan_.replicate_axes) {
      state_.ops_plan->replicate_axes = plan_.replicate_axes;
      if (train) group_parameters();
      for (auto& p : state_.sums.parameters) p.reset();
      state_.sums.stage_parameters.reset();
    }
    return train;
  }
  if (update_operator_work(train)) {
    state_.sums = {};
    return train;
  }
  check_plan();
  if (state_.ops_plan) state_.keep_current();  // the last plan's work is kept
  state_.sums = {};
  const std::size_t tensors = graph_.tensors().size();
  state_.produced.resize(tensors);
  state_.produced_elements.resize(tensors);
  state_.produced_copy_of.assign(tensors, kNone);
  state_.delivered.resize(tensors);
  state_.delivered_gradients.resize(tensors);
  for (std::size_t t = 0; t < tensors; ++t) {
    state_.produced[t].reset();
    state_.delivered[t].clear();
    state_.delivered_gradients[t].clear();
  }
  // The kept copy of the plan is what the produced layouts point into: they stay
  // valid for the plans that reuse this one's operator work.
  state_.ops_plan = plan_;
  PlanAnalysis& a = state_.analysis;
  const auto& order = ng_.topological_order();
  // One slot per operator, written in topological order; a slot keeps the storage of the
  // work it held before (the plan analysed least recently), which a twin's copy reuses.
  a.ops.resize(order.size());
  state_.collectives_of_twin.assign(order.size(), -1);
  index_inputs();
  if (state_.reuse_twins) find_twins();
  if (!replay_twins(train))
    for (auto& priced : state_.twins) priced.clear();
  try {
    for (std::size_t k = 0; k < order.size(); ++k)
      if (!copy_twin(order[k], k, train)) a.ops[k] = op_work(order[k], k, train, nullptr);
    if (train) group_parameters();
  } catch (...) {
    state_.ops_plan.reset();
    state_.twin_replay.stamp = 0;
    a.ops.clear();
    state_.collectives_of_twin.clear();
    throw;
  }
  return train;
}

bool Analyzer::replay_twins(bool train) {
  PlanAnalyzer::State::TwinReplay& r = state_.twin_replay;
  r.replaying = state_.reuse_twins && plan_.cuts_stamp != 0 && r.stamp == plan_.cuts_stamp && r.train == train &&
                r.precision == plan_.precision && r.pipeline_axis == plan_.pipeline_axis &&
                r.mesh_factors == plan_.mesh_factors && r.context_parallel_comm == plan_.context_parallel_comm &&
                r.moe_dispatcher == plan_.moe_dispatcher && r.moe_comm_overlap == plan_.moe_comm_overlap &&
                r.moe_load_imbalance == plan_.moe_load_imbalance;
  if (r.replaying) {
    ++r.replays;
    return true;
  }
  r.stamp = state_.reuse_twins ? plan_.cuts_stamp : 0;
  r.train = train;
  r.precision = plan_.precision;
  r.pipeline_axis = plan_.pipeline_axis;
  r.mesh_factors = plan_.mesh_factors;
  r.context_parallel_comm = plan_.context_parallel_comm;
  r.moe_dispatcher = plan_.moe_dispatcher;
  r.moe_comm_overlap = plan_.moe_comm_overlap;
  r.moe_load_imbalance = plan_.moe_load_imbalance;
  if (r.stamp != 0) r.twin_of.assign(ng_.topological_order().size(), -1);
  else r.twin_of.clear();
  return false;
}

void Analyzer::index_inputs() {
  if (!state_.input_base.empty()) return;
  int base = 0;
  for (NodeId id : ng_.topological_order()) {
    state_.input_base.push_back(base);
    base += static_cast<int>(graph_.node(id).inputs.size());
  }
  state_.input_base.push_back(base);
}

bool Analyzer::update_operator_work(bool train) {
  // The kept plan passed check_plan, so a plan of the same context has the graph's sizes.
  if (!state_.ops_plan || !same_operator_context(*state_.ops_plan, plan_)) return false;
  Plan& kept = *state_.ops_plan;
  const std::size_t n = graph_.nodes().size();
  std::vector<NodeId> changed;
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id)
    if (!(kept.node_cuts[id] == plan_.node_cuts[id])) changed.push_back(id);
  // Under a skewed routing load every routed operator scales by whether any expert GEMM is cut
  // over devices (expert_parallel()): a changed expert GEMM may turn that for operators far
  // from it (gpt-oss's clamped GLU chain), whose cuts did not change.
  if (plan_.moe_load_imbalance != 1)
    for (NodeId id : changed)
      if (ng_.node(id).expert_gemm) return false;
  std::vector<char> redo(n, 0), dirty(graph_.tensors().size(), 0);
  std::size_t redone = 0;
  auto mark = [&](NodeId id) {
    if (!redo[id]) redo[id] = 1, ++redone;
  };
  for (NodeId id : changed) {
    mark(id);
    const Node& node = graph_.node(id);
    for (const auto* tensors : {&node.inputs, &node.outputs})
      for (TensorId t : *tensors)
        if (t != kNone && !dirty[t]) {
          dirty[t] = 1;
          for (NodeId c : graph_.tensor(t).consumers) mark(c);
        }
  }
  if (2 * redone > n) return false;
  // The operators priced again read their kept collectives, and a copy's twin may be one.
  copy_pending_collectives();
  check_sizes_and_stages();
  for (NodeId id : changed) check_node(id);
  // The kept plan takes the new cuts in place: the produced layouts point at its NodeCut
  // objects, which stay where they are.
  for (NodeId id : changed) kept.node_cuts[id] = plan_.node_cuts[id];
  kept.stage_of_node = plan_.stage_of_node;
  kept.cuts_stamp = plan_.cuts_stamp;  // its cuts are now the plan's
  kept.replicate_axes = plan_.replicate_axes;
  for (std::size_t t = 0; t < dirty.size(); ++t)
    if (dirty[t]) state_.delivered[t].clear(), state_.delivered_gradients[t].clear();
  PlanAnalysis& a = state_.analysis;
  const auto& order = ng_.topological_order();
  try {
    for (std::size_t k = 0; k < order.size(); ++k) {
      const NodeId id = order[k];
      if (!redo[id]) {
        a.ops[k].stage = plan_.stage_of_node[id];
        continue;
      }
      OpWork old = std::move(a.ops[k]);
      a.ops[k] = op_work(id, k, train, &old, &dirty);
    }
    if (train) group_parameters();
  } catch (...) {
    state_.ops_plan.reset();
    a.ops.clear();
    throw;
  }
  return true;
}

}  // namespace symtensor::compiler::analyzer_internal
