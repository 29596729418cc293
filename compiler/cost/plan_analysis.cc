#include "compiler/cost/plan_analysis.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

#include "compiler/cost/kernel_precision.h"
#include "compiler/cost/moe_exchange.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/saved_activations.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/sharding/redistribution_memo.h"

namespace symtensor::compiler {

double StageMemory::peak() const {
  return parameters + gradients + optimizer + activations_per_micro_batch * micro_batches_in_flight + working_buffers +
         collective_buffers + reserve;
}

namespace {

// Bytes per parameter of mixed-precision Adam as the stack keeps them (hardware::StackMemory:
// Megatron 2 + 4 + 4 + 8, the ZeRO paper's DeepSpeed 2 + 2 + 4 + 8, FSDP2's fp32 shards
// 4 + 4 + 8), sharded over the data-parallel group N by ZeRO stage: 1 shards the master
// weights and the optimizer's moments, 2 also the gradients, 3 everything.
struct StateBytes {
  double params, grads, optimizer;
};

StateBytes model_state_bytes(const hardware::StackMemory& m, int zero_stage, double n) {
  const double optimizer = m.master_weights + m.optimizer;
  switch (zero_stage) {
    case 0: return {m.weights, m.gradients, optimizer};
    case 1: return {m.weights, m.gradients, optimizer / n};
    case 2: return {m.weights, m.gradients / n, optimizer / n};
    default: return {m.weights / n, m.gradients / n, optimizer / n};
  }
}

void add_working_buffers(StageMemory& m, const OpWork& w) {
  if (w.buffer_bytes > m.working_buffers) m.working_buffers = w.buffer_bytes, m.working_buffers_node = w.node;
}

// `extra_weight_bytes`: per element beside the stack's weights (FP8/FP4 copies), sharded as they are.
void add_model_state(StageMemory& m, const hardware::StackMemory& stack, double local_elements, int zero, double ways,
                     double extra_weight_bytes) {
  const StateBytes b = model_state_bytes(stack, zero, ways);
  m.parameters += local_elements * (b.params + (zero >= 3 ? extra_weight_bytes / ways : extra_weight_bytes));
  m.gradients += local_elements * b.grads;
  m.optimizer += local_elements * b.optimizer;
}

// Adam reads and writes weights, gradients and optimizer state once: bandwidth-bound. The
// slowest stage's step.
double optimizer_seconds(const std::vector<StageMemory>& memory, double hbm_bandwidth) {
  double slowest = 0;
  for (const StageMemory& m : memory) slowest = std::max(slowest, 2 * (m.parameters + m.gradients + m.optimizer) / hbm_bandwidth);
  return slowest;
}

// Micro-batches' worth of activations stage s holds at its peak (StageMemory).
double micro_batches_in_flight(const Plan& plan, int s) {
  const int stages = plan.pipeline_stages();
  const int m = plan.micro_batches;
  switch (plan.schedule) {
    case Schedule::gpipe: return m;
    case Schedule::one_f_one_b: return std::min(m, stages - s);
    case Schedule::interleaved_1f1b: {
      // Megatron-LM's interleaved schedule warms up with 2(p-s-1) + (v-1)p chunk
      // forwards before its first backward, and holds one more chunk in steady state.
      const int v = std::max(plan.virtual_stages, 1);
      const int chunks = std::min(m * v, 2 * (stages - s - 1) + (v - 1) * stages + 1);
      return static_cast<double>(chunks) / v;
    }
  }
  return m;
}

double sum_seconds(const std::vector<CommOp>& ops) {
  double s = 0;
  for (const auto& op : ops) s += op.seconds;
  return s;
}

}  // namespace

// What plans of one graph share, kept between analyses: redistributions planned per mesh
// (a search tries many plans on a few meshes) and priced, and per-tensor scratch reused
// for its capacity.
struct PlanAnalyzer::State {
  // StageTotals in the making: the operators' part (one recomputation policy's) and the
  // parameters' part (one ZeRO stage's), per stage.
  struct OperatorSums {
    std::vector<double> fwd_compute, fwd_comm, bwd_compute, bwd_comm;
    // Exchanges beside the adjacent micro-batch's compute (CommOp::beside_microbatch):
    // what a pass exposes of them is what they take beyond its compute (assemble_totals).
    std::vector<double> fwd_beside, bwd_beside;
    std::vector<double> activations;  // saved for backward, per micro-batch
    std::vector<StageMemory> buffers;  // working_buffers only
    double model_flops = 0, hardware_flops = 0;  // per micro-batch

    explicit OperatorSums(int stages)
        : fwd_compute(stages), fwd_comm(stages), bwd_compute(stages), bwd_comm(stages), fwd_beside(stages),
          bwd_beside(stages), activations(stages), buffers(stages) {}
    void add(const OpWork& w, bool recomputed, bool train) {
      add_working_buffers(buffers[w.stage], w);
      fwd_compute[w.stage] += w.fwd_seconds;
      fwd_comm[w.stage] += exposed_seconds(w.fwd_comm, w.fwd_seconds);
      fwd_beside[w.stage] += beside_microbatch_seconds(w.fwd_comm);
      if (!train) {
        model_flops += w.fwd_flops * w.ways;
        hardware_flops = model_flops;
        return;
      }
      bwd_compute[w.stage] += w.bwd_seconds + (recomputed ? w.fwd_seconds : 0);
      bwd_comm[w.stage] += exposed_seconds(w.bwd_comm, w.bwd_seconds) + (recomputed ? exposed_seconds(w.fwd_comm, w.fwd_seconds) : 0);
      bwd_beside[w.stage] += beside_microbatch_seconds(w.bwd_comm) + (recomputed ? beside_microbatch_seconds(w.fwd_comm) : 0);
      model_flops += (w.fwd_flops + w.bwd_flops) * w.ways;
      hardware_flops += (w.fwd_flops * (recomputed ? 2 : 1) + w.bwd_flops) * w.ways;
    }
  };

  struct ParameterSums {
    std::vector<double> grad_sync, gather, first_gather, regather;
    std::vector<StageMemory> memory;  // model states and collective buffers only
    // Per gather unit (ParamWork::gather_unit): its stage (its first parameter's), gather
    // seconds and 16-bit bytes of the gathered parameters.
    std::vector<int> unit_stage;
    std::vector<double> unit_gather, unit_bytes;

