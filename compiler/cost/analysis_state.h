#pragma once
// What the analyses of plans of one graph share (PlanAnalyzer::State): the redistributions
// planned per mesh and priced, per-tensor scratch, the operator work of the last few plans
// and the per-stage sums a plan's totals are made of.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/cost/interleaved_pipeline.h"
#include "compiler/cost/model_state.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/sharding/redistribution_memo.h"

namespace symtensor::compiler {

// What plans of one graph share, kept between analyses: redistributions planned per mesh
// (a search tries many plans on a few meshes) and priced, and per-tensor scratch reused
// for its capacity.
struct PlanAnalyzer::State {
  // StageTotals in the making: the operators' part (one recomputation policy's) and the
  // parameters' part (one ZeRO stage's), per stage.
  // What an operator's collectives expose (exposed_seconds, beside_microbatch_seconds) in
  // its forward and backward pass: the same under every recomputation policy.
  struct OpExposure {
    double fwd_exposed = 0, fwd_beside = 0, bwd_exposed = 0, bwd_beside = 0;
    static OpExposure of(const OpWork& w) {
      return {exposed_seconds(w.fwd_comm, w.fwd_seconds), beside_microbatch_seconds(w.fwd_comm),
              exposed_seconds(w.bwd_comm, w.bwd_seconds), beside_microbatch_seconds(w.bwd_comm)};
    }
  };
  struct OperatorSums {
    std::vector<double> fwd_compute, fwd_comm, bwd_compute, bwd_comm;
    // Exchanges beside the adjacent micro-batch's compute (CommOp::beside_microbatch):
    // what a pass exposes of them is what they take beyond its compute (assemble_totals).
    std::vector<double> fwd_beside, bwd_beside;
    std::vector<double> activations;  // saved for backward, per micro-batch
    // Per stage, Analyzer::saved_positions: made by the first interleaved plan that needs them.
    std::optional<std::vector<std::vector<SavedPosition>>> saved_positions;
    std::vector<StageMemory> buffers;  // working_buffers only
    double model_flops = 0, hardware_flops = 0;  // per micro-batch

    explicit OperatorSums(int stages)
        : fwd_compute(stages), fwd_comm(stages), bwd_compute(stages), bwd_comm(stages), fwd_beside(stages),
          bwd_beside(stages), activations(stages), buffers(stages) {}
    void add(const OpWork& w, bool recomputed, bool train) {
      analyzer_internal::add_working_buffers(buffers[w.stage], w);
      add_timed(w, OpExposure::of(w), recomputed, train);
    }
    // Whether add_timed adds anything for it (views and constants add 0 to every sum).
    static bool adds_time(const OpWork& w, const OpExposure& x) {
      return w.fwd_seconds != 0 || w.bwd_seconds != 0 || w.fwd_flops != 0 || w.bwd_flops != 0 || x.fwd_exposed != 0 ||
             x.fwd_beside != 0 || x.bwd_exposed != 0 || x.bwd_beside != 0;
    }
    // Its time, collectives and FLOPs, with its exposure made before (Sums::exposures); not
    // its working buffers (Sums::buffers).
    void add_timed(const OpWork& w, const OpExposure& x, bool recomputed, bool train) {
      fwd_compute[w.stage] += w.fwd_seconds;
      fwd_comm[w.stage] += x.fwd_exposed;
      fwd_beside[w.stage] += x.fwd_beside;
      if (!train) {
        model_flops += w.fwd_flops * w.ways;
        hardware_flops = model_flops;
        return;
      }
      bwd_compute[w.stage] += w.bwd_seconds + (recomputed ? w.fwd_seconds : 0);
      bwd_comm[w.stage] += x.bwd_exposed + (recomputed ? x.fwd_exposed : 0);
      bwd_beside[w.stage] += x.bwd_beside + (recomputed ? x.fwd_beside : 0);
      model_flops += (w.fwd_flops + w.bwd_flops) * w.ways;
      hardware_flops += (w.fwd_flops * (recomputed ? 2 : 1) + w.bwd_flops) * w.ways;
    }
  };

  struct ParameterSums {
    std::vector<double> grad_sync, micro_batch_sync, gather, first_gather, regather;
    std::vector<StageMemory> memory;  // model states and collective buffers only
    // Per gather unit (ParamWork::gather_unit): its stage (its first parameter's), gather
    // seconds and 16-bit bytes of the gathered parameters.
    std::vector<int> unit_stage;
    std::vector<double> unit_gather, unit_bytes;