    explicit ParameterSums(int stages)
        : grad_sync(stages), gather(stages), first_gather(stages), regather(stages), memory(stages) {}
    void add(int stage, int unit, double local_elements, bool gathered, double grad_sync_s, double gather_s,
             double regather_s) {
      grad_sync[stage] += grad_sync_s;
      gather[stage] += gather_s;
      regather[stage] += regather_s;
      if (!gathered) return;
      if (unit >= static_cast<int>(unit_stage.size())) unit_stage.resize(unit + 1, -1), unit_gather.resize(unit + 1), unit_bytes.resize(unit + 1);
      if (unit_stage[unit] < 0) unit_stage[unit] = stage;
      unit_gather[unit] += gather_s;
      unit_bytes[unit] += local_elements * 2;
    }
    // The largest unit's gather, per stage (first_gather).
    void find_first_gathers() {
      for (std::size_t u = 0; u < unit_stage.size(); ++u)
        if (unit_stage[u] >= 0) first_gather[unit_stage[u]] = std::max(first_gather[unit_stage[u]], unit_gather[u]);
    }
    // The staging buffers: under ZeRO-3 the unit computing and the next one prefetched, from
    // ZeRO-2 a unit's whole gradients until reduce-scattered.
    void add_staging_buffers(int zero, std::vector<StageMemory>& stage_memory) const {
      for (std::size_t u = 0; u < unit_stage.size(); ++u) {
        if (unit_stage[u] < 0) continue;
        StageMemory& m = stage_memory[unit_stage[u]];
        m.collective_buffers = std::max(m.collective_buffers, ((zero >= 3 ? 2 : 0) + (zero >= 2 ? 1 : 0)) * unit_bytes[u]);
      }
    }
    void finish(int zero, std::vector<StageMemory>& stage_memory) {
      find_first_gathers();
      add_staging_buffers(zero, stage_memory);
    }
  };

  RedistributionMemos redistributions;
  std::map<const NumericRedistribution*, std::vector<CommOp>> priced;
  std::vector<std::optional<OperandLayout>> produced;
  std::vector<double> produced_elements;  // local elements of `produced`, at the plan's micro-batch
  // Per tensor: layouts already made. Entries point into the plan being analysed, so a
  // list is cleared before it is read (all of them by a full analysis, those of the
  // tensors it re-prices by an incremental one).
  std::vector<std::vector<OperandLayout>> delivered, delivered_gradients;
  std::vector<long> shape;
  // The operator work of the last plan analysed and that plan: a plan differing only in
  // what op_work does not read (ZeRO, recomputation, schedule, interleaving: a search's
  // memory staircase) reuses it, and `produced` (which points into ops_plan's cuts).
  std::optional<Plan> ops_plan;
  PlanAnalysis analysis;  // of the last plan; its ops are ops_plan's operator work
  // Per parameter, what add_parameters derives from ops_plan's cuts alone (its shard, its
  // data-parallel group, the prices of the collectives ZeRO may ask for): the memory
  // staircase only changes which of them it asks for.
  struct ParamGroup {
    TensorId tensor = kNone;
    int stage = 0;
    double local_elements = 0;
    std::vector<int> axes;  // the data-parallel group's mesh axes
    hardware::GroupShape group;
    // Under HSDP (Plan::replicate_axes) the group splits into the shard group, over which ZeRO
    // shards the states (`ways` of them), and the replicas; without it shard_axes = axes.
    std::vector<int> shard_axes, replica_axes;
    hardware::GroupShape shard_group, replica_group;
    double ways = 1;  // of the shard group
    // -1: not priced yet. The reduce-scatter and all-gather run in the shard group, the
    // replicas' all-reduce on the reduced shard.
    double all_reduce_s = -1, reduce_scatter_s = -1, all_gather_s = -1, replica_all_reduce_s = -1;
    int unit = 0;  // ParamWork::gather_unit
    double extra_weight_bytes = 0;  // per element: a low-precision GEMM's quantized copies
    double weight_gather_bytes = 0;  // per element of its all-gathers
  };
  std::vector<int> param_units;  // per ng_.parameters() entry: its gather unit
  std::vector<ParamGroup> param_groups;
  // Per-stage sums of ops_plan's operator work, made when a plan asks for them: per
  // recomputation policy, per ZeRO stage (as ZeRO-1 when the distributed optimizer is on)
  // and the pipeline sends.
  struct Sums {
    std::array<std::optional<OperatorSums>, 3> operators;
    std::array<std::optional<ParameterSums>, 4> parameters;
    // Under Plan::recompute_layers: the counts of the last such plan, and its sums.
    std::vector<int> layer_recompute;
    std::optional<OperatorSums> layer_operators;
    int offload_layers = 0;  // Plan::offload_layers of the operator sums above
    std::optional<std::vector<double>> p2p_bytes;
  };
  Sums sums;
  StageTotals totals;  // the last totals() answer
  // Where each input's collectives end in its OpWork's fwd_comm and bwd_comm, at
  // input_base[topological position] + input: an incremental analysis copies the
  // collectives of the inputs whose neighbourhood did not change.
  std::vector<std::pair<int, int>> comm_ends;
  std::vector<int> input_base;  // per topological position (the graph's, computed once)
  // The same for the plan analysed before ops_plan: a search that alternates between two
  // micro-batch sizes (Megatron's seed, interleaving depth after depth) reuses both.
  struct Kept {
    std::optional<Plan> ops_plan;
    std::vector<OpWork> ops;
    std::vector<std::optional<OperandLayout>> produced;
    std::vector<double> produced_elements;
    std::vector<ParamGroup> param_groups;
    std::vector<std::pair<int, int>> comm_ends;
    Sums sums;
  } kept;
  // Moves make the swap keep every buffer, so the produced layouts still point into
  // their own plan's cuts.
  void swap_kept() {
    std::swap(ops_plan, kept.ops_plan);
    analysis.ops.swap(kept.ops);
    produced.swap(kept.produced);
    produced_elements.swap(kept.produced_elements);
    param_groups.swap(kept.param_groups);
    comm_ends.swap(kept.comm_ends);
    std::swap(sums, kept.sums);
  }
};

namespace {

// `memory`: the stages' full StageMemory (model states and activations).
StageTotals assemble_totals(const PlanAnalyzer::State::OperatorSums& ops,
                            const PlanAnalyzer::State::ParameterSums& params, const std::vector<double>& p2p_bytes,
                            const std::vector<StageMemory>& memory, double optimizer_s, const Plan& plan,
                            double device_memory) {
  StageTotals t;
  t.fwd_compute = ops.fwd_compute;
  t.fwd_comm = ops.fwd_comm;
  t.bwd_compute = ops.bwd_compute;
  t.bwd_comm = ops.bwd_comm;
  for (std::size_t s = 0; s < t.fwd_comm.size(); ++s) {
    t.fwd_comm[s] += std::max(0.0, ops.fwd_beside[s] - ops.fwd_compute[s]);
    t.bwd_comm[s] += std::max(0.0, ops.bwd_beside[s] - ops.bwd_compute[s]);
  }
  t.grad_sync = params.grad_sync;
  t.gather = params.gather;
  t.first_gather = params.first_gather;
  t.p2p_bytes = p2p_bytes;
  for (const StageMemory& m : memory) t.peak_memory.push_back(m.peak());
  t.model_flops = ops.model_flops * plan.micro_batches;
  t.hardware_flops = ops.hardware_flops * plan.micro_batches;
  const double regather = params.regather.empty() ? 0.0 : *std::max_element(params.regather.begin(), params.regather.end());
  t.after_step_s = optimizer_s + regather;
  t.device_memory = device_memory;
  return t;
}

// Plan::offload_layers' share of the saved activations, per offloaded layer.
struct Offloaded {
  std::vector<double> bytes;                     // sent to host memory per micro-batch
  std::vector<NodeId> holder;                    // an operator of the layer that saves some of them
  std::vector<double> fwd_seconds, bwd_seconds;  // the copies' exposed time (add_offload_exposure)
};

class Analyzer {
 public:
  Analyzer(Graph& graph, const hardware::Cluster& cluster, const Plan& plan, const NumericGraph& ng, PlanAnalyzer::State& state)
      : graph_(graph), cluster_(cluster), plan_(plan), mesh_(plan_mesh(plan, cluster)), ng_(ng),
        state_(state), memo_(state.redistributions.for_mesh(mesh_)) {
    if (layer_recompute()) mark_recomputed_layers();
  }