    explicit ParameterSums(int stages)
        : grad_sync(stages), micro_batch_sync(stages), gather(stages), first_gather(stages), regather(stages), memory(stages) {}
    // grad_sync_s: once a step; micro_batch_sync_s: each micro-batch (CommOp::every_micro_batch).
    void add(int stage, int unit, double local_elements, bool gathered, double grad_sync_s, double gather_s,
             double regather_s, double micro_batch_sync_s = 0) {
      grad_sync[stage] += grad_sync_s;
      micro_batch_sync[stage] += micro_batch_sync_s;
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
    // ZeRO-2 a unit's whole gradients until reduce-scattered (`zero`: per stage).
    void add_staging_buffers(const std::vector<int>& zero_by_stage, std::vector<StageMemory>& stage_memory) const {
      for (std::size_t u = 0; u < unit_stage.size(); ++u) {
        if (unit_stage[u] < 0) continue;
        StageMemory& m = stage_memory[unit_stage[u]];
        const int zero = zero_by_stage[unit_stage[u]];
        m.collective_buffers = std::max(m.collective_buffers, ((zero >= 3 ? 2 : 0) + (zero >= 2 ? 1 : 0)) * unit_bytes[u]);
      }
    }
    void finish(const std::vector<int>& zero_by_stage, std::vector<StageMemory>& stage_memory) {
      find_first_gathers();
      add_staging_buffers(zero_by_stage, stage_memory);
    }
  };