  // Fills state_.analysis (its ops are the kept operator work).
  const PlanAnalysis& run() {
    const bool train = prepare_operator_work();
    const int stages = plan_.pipeline_stages();
    PlanAnalysis& a = state_.analysis;
    a.stage_memory.assign(stages, StageMemory{});
    a.p2p_bytes.assign(std::max(stages - 1, 0), 0.0);
    a.device_memory = cluster_.device.usable_memory();
    a.state_bytes = cluster_.stack.memory;
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

  // stage_totals(run(), plan_) from the sums kept with the operator work.
  const StageTotals& totals() {
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
      ops.emplace(stages);
      for (const OpWork& w : state_.analysis.ops) ops->add(w, train && recomputed(w.node), train);
      if (train) {
        Offloaded offloaded;
        saved_activations(ops->activations, nullptr, &offloaded);
        for (std::size_t l = 0; l < offloaded.bytes.size(); ++l)
          if (const NodeId holder = offloaded.holder[l]; holder != kNone)
            ops->fwd_compute[plan_.stage_of_node[holder]] += offloaded.fwd_seconds[l],
                ops->bwd_compute[plan_.stage_of_node[holder]] += offloaded.bwd_seconds[l];
      }
    }
    const int zero = effective_zero_stage();
    auto& params = sums.parameters.at(train ? zero : 0);
    if (!params) {
      params.emplace(stages);
      if (train) {
        for (PlanAnalyzer::State::ParamGroup& g : state_.param_groups) {
          const ParamPrices p = prices(g, zero);
          params->add(g.stage, g.unit, g.local_elements, !g.shard_axes.empty(), p.grad_sync, p.gather, p.regather);
          add_model_state(params->memory[g.stage], cluster_.stack.memory, g.local_elements, zero, g.ways, g.extra_weight_bytes);
        }
        params->finish(zero, params->memory);
      } else {
        inference_weights(params->memory);
      }
    }
    if (!sums.p2p_bytes) {
      sums.p2p_bytes.emplace(std::max(stages - 1, 0), 0.0);
      add_pipeline_transfers(*sums.p2p_bytes);
    }
    std::vector<StageMemory> memory = params->memory;
    for (int s = 0; s < stages; ++s) {
      memory[s].activations_per_micro_batch = ops->activations[s];
      memory[s].micro_batches_in_flight = train ? micro_batches_in_flight(plan_, s) : 1;
      memory[s].working_buffers = ops->buffers[s].working_buffers;
      memory[s].working_buffers_node = ops->buffers[s].working_buffers_node;
      memory[s].reserve = cluster_.device.memory_reserve_bytes;
    }
    const double optimizer_s = train ? optimizer_seconds(memory, cluster_.device.hbm_bandwidth) : 0;
    state_.totals = assemble_totals(*ops, *params, *sums.p2p_bytes, memory, optimizer_s, plan_, cluster_.device.usable_memory());
    return state_.totals;
  }

 private:
  // Makes state_.analysis.ops the operator work of plan_: kept (the plan differs from one
  // of the last two in what op_work does not read), updated (a few cuts changed) or made
  // again. Returns whether the plan trains.
  bool prepare_operator_work() {
    // A plan with the operator work of one of the last two passed the same checks then.
    bool reuse = state_.ops_plan && same_operator_work(*state_.ops_plan, plan_);
    if (!reuse && state_.kept.ops_plan && same_operator_work(*state_.kept.ops_plan, plan_)) {
      state_.swap_kept();
      reuse = true;
    }
    const bool train = plan_.mode == ExecutionMode::train;
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
      }
      return train;
    }
    if (update_operator_work(train)) {
      state_.sums = {};
      return train;
    }
    check_plan();
    if (state_.ops_plan) state_.swap_kept();  // the last plan's work is kept; its buffers are refilled
    state_.sums = {};
    const std::size_t tensors = graph_.tensors().size();
    state_.produced.resize(tensors);
    state_.produced_elements.resize(tensors);
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
    a.ops.clear();
    a.ops.reserve(graph_.nodes().size());
    index_inputs();
    try {
      const auto& order = ng_.topological_order();
      for (std::size_t k = 0; k < order.size(); ++k) a.ops.push_back(op_work(order[k], k, train, nullptr));
      if (train) group_parameters();
    } catch (...) {
      state_.ops_plan.reset();
      a.ops.clear();
      throw;
    }
    return train;
  }