  RedistributionMemos redistributions;
  std::map<const NumericRedistribution*, std::vector<CommOp>> priced;
  std::vector<std::optional<OperandLayout>> produced;
  std::vector<double> produced_elements;  // local elements of `produced`, at the plan's micro-batch
  // Per tensor, during an analysis from scratch: the twin's output whose layout copy_twin gave
  // it (equal by construction: the same cut and dims), else kNone. Read by copy_twin only.
  std::vector<TensorId> produced_copy_of;
  // The last stamped cuts (Plan::cuts_stamp) check_node passed, on a mesh of that many axes
  // with that pipeline axis.
  struct CheckedCuts {
    std::uint64_t stamp = 0;
    int mesh_axes = 0, pipeline_axis = -1;
    friend bool operator==(const CheckedCuts&, const CheckedCuts&) = default;
  };
  CheckedCuts checked_cuts;
  // Per tensor: layouts already made. Entries point into the plan being analysed, so a
  // list is cleared before it is read (all of them by a full analysis, those of the
  // tensors it re-prices by an incremental one).
  std::vector<std::vector<OperandLayout>> delivered, delivered_gradients;
  std::vector<long> shape;
  // The operator work of the last plan analysed and that plan: a plan differing only in
  // what op_work does not read (ZeRO, recomputation, schedule, interleaving: a search's
  // memory staircase; the count of micro-batches of one size: its shorter steps) reuses it,
  // and `produced` (which points into ops_plan's cuts).
  std::optional<Plan> ops_plan;
  PlanAnalysis analysis;  // of the last plan; its ops are ops_plan's operator work
  // Per parameter, what add_parameters derives from ops_plan's cuts alone (its shard, its
  // data-parallel group, the prices of the collectives ZeRO may ask for): the memory
  // staircase only changes which of them it asks for.
  // Analyzer::group_parameters refills every field in place (a field added here is set there).
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
    // Under Plan::stage_zero_stages: the last such plan's ZeRO stages as they run, and its sums.
    std::vector<int> stage_zero;
    std::optional<ParameterSums> stage_parameters;
    // Under Plan::recompute_layers: the counts of the last such plan, and its sums.
    std::vector<int> layer_recompute;
    std::optional<OperatorSums> layer_operators;
    int offload_layers = 0;  // Plan::offload_layers of the operator sums above
    std::optional<std::vector<double>> p2p_bytes;
    // Per tensor, its saved local elements as its holder keeps it (saved_elements: the
    // same under every recomputation policy); holder kNone until made.
    std::vector<std::pair<NodeId, double>> saved_elements;
    // Per operator of the work (analysis.ops' order), its OpExposure; empty until made.
    std::vector<OpExposure> exposures;
    // What every recomputation policy's OperatorSums share, made with `exposures`: the
    // stages' working buffers (the largest operator's, the same whatever is recomputed), and
    // the operators that add anything else (about half of a model's are views and constants:
    // no kernel, no collective, no FLOPs), whose sums are then added in order. Adding only
    // those is exact: the others would add 0.
    std::vector<StageMemory> buffers;
    std::vector<std::size_t> timed;
  };
  Sums sums;
  StageTotals totals;  // the last totals() answer
  // Where each input's collectives end in its OpWork's fwd_comm and bwd_comm, at
  // input_base[topological position] + input: an incremental analysis copies the
  // collectives of the inputs whose neighbourhood did not change.
  std::vector<std::pair<int, int>> comm_ends;
  std::vector<int> input_base;  // per topological position (the graph's, computed once)
  // Twins: operators whose work op_work derives from the same numbers of the graph (the
  // same operator at the same place of each repeated layer), found once per graph
  // (twin_class per node, empty until then). In an analysis from scratch an operator
  // priced in the same context as a twin before it (its own cut; per input, the producer's
  // layout and whether that layout and its gradient's were delivered already) gets a copy
  // of the twin's work: a layer repeated 80 times is priced once per context.
  bool reuse_twins = true;
  std::vector<int> twin_class;
  struct Twin {
    std::size_t position = 0;            // topological position of the operator priced
    std::vector<char> delivered;          // per input: 0 none, 1 not yet, 2 already (layout)
    std::vector<char> gradient_delivered; // the same for its gradient
    // Per input, the partial axes of its gradient's layout where gradient_delivered is not 0:
    // a twin of the same cut has the same (its dims are the same), without deriving them.
    std::vector<std::uint64_t> gradient_partials;
  };
  std::vector<std::vector<Twin>> twins;  // per class: those priced in this analysis
  // Per topological position of analysis.ops: -1, or the position of the twin whose
  // collectives this operator's are (on its own operands) but are not copied yet. A copy
  // takes the twin's numbers at once and its collectives only when an analysis is read
  // (Analyzer::copy_pending_collectives): a search's totals read only the exposure of
  // each operator's collectives (Sums::exposures), which is its twin's.
  std::vector<int> collectives_of_twin;
  // Which twin each operator copied (its index in twins[class], -1: priced by op_work) in the
  // last analysis from scratch of stamped cuts (Plan::cuts_stamp). copy_twin's comparisons read
  // only the cuts and the layouts they make, so an analysis from scratch of the same stamped
  // cuts in the same context but another micro-batch (a search's next size) copies the same
  // twins without comparing again (`replaying`), the twins' entries kept from that analysis.
  struct TwinReplay {
    std::uint64_t stamp = 0;  // 0: nothing recorded
    // What else the comparisons read of the plan (Analyzer::replay_twins).
    bool train = true;
    hardware::Precision precision = hardware::Precision::bf16;
    int pipeline_axis = -1;
    std::vector<std::vector<int>> mesh_factors;
    ContextParallelComm context_parallel_comm = ContextParallelComm::ring;
    MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
    bool moe_comm_overlap = false;
    double moe_load_imbalance = 1;
    std::vector<int> twin_of;  // per topological position; empty: not recording
    bool replaying = false;
    std::size_t replays = 0;  // analyses that replayed, over every analysis
  };
  TwinReplay twin_replay;
  // stage_layer_ordinals of the last plan that recomputed some layers (Plan::recompute_layers),
  // with the stage count and stages it was made for: a search prices many counts of one layout.
  struct LayerOrdinals {
    int stages = 0;
    std::vector<int> stage_of_node, ordinals;
  };
  LayerOrdinals layer_ordinals;
  std::size_t twin_copies = 0;           // operators' work copied so far, over every analysis
  // The same for the plans analysed before ops_plan, the most recent first (at most
  // kKeptPlans): a search that walks the micro-batch sizes again at each interleaving depth
  // (Megatron's exhaustive one) or alternates between layouts finds their work here. The
  // quality suite's searches made 58% of their operator work again when one was kept.
  struct Kept {
    std::optional<Plan> ops_plan;
    std::vector<OpWork> ops;
    std::vector<std::optional<OperandLayout>> produced;
    std::vector<double> produced_elements;
    std::vector<ParamGroup> param_groups;
    std::vector<std::pair<int, int>> comm_ends;
    std::vector<int> collectives_of_twin;
    Sums sums;
  };
  static constexpr std::size_t kKeptPlans = 8;
  std::vector<Kept> kept;
  // Kept plan i becomes the current one, and the current one the most recent kept.
  void take_kept(std::size_t i) {
    swap_with(kept[i]);
    std::rotate(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(i), kept.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
  // The current plan's work becomes the most recent kept; the current one gets the buffers
  // of the least recent (dropped when kKeptPlans are kept) to be refilled.
  void keep_current() {
    if (kept.size() < kKeptPlans) kept.emplace_back();
    std::rotate(kept.begin(), kept.end() - 1, kept.end());
    swap_with(kept.front());
  }
  // Moves make the swap keep every buffer, so the produced layouts still point into
  // their own plan's cuts.
  void swap_with(Kept& other) {
    std::swap(ops_plan, other.ops_plan);
    analysis.ops.swap(other.ops);
    produced.swap(other.produced);
    produced_elements.swap(other.produced_elements);
    param_groups.swap(other.param_groups);
    comm_ends.swap(other.comm_ends);
    collectives_of_twin.swap(other.collectives_of_twin);
    std::swap(sums, other.sums);
  }
};

namespace analyzer_internal {

// A plan's StageTotals from its sums. `memory`: the stages' full StageMemory (model states
// and activations).
StageTotals assemble_totals(const PlanAnalyzer::State::OperatorSums& ops,
                            const PlanAnalyzer::State::ParameterSums& params, const std::vector<double>& p2p_bytes,
                            const std::vector<StageMemory>& memory, double optimizer_s, const Plan& plan,
                            double device_memory);

}  // namespace analyzer_internal
}  // namespace symtensor::compiler