  int effective_zero_stage() const { return plan_.distributed_optimizer ? std::max(plan_.zero_stage, 1) : plan_.zero_stage; }

  // Whether the backward pass runs the operator's forward again.
  bool recomputed(NodeId id) const {
    if (layer_recompute()) return in_recomputed_layer_[id];
    // Full recomputation re-runs the layers; the operators outside them (embedding, final
    // norm, head) keep their tensors (layer_checkpoints) and are not run again.
    if (plan_.recompute == RecomputePolicy::full && ng_.num_layers() > 0) return ng_.node_layers()[id] >= 0;
    // The stack's op-level selective policy re-runs a layer but the operators whose outputs it keeps.
    if (op_level_selective()) return ng_.node_layers()[id] >= 0 && !ng_.keeps_outputs_under_op_policy(id);
    return plan_.recompute == RecomputePolicy::full ||
           (plan_.recompute == RecomputePolicy::selective && ng_.node(id).quadratic_output);
  }

  // Selective recomputation as torchtitan's "op" option runs it (Stack::selective_recompute),
  // on a graph with layers.
  bool op_level_selective() const {
    return plan_.recompute == RecomputePolicy::selective && ng_.num_layers() > 0 &&
           cluster_.stack.selective_recompute == hardware::SelectiveRecompute::every_other_matmul;
  }

  // Full recomputation of the first Plan::recompute_layers layers of each stage.
  bool layer_recompute() const { return plan_.recompute == RecomputePolicy::full && !plan_.recompute_layers.empty(); }

  void mark_recomputed_layers() {
    const int stages = plan_.pipeline_stages();
    if (static_cast<int>(plan_.recompute_layers.size()) != stages)
      throw std::runtime_error("plan: recompute_layers has " + std::to_string(plan_.recompute_layers.size()) +
                               " counts for " + std::to_string(stages) + " pipeline stages");
    const std::vector<int> ordinals = stage_layer_ordinals(ng_, plan_);
    in_recomputed_layer_.assign(graph_.nodes().size(), 0);
    for (NodeId id = 0; id < static_cast<NodeId>(ordinals.size()); ++id)
      in_recomputed_layer_[id] = ordinals[id] >= 0 && ordinals[id] < plan_.recompute_layers[plan_.stage_of_node[id]];
  }

  // Activations: 16-bit unless the plan computes in fp32; low-precision recipes keep them
  // in bf16 (only the linear GEMMs' inputs are quantized, low_precision_*).
  static double bytes_of(hardware::Precision p) {
    return p == hardware::Precision::fp32 || p == hardware::Precision::tf32 ? 4 : 2;
  }

  bool low_precision_gemm(NodeId id) const { return runs_low_precision_gemm(ng_, id, plan_.precision); }
  hardware::Precision kernel_precision(NodeId id) const { return compiler::kernel_precision(ng_, id, plan_.precision); }
  // Bytes per element of a low-precision GEMM's quantized copies (a rowwise and a columnwise
  // one: Hopper's FP8 GEMMs read only the TN layout, and MXFP8/NVFP4 quantize both
  // directions from high precision) with their scales (MXFP8: one byte per 32 values; NVFP4:
  // one per 16 values of each copy).
  double low_precision_copy_bytes() const {
    switch (plan_.precision) {
      case hardware::Precision::fp8: return 2;
      case hardware::Precision::mxfp8: return 2 + 2.0 / 32;
      case hardware::Precision::fp4: return 1 + 2.0 / 16;
      default: return 0;
    }
  }
  // HBM traffic of quantizing one element: read it in bf16 (twice for per-tensor current
  // scaling's amax pass and MXFP8/NVFP4's two directions), write both copies.
  double quantization_bytes() const { return 2 * 2 + low_precision_copy_bytes(); }

  // Everything op_work reads of a plan but the nodes' cuts and stages.
  static bool same_operator_context(const Plan& a, const Plan& b) {
    return a.mode == b.mode && a.precision == b.precision && a.global_batch == b.global_batch &&
           a.micro_batches == b.micro_batches && a.pipeline_axis == b.pipeline_axis && a.mesh_factors == b.mesh_factors &&
           a.context_parallel_comm == b.context_parallel_comm && a.moe_dispatcher == b.moe_dispatcher &&
           a.moe_comm_overlap == b.moe_comm_overlap && a.node_cuts.size() == b.node_cuts.size() &&
           a.stage_of_node.size() == b.stage_of_node.size();
  }
  static bool same_operator_work(const Plan& a, const Plan& b) {
    return same_operator_context(a, b) && a.stage_of_node == b.stage_of_node && a.node_cuts == b.node_cuts;
  }

  void index_inputs() {
    if (!state_.input_base.empty()) return;
    int base = 0;
    for (NodeId id : ng_.topological_order()) {
      state_.input_base.push_back(base);
      base += static_cast<int>(graph_.node(id).inputs.size());
    }
    state_.input_base.push_back(base);
  }

  // A refinement step's plan: the kept operator work with only some cuts changed. An
  // operator's work depends on its own cut and stage and, per input tensor, on the cuts of
  // the tensor's producer and consumers (its layout there; which consumer asks first for a
  // layout pays for the redistribution). So the operators whose cut changed, and every
  // consumer of a tensor they read or write, are priced again, in topological order; the
  // others keep their work (their stage updated), and the inputs of a re-priced operator
  // whose tensor is untouched keep their collectives. The result equals a full analysis.
  // Returns false (nothing changed) when the plan is not such a step, or too many
  // operators changed for it to pay.
  bool update_operator_work(bool train) {
    // The kept plan passed check_plan, so a plan of the same context has the graph's sizes.
    if (!state_.ops_plan || !same_operator_context(*state_.ops_plan, plan_)) return false;
    Plan& kept = *state_.ops_plan;
    const std::size_t n = graph_.nodes().size();
    std::vector<NodeId> changed;
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id)
      if (!(kept.node_cuts[id] == plan_.node_cuts[id])) changed.push_back(id);
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
    check_sizes_and_stages();
    for (NodeId id : changed) check_node(id);
    // The kept plan takes the new cuts in place: the produced layouts point at its NodeCut
    // objects, which stay where they are.
    for (NodeId id : changed) kept.node_cuts[id] = plan_.node_cuts[id];
    kept.stage_of_node = plan_.stage_of_node;
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

  void check_plan() const {
    check_sizes_and_stages();
    for (NodeId id = 0; id < static_cast<NodeId>(graph_.nodes().size()); ++id) check_node(id);
  }

  void check_sizes_and_stages() const {
    const std::size_t n = graph_.nodes().size();
    if (plan_.node_cuts.size() != n || plan_.stage_of_node.size() != n)
      throw std::runtime_error("plan: it describes " + std::to_string(plan_.node_cuts.size()) + " operators, the model has " +
                               std::to_string(n));
    const int stages = plan_.pipeline_stages();
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id)
      if (plan_.stage_of_node[id] < 0 || plan_.stage_of_node[id] >= stages)
        throw std::runtime_error("plan: node '" + graph_.node(id).name + "' is on stage " +
                                 std::to_string(plan_.stage_of_node[id]) + " of " + std::to_string(stages));
  }

  void check_node(NodeId id) const {
    const Node& node = graph_.node(id);
    const NodeCut& cut = plan_.node_cuts[id];
    const NumericNode& nn = ng_.node(id);
    if (cut.loop_axes.size() > nn.loops.size())
      throw std::runtime_error("plan: node '" + node.name + "' cuts " + std::to_string(cut.loop_axes.size()) +
                               " loops, it has " + std::to_string(nn.loops.size()));
    std::uint64_t used = 0;  // a mesh has fewer than 64 axes (one per prime factor of a level)
    for (const auto& axes : cut.loop_axes)
      for (int axis : axes) {
        if (axis < 0 || axis >= static_cast<int>(mesh_.axes().size()) || axis >= 64)
          throw std::runtime_error("plan: node '" + node.name + "' uses mesh axis " + std::to_string(axis) + ", which does not exist");
        if (axis == plan_.pipeline_axis)
          throw std::runtime_error("plan: node '" + node.name + "' is cut over the pipeline axis");
        if (used >> axis & 1)
          throw std::runtime_error("plan: node '" + node.name + "' uses mesh axis '" + mesh_.axes()[axis].name + "' twice");
        used |= std::uint64_t{1} << axis;
      }
    for (const auto& [loop, padded] : cut.padded_extents)
      if (loop < 0 || loop >= static_cast<int>(nn.loops.size()))
        throw std::runtime_error("plan: node '" + node.name + "' pads loop " + std::to_string(loop) + ", it has " +
                                 std::to_string(nn.loops.size()));
  }

  double ways(const std::vector<int>& axes) const {
    double w = 1;
    for (int a : axes) w *= mesh_.axes()[a].size;
    return w;
  }

  void check_divisible(NodeId id) const {
    const NodeCut& cut = plan_.node_cuts[id];
    const NumericNode& nn = ng_.node(id);
    for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
      if (cut.loop_axes[l].empty()) continue;
      const double extent = padded_extent(id, static_cast<int>(l));
      const double w = ways(cut.loop_axes[l]);
      if (extent < w || std::fmod(extent, w) != 0)
        throw std::runtime_error("plan: node '" + graph_.node(id).name + "': loop '" + nn.space.loops[l].name + "' of extent " +
                                 std::to_string(static_cast<long long>(extent)) + (extent != nn.loops[l].extent.at(batch_) ? " (padded)" : "") +
                                 " does not split " + std::to_string(static_cast<long long>(w)) + " ways");
    }
  }

  // Loop l's extent as the operator runs it: NodeCut::padded_extents' where it pads the loop
  // (never below the loop's own extent).
  double padded_extent(NodeId id, int l) const {
    const NumericNode& nn = ng_.node(id);
    const NodeCut& cut = plan_.node_cuts[id];
    const double extent = nn.loops[l].extent.at(batch_);
    const auto it = cut.padded_extents.find(l);
    if (it == cut.padded_extents.end()) return extent;
    if (static_cast<double>(it->second) < extent)
      throw std::runtime_error("plan: node '" + graph_.node(id).name + "': loop '" + nn.space.loops[l].name +
                               "' is padded to " + std::to_string(it->second) + ", below its extent " +
                               std::to_string(static_cast<long long>(extent)));
    return static_cast<double>(it->second);
  }

  // The work of the padded loops over the work of the loops as the graph states them.
  double loop_padding(NodeId id) const {
    double f = 1;
    for (const auto& [l, padded] : plan_.node_cuts[id].padded_extents)
      f *= padded_extent(id, l) / ng_.node(id).loops[l].extent.at(batch_);
    return f;
  }

  double element_bytes(TensorId t) const {
    const TensorFacts& f = ng_.facts(t);
    if (f.routing_table) return 0;
    return f.floating ? activation_bytes_ : static_cast<double>(f.element_size);
  }

  double local_elements(TensorId t, const OperandLayout& layout) const {
    const double e = ng_.facts(t).elements.at(batch_) / layout.ways(mesh_);
    return layout.padded() ? e * padding(t, layout) : e;
  }

  // Tensor t's padded elements over its own as `layout` holds it: a dim over a padded loop
  // holds the padded extent (Megatron's padded vocabulary rows); 1 when none is padded.
  double padding(TensorId t, const OperandLayout& layout) const {
    double f = 1;
    const std::vector<Affine>& shape = ng_.tensor_shape(t);
    for (int d = 0; d < layout.rank() && d < static_cast<int>(shape.size()); ++d)
      if (const long long padded = layout.padded_extent(d); padded > 0 && shape[d].at(batch_) > 0)
        f *= static_cast<double>(padded) / shape[d].at(batch_);
    return f;
  }

  // Collectives turning `from` into `to` for tensor t, priced; cached by layout and
  // shape because repeated layers ask the same question.
  std::vector<CommOp> redistribute(TensorId t, const TensorSharding& from, const TensorSharding& to) {
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

  // For a tensor of routed tokens (a MoeDispatch's output, a MoeCombine's expert outputs) under
  // a deduplicating dispatcher (Plan::moe_dispatcher): the routing node; else kNone.
  NodeId routing_node(NodeId consumer, TensorId t) const {
    if (plan_.moe_dispatcher == MoeDispatcher::alltoall) return kNone;
    return exchanged_routing_node(consumer, t);
  }
  // The routing node of a tensor of routed tokens whatever the dispatcher, else kNone.
  NodeId exchanged_routing_node(NodeId consumer, TensorId t) const {
    const auto is = [&](NodeId id, const char* op) {
      const Node& n = graph_.node(id);
      return n.op_type == op && n.domain == "ai.symtensor" && n.inputs.size() == 2;
    };
    if (is(consumer, "MoeCombine") && graph_.node(consumer).inputs[1] == t) return consumer;
    const NodeId producer = graph_.tensor(t).producer;
    return producer != kNone && is(producer, "MoeDispatch") ? producer : kNone;
  }

  struct RoutedTokens {
    int experts = 0, top_k = 0;  // 0: not a routed-token tensor, or not deduplicated
  };

  // An all-to-all of routed tokens that crosses nodes, as a deduplicating dispatcher sends it:
  // its bytes scaled by deduplicated_share over the nodes its group spans.
  void deduplicate(CommOp& op, const RoutedTokens& routed) const {
    if (routed.experts == 0 || op.kind != hardware::Collective::all_to_all) return;
    int nodes = 1;
    for (std::size_t l = 1; l < op.group.ranks_per_level.size(); ++l) nodes *= op.group.ranks_per_level[l];
    if (nodes <= 1 || routed.experts % nodes != 0) return;
    op.bytes *= deduplicated_share(routed.experts, routed.top_k, nodes);
    op.seconds = hardware::collective_time(cluster_, op.kind, op.group, op.bytes).seconds;
  }

  // The experts and top-k of a routed-token tensor `t` consumed by `consumer` under a
  // deduplicating dispatcher.
  RoutedTokens routed_tokens(NodeId consumer, TensorId t) const {
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
    return {static_cast<int>(experts), static_cast<int>(top_k)};
  }

  // Whether `layouts` already holds `layout`; records it if not.
  static bool first_delivery(std::vector<OperandLayout>& layouts, const OperandLayout& layout) {
    if (std::find(layouts.begin(), layouts.end(), layout) != layouts.end()) return false;
    layouts.push_back(layout);
    return true;
  }

  // The sharding a tensor has where it is produced, recorded by op_work in topological
  // order (graph inputs and parameters are supplied in whatever layout their consumer
  // wants; a value the producer's iteration space does not describe has none).
  const std::optional<OperandLayout>& produced_sharding(TensorId t) const { return state_.produced[t]; }

  static TensorSharding without_partial(TensorSharding s) {
    s.partial_axes.clear();
    return s;
  }
  // `s` split as it is, partial where `partial` is.
  static TensorSharding with_partial(TensorSharding s, const TensorSharding& partial) {
    s.partial_axes = partial.partial_axes;
    return s;
  }

  bool needs_gradient(TensorId t) const { return t != kNone && ng_.facts(t).needs_gradient; }

  void record_outputs(NodeId id) {
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

  // Input i's local bytes and collectives (a redistribution to the operator's layout, and
  // of its gradient back), or, from `old`, its collectives there.
  void input_work(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut, std::size_t i, bool train,
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

  // With `old` (this operator's work under the kept plan), the inputs whose tensor is not
  // `dirty` keep their collectives from it.
  OpWork op_work(NodeId id, std::size_t position, bool train, const OpWork* old,
                 const std::vector<char>* dirty = nullptr) {
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
    w.fwd_seconds = cluster_.device.kernel_seconds(precision, w.fwd_flops, w.fwd_bytes);
    if (train) {
      // One gradient per operand that needs one, each as costly as the forward.
      w.bwd_flops = w.fwd_flops * gradient_inputs;
      w.bwd_bytes = gradient_inputs > 0 ? w.fwd_bytes * (1 + gradient_inputs) : 0;
      w.bwd_seconds = gradient_inputs > 0 ? cluster_.device.kernel_seconds(precision, w.bwd_flops, w.bwd_bytes) : 0;
    }
    if (low_precision_gemm(id)) add_quantization(w, node, nn, cut, train);
    if (nn.kind == OpKind::attention) price_attention(w, nn, cut, train && gradient_inputs > 0);
    if (nn.no_kernel) w.fwd_seconds = w.bwd_seconds = 0;
    return w;
  }

  // A value a fused element-wise kernel passes on without writing it (Stack::fused_elementwise).
  bool on_chip(const TensorFacts& facts) const {
    return cluster_.stack.fused_elementwise && facts.fusable_intermediate;
  }

  // A low-precision GEMM quantizes its activation input before the forward and the output's
  // gradient before the backward (memory-bound passes; the weights once per step, not priced).
  void add_quantization(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut, bool train) const {
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

  // A fused attention kernel at its own efficiency (by head dim and local query length).
  // Its backward recomputes the scores: 2.5x the forward FLOPs (FlashAttention-2's count,
  // five matrix products against two), reading Q, K, V, O and dO and writing dQ, dK, dV.
  void price_attention(OpWork& w, const NumericNode& nn, const NodeCut& cut, bool backward) const {
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

  // Each parameter's gather unit (ParamWork::gather_unit), found once per graph.
  void find_gather_units() {
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

  // Each parameter: its layout at its first consumer, and the union of the axes over
  // which its gradient is partial (the data-parallel group of that parameter).
  void group_parameters() {
    find_gather_units();
    auto& groups = state_.param_groups;
    groups.clear();
    groups.reserve(ng_.parameters().size());
    for (const ParameterUses& uses : ng_.parameters()) {
      const auto [first, first_input] = uses.uses.front();
      std::uint64_t partial = 0;
      for (const auto* slots : {&uses.uses, &uses.derived_uses})
        for (const auto& [c, i] : *slots)
          partial |= OperandLayout::input_gradient(ng_.node(c).space, plan_.node_cuts[c], i).partial_axes();
      PlanAnalyzer::State::ParamGroup& g = groups.emplace_back();
      g.tensor = uses.tensor;
      g.unit = state_.param_units[groups.size() - 1];
      g.stage = plan_.stage_of_node[first];
      // Split as its first reader holds it; padded where any reader pads it (a tied vocabulary
      // table holds the padded rows whichever reader comes first).
      double padded = 1;
      for (const auto& [c, i] : uses.uses)
        if (!plan_.node_cuts[c].padded_extents.empty())
          padded = std::max(padded, padding(uses.tensor, OperandLayout::input(ng_.node(c).space, plan_.node_cuts[c], i)));
      g.local_elements = ng_.facts(uses.tensor).elements.at(batch_) /
                         OperandLayout::input(ng_.node(first).space, plan_.node_cuts[first], first_input).ways(mesh_) * padded;
      g.axes = axes_in(partial);
      g.shard_axes.clear(), g.replica_axes.clear();
      for (int a : g.axes)
        (std::find(plan_.replicate_axes.begin(), plan_.replicate_axes.end(), a) == plan_.replicate_axes.end() ? g.shard_axes
                                                                                                              : g.replica_axes)
            .push_back(a);
      g.ways = ways(g.shard_axes);
      if (!g.axes.empty()) g.group = mesh_.group_shape(g.axes);
      if (!g.shard_axes.empty()) g.shard_group = mesh_.group_shape(g.shard_axes);
      if (!g.replica_axes.empty()) g.replica_group = mesh_.group_shape(g.replica_axes);
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

  // The parameter group's collective of `kind`, priced once per group and kind.
  double price(const hardware::GroupShape& group, hardware::Collective kind, double bytes, double& seconds) const {
    if (seconds < 0) seconds = hardware::collective_time(cluster_, kind, group, bytes).seconds;
    return seconds;
  }

  // Seconds of one parameter's collectives at a ZeRO stage (0 where it asks for none):
  // the gradients' all-reduce, or reduce-scatter from ZeRO-2; ZeRO-1/2's (and the
  // distributed optimizer's) all-gather of the updated weights after the step; ZeRO-3's
  // all-gather before use. Gradients and weights move in the stack's dtypes
  // (StackMemory::gradient_reduce, weight_gather). Under HSDP the reduce-scatter and the
  // all-gathers run inside the shard group and the replicas all-reduce the reduced shard
  // (1/ways of the gradient); grad_sync is the sum of both (they run one after the other).
  struct ParamPrices {
    double grad_sync = 0, regather = 0, gather = 0;
    double shard_sync = 0, replica_sync = 0;  // grad_sync's parts under ZeRO >= 1
  };
  ParamPrices prices(PlanAnalyzer::State::ParamGroup& g, int zero) const {
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

  // Appends to `ops` one collective of `kind` over `axes` (nothing when not `wanted` or the
  // group is empty) of `bytes`.
  static void add_param_comm(std::vector<CommOp>& ops, bool wanted, double seconds, const PlanAnalyzer::State::ParamGroup& g,
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

  void add_parameters(PlanAnalysis& a) {
    const int zero = effective_zero_stage();
    a.params.resize(state_.param_groups.size());
    PlanAnalyzer::State::ParameterSums units(static_cast<int>(a.stage_memory.size()));
    for (std::size_t k = 0; k < state_.param_groups.size(); ++k) {
      PlanAnalyzer::State::ParamGroup& g = state_.param_groups[k];
      ParamWork& p = a.params[k];
      p.tensor = g.tensor;
      p.stage = g.stage;
      p.local_elements = g.local_elements;
      p.gather_unit = g.unit;
      using hardware::Collective;
      const ParamPrices seconds = prices(g, zero);
      const double grad_bytes = g.local_elements * cluster_.stack.memory.gradient_reduce;
      const double weight_bytes = g.local_elements * g.weight_gather_bytes;
      p.grad_sync.clear(), p.regather.clear(), p.gather.clear();
      add_param_comm(p.grad_sync, zero == 0, seconds.grad_sync, g, Collective::all_reduce, g.axes, g.group, grad_bytes);
      add_param_comm(p.grad_sync, zero >= 1, seconds.shard_sync, g, Collective::reduce_scatter, g.shard_axes, g.shard_group,
                     grad_bytes);
      add_param_comm(p.grad_sync, zero >= 1, seconds.replica_sync, g, Collective::all_reduce, g.replica_axes,
                     g.replica_group, grad_bytes / g.ways);
      add_param_comm(p.regather, zero == 1 || zero == 2, seconds.regather, g, Collective::all_gather, g.shard_axes,
                     g.shard_group, weight_bytes);
      add_param_comm(p.gather, zero >= 3, seconds.gather, g, Collective::all_gather, g.shard_axes, g.shard_group, weight_bytes);
      add_model_state(a.stage_memory[g.stage], cluster_.stack.memory, p.local_elements, zero, g.ways, g.extra_weight_bytes);
      units.add(g.stage, g.unit, g.local_elements, !g.shard_axes.empty(), 0, 0, 0);
    }
    units.finish(zero, a.stage_memory);
  }

  // Inference keeps no activations; weights only (16-bit), in their first consumer's layout.
  void inference_weights(std::vector<StageMemory>& memory) const {
    for (const ParameterUses& uses : ng_.parameters()) {
      const auto [c, i] = uses.uses.front();
      memory[plan_.stage_of_node[c]].parameters +=
          local_elements(uses.tensor, OperandLayout::input(ng_.node(c).space, plan_.node_cuts[c], i)) * activation_bytes_;
    }
  }

  // Activations kept for backward under the plan's recomputation policy, per stage and
  // (with `by_node`) on the operator holding each.
  // Under layer_recompute() a recomputed layer keeps what it reads from outside itself (its
  // input, the rotary tables) and the others what they would without recomputation.
  // `offloaded` (under Plan::offload_layers): per layer, the bytes sent to host memory (those
  // layers' saved tensors count there, and one layer's worth stays in device memory, in transit)
  // and the copies' exposed seconds.
  void saved_activations(std::vector<double>& per_stage, const std::vector<OpWork*>* by_node,
                         Offloaded* offloaded = nullptr) const {
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
    if (by_node) (*by_node)[holder]->saved_bytes += *transit;
  }

  // Seconds the host copies of Plan::offload_layers do not hide, per offloaded layer: layer l's
  // saved tensors go out under layer l+1's forward and come back under its backward.
  void add_offload_exposure(Offloaded& offloaded) const {
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

  // A saved tensor as the smaller of its producer's and its holder's layouts: sequence
  // parallelism keeps a linear's input before the all-gather (gathered again in backward), and
  // a residual add keeps the row-parallel output after the reduce-scatter, not the partial sums.
  double saved_elements(const SavedTensor& s, NodeId holder) const {
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

  // `kept(saved tensor, holder)`: whether it counts (null: all).
  void add_saved(const std::vector<SavedTensor>& saved, const std::function<bool(const SavedTensor&, NodeId)>& kept,
                 std::vector<double>& per_stage, const std::vector<OpWork*>* by_node, Offloaded* offloaded) const {
    for (const SavedTensor& s : saved) {
      if (plan_.recompute == RecomputePolicy::selective && s.quadratic_in_sequence) continue;
      const NodeId holder = saved_tensor_holder(graph_, s);
      if (holder == kNone) continue;
      if (kept && !kept(s, holder)) continue;
      if (s.view_of_kept && !low_precision_gemm(holder)) continue;
      if (ng_.facts(s.tensor).routing_table) continue;  // index-sized
      const double elements = saved_elements(s, holder);
      const double bytes = elements * (s.mask ? 1.0 : low_precision_gemm(holder) ? low_precision_copy_bytes() / 2 : activation_bytes_);
      const int layer = ng_.node_layers()[holder];
      if (offloaded && layer >= 0 && layer < static_cast<int>(offloaded->bytes.size())) {
        offloaded->bytes[layer] += bytes;
        if (offloaded->holder[layer] == kNone) offloaded->holder[layer] = holder;
        continue;
      }
      per_stage[plan_.stage_of_node[holder]] += bytes;
      if (by_node) (*by_node)[holder]->saved_bytes += bytes;
    }
  }

  void add_activations(PlanAnalysis& a, bool train) {
    if (!train) {
      inference_weights(a.stage_memory);
      return;
    }
    std::vector<OpWork*> by_node(graph_.nodes().size(), nullptr);
    for (auto& w : a.ops) by_node[w.node] = &w;
    std::vector<double> per_stage(a.stage_memory.size(), 0.0);
    Offloaded offloaded;
    saved_activations(per_stage, &by_node, &offloaded);
    // What is not kept is recomputed in the backward pass.
    for (auto& w : a.ops) w.recomputed = recomputed(w.node);
    for (std::size_t l = 0; l < offloaded.bytes.size(); ++l)
      if (offloaded.holder[l] != kNone)
        by_node[offloaded.holder[l]]->offload_fwd_seconds += offloaded.fwd_seconds[l],
            by_node[offloaded.holder[l]]->offload_bwd_seconds += offloaded.bwd_seconds[l];
    for (std::size_t s = 0; s < a.stage_memory.size(); ++s) {
      a.stage_memory[s].activations_per_micro_batch = per_stage[s];
      a.stage_memory[s].micro_batches_in_flight = micro_batches_in_flight(plan_, static_cast<int>(s));
    }
  }

  void add_pipeline_transfers(std::vector<double>& p2p_bytes) const {
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

  Graph& graph_;
  const hardware::Cluster& cluster_;
  const Plan& plan_;
  hardware::DeviceMesh mesh_;
  const NumericGraph& ng_;
  double batch_ = 0;
  double activation_bytes_ = 2;
  PlanAnalyzer::State& state_;
  RedistributionMemo& memo_;  // state_'s memo for this plan's mesh
  std::vector<std::pair<int, int>> old_ends_;  // op_work's: the kept work's comm_ends of one operator
  std::vector<char> in_recomputed_layer_;      // per node, under layer_recompute()
};

}  // namespace

std::vector<int> stage_layer_ordinals(const NumericGraph& ng, const Plan& plan, std::vector<int>* counts) {
  const int stages = plan.pipeline_stages();
  std::vector<int> ordinals(ng.node_layers().size(), -1);
  std::vector<int> stage_of_layer(ng.num_layers(), -1), ordinal(ng.num_layers(), 0), seen(stages, 0);
  for (NodeId id : ng.topological_order()) {
    const int l = ng.node_layers()[id];
    if (l < 0) continue;
    const int s = plan.stage_of_node.at(id);
    if (stage_of_layer[l] != s) stage_of_layer[l] = s, ordinal[l] = seen.at(s)++;
    ordinals[id] = ordinal[l];
  }
  if (counts) *counts = seen;
  return ordinals;
}

double beside_microbatch_seconds(const std::vector<CommOp>& ops) {
  double seconds = 0;
  for (const CommOp& op : ops)
    if (op.beside_microbatch) seconds += op.seconds;
  return seconds;
}

double exposed_seconds(const std::vector<CommOp>& ops, double kernel_seconds) {
  double blocking = 0, overlapped = 0;
  for (const CommOp& op : ops)
    if (!op.beside_microbatch) (op.overlapped ? overlapped : blocking) += op.seconds;
  return blocking + std::max(0.0, overlapped - kernel_seconds);
}

PlanAnalyzer::PlanAnalyzer(Graph& graph, const hardware::Cluster& cluster, const NumericGraph& ng)
    : graph_(graph), cluster_(cluster), ng_(ng), state_(std::make_unique<State>()) {}

PlanAnalyzer::~PlanAnalyzer() = default;

const PlanAnalysis& PlanAnalyzer::analyze_in_place(const Plan& plan) {
  return Analyzer(graph_, cluster_, plan, ng_, *state_).run();
}

PlanAnalysis PlanAnalyzer::analyze(const Plan& plan) { return analyze_in_place(plan); }

const StageTotals& PlanAnalyzer::totals(const Plan& plan) { return Analyzer(graph_, cluster_, plan, ng_, *state_).totals(); }

StageTotals stage_totals(const PlanAnalysis& a, const Plan& plan) {
  const int stages = plan.pipeline_stages();
  const bool train = plan.mode == ExecutionMode::train;
  PlanAnalyzer::State::OperatorSums ops(stages);
  for (const OpWork& w : a.ops) {
    ops.add(w, w.recomputed, train);
    ops.fwd_compute[w.stage] += w.offload_fwd_seconds, ops.bwd_compute[w.stage] += w.offload_bwd_seconds;
  }
  PlanAnalyzer::State::ParameterSums params(stages);
  for (const ParamWork& p : a.params)
    params.add(p.stage, p.gather_unit, p.local_elements, !p.gather.empty(), sum_seconds(p.grad_sync), sum_seconds(p.gather),
               sum_seconds(p.regather));
  params.find_first_gathers();  // the analysis' memory has the staging buffers
  return assemble_totals(ops, params, a.p2p_bytes, a.stage_memory, a.optimizer_seconds_per_stage, plan, a.device_memory);
}

PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  const NumericGraph ng(graph);
  return analyze_plan(graph, cluster, plan, ng);
}

PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan, const NumericGraph& ng) {
  return PlanAnalyzer(graph, cluster, ng).analyze(plan);
}

}  // namespace symtensor::compiler
