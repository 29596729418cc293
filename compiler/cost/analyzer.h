#pragma once
// The analysis of one plan (PlanAnalyzer's worker): made per call, it fills the analyzer's
// State with the plan's operator work, parameter work, activations and pipeline transfers,
// reusing what the last plans share with it. Its parts live in files of their own:
// analyzer_reuse.cc (what is kept, updated or made again), plan_extents.cc (the plan's checks,
// padded loops and local tensor sizes), operator_work.cc (each operator's kernels and
// collectives), parameter_work.cc (the parameters' groups, collectives and states),
// activation_memory.cc (what backward keeps, recomputes or offloads; pipeline sends).
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/cost/analysis_state.h"
#include "compiler/cost/kernel_precision.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/sharding/cut_sharding.h"

namespace symtensor::compiler::analyzer_internal {

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
  const PlanAnalysis& run();

  // stage_totals(run(), plan_) from the sums kept with the operator work.
  const StageTotals& totals();

 private:
  // Makes state_.analysis.ops the operator work of plan_: kept (the plan differs from one
  // of the last few in what op_work does not read), updated (a few cuts changed) or made
  // again. Returns whether the plan trains.
  bool prepare_operator_work();

  // Whether the backward pass runs the operator's forward again.
  bool recomputed(NodeId id) const;

  // Selective recomputation as torchtitan's "op" option runs it (Stack::selective_recompute),
  // on a graph with layers.
  bool op_level_selective() const;

  // Full recomputation of the first Plan::recompute_layers layers of each stage.
  bool layer_recompute() const { return plan_.recompute == RecomputePolicy::full && !plan_.recompute_layers.empty(); }
  void mark_recomputed_layers();

  static double bytes_of(hardware::Precision p) { return activation_bytes(p); }
  bool low_precision_gemm(NodeId id) const { return runs_low_precision_gemm(ng_, id, plan_.precision); }
  hardware::Precision kernel_precision(NodeId id) const { return compiler::kernel_precision(ng_, id, plan_.precision); }

  // Bytes per element of a low-precision GEMM's quantized copies (a rowwise and a columnwise
  // one: Hopper's FP8 GEMMs read only the TN layout, and MXFP8/NVFP4 quantize both
  // directions from high precision) with their scales (MXFP8: one byte per 32 values; NVFP4:
  // one per 16 values of each copy).
  double low_precision_copy_bytes() const;

  // HBM traffic of quantizing one element: read it in bf16 (twice for per-tensor current
  // scaling's amax pass and MXFP8/NVFP4's two directions), write both copies.
  double quantization_bytes() const { return 2 * 2 + low_precision_copy_bytes(); }

  // Of the batch op_work reads the micro-batch's size alone (batch_): a plan of the same size
  // over another count of micro-batches (a search's shorter steps of one plan) has the same work.
  static bool same_micro_batch(const Plan& a, const Plan& b) {
    if ((a.global_batch > 0) != (b.global_batch > 0) || a.micro_batches < 1 || b.micro_batches < 1) return false;
    return a.global_batch > 0 ? a.global_batch / a.micro_batches == b.global_batch / b.micro_batches
                              : a.micro_batches == b.micro_batches;
  }
  // Everything op_work reads of a plan but the nodes' cuts and stages.
  static bool same_operator_context(const Plan& a, const Plan& b) {
    return a.mode == b.mode && a.precision == b.precision && same_micro_batch(a, b) &&
           a.pipeline_axis == b.pipeline_axis && a.mesh_factors == b.mesh_factors &&
           a.context_parallel_comm == b.context_parallel_comm && a.moe_dispatcher == b.moe_dispatcher &&
           a.moe_comm_overlap == b.moe_comm_overlap && a.moe_load_imbalance == b.moe_load_imbalance &&
           a.node_cuts.size() == b.node_cuts.size() && a.stage_of_node.size() == b.stage_of_node.size();
  }
  // A search prices each plan's cuts under several memory options: their stamp spares
  // comparing every cut on each evaluation (Plan::cuts_stamp).
  static bool same_operator_work(const Plan& a, const Plan& b) {
    return same_operator_context(a, b) && a.stage_of_node == b.stage_of_node &&
           ((a.cuts_stamp != 0 && a.cuts_stamp == b.cuts_stamp) || a.node_cuts == b.node_cuts);
  }
  void index_inputs();

  // A refinement step's plan: the kept operator work with only some cuts changed. An
  // operator's work depends on its own cut and stage and, per input tensor, on the cuts of
  // the tensor's producer and consumers (its layout there; which consumer asks first for a
  // layout pays for the redistribution). So the operators whose cut changed, and every
  // consumer of a tensor they read or write, are priced again, in topological order; the
  // others keep their work (their stage updated), and the inputs of a re-priced operator
  // whose tensor is untouched keep their collectives. The result equals a full analysis.
  // Returns false (nothing changed) when the plan is not such a step, or too many
  // operators changed for it to pay.
  bool update_operator_work(bool train);
  // The cuts' checks are skipped for cuts checked before on the same mesh (a search prices
  // one layout's stamped cuts at each micro-batch size): State::checked_cuts.
  void check_plan() {
    check_sizes_and_stages();
    const PlanAnalyzer::State::CheckedCuts checked{plan_.cuts_stamp, static_cast<int>(mesh_.axes().size()), plan_.pipeline_axis};
    if (checked.stamp != 0 && checked == state_.checked_cuts) return;
    for (NodeId id = 0; id < static_cast<NodeId>(graph_.nodes().size()); ++id) check_node(id);
    state_.checked_cuts = checked;
  }
  void check_sizes_and_stages() const;
  void check_node(NodeId id) const;
  double ways(const std::vector<int>& axes) const {
    double w = 1;
    for (int a : axes) w *= mesh_.axes()[a].size;
    return w;
  }
  void check_divisible(NodeId id) const;

  // Loop l's extent as the operator runs it: NodeCut::padded_extents' where it pads the loop
  // (never below the loop's own extent).
  double padded_extent(NodeId id, int l) const;

  // The work of the padded loops over the work of the loops as the graph states them.
  double loop_padding(NodeId id) const;
  double element_bytes(TensorId t) const;
  double local_elements(TensorId t, const OperandLayout& layout) const;

  // Tensor t's padded elements over its own as `layout` holds it: a dim over a padded loop
  // holds the padded extent (Megatron's padded vocabulary rows); 1 when none is padded.
  double padding(TensorId t, const OperandLayout& layout) const;

  // Collectives turning `from` into `to` for tensor t, priced; cached by layout and
  // shape because repeated layers ask the same question.
  std::vector<CommOp> redistribute(TensorId t, const TensorSharding& from, const TensorSharding& to);

  // For a tensor of routed tokens (a MoeDispatch's output, a MoeCombine's expert outputs) under
  // a deduplicating dispatcher (Plan::moe_dispatcher): the routing node; else kNone.
  NodeId routing_node(NodeId consumer, TensorId t) const;
  // The routing node of a tensor of routed tokens whatever the dispatcher, else kNone.
  NodeId exchanged_routing_node(NodeId consumer, TensorId t) const;
  struct RoutedTokens {
    int experts = 0, top_k = 0;  // 0: not a routed-token tensor, or not deduplicated
    int groups = 1, top_groups = 1;  // group-limited routing (MoeDispatch's expert_groups, top_groups)
  };

  // An all-to-all of routed tokens that crosses nodes, as a deduplicating dispatcher sends it:
  // its bytes scaled by deduplicated_share over the nodes its group spans.
  void deduplicate(CommOp& op, const RoutedTokens& routed) const;

  // Plan::moe_load_imbalance where `capacity` (TensorFacts::routed_capacity) is dropless
  // routing's and the plan cuts the experts over ranks (expert_parallel), else 1: the busiest
  // expert rank's routed work over the graph's (moe_load.h).
  double routed_load(float capacity) const;
  // Whether an expert GEMM's expert loop is cut over devices: without expert parallelism every
  // rank runs all experts on its own tokens, and the routing's skew moves no work between ranks.
  // Found once per analysis (a skewed plan only).
  bool expert_parallel() const;
  // The busiest rank's work of an operator computing on routed tokens (routed_work.cc): its
  // FLOPs, token bytes, kernel time and buffers times routed_load; its weights read once.
  void scale_routed_work(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut) const;
  // A collective moving routed tokens `t`: its bytes times routed_load, priced again.
  void scale_routed_comm(CommOp& op, TensorId t) const;

  // The experts and top-k of a routed-token tensor `t` consumed by `consumer` under a
  // deduplicating dispatcher.
  RoutedTokens routed_tokens(NodeId consumer, TensorId t) const;

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
  void record_outputs(NodeId id);

  // Input i's local bytes and collectives (a redistribution to the operator's layout, and
  // of its gradient back), or, from `old`, its collectives there.
  void input_work(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut, std::size_t i, bool train,
                  const OpWork* old, const std::vector<char>* dirty, double& local_bytes, int& gradient_inputs);

  // State::twin_class, once per graph: a key of everything op_work reads of the graph for
  // the node (its numeric node, its operands' facts and shapes, their producers' kinds,
  // the routing it exchanges tokens for, the aliasing among its inputs).
  void find_twins();
  std::string twin_key(NodeId id) const;
  // The context of input i of `id` as a twin compares it: whether the producer's layout
  // exists, and whether the layouts it would deliver (value, gradient) were delivered already
  // (twin_delivered_, twin_gradient_delivered_; the layouts in twin_wants_, twin_gradients_).
  // `like`: a twin with the same cut, whose gradients' partial axes these share.
  void delivery_context(NodeId id, bool train, const PlanAnalyzer::State::Twin* like);
  // The work at topological position `position` copied from a twin priced before it in the
  // same context, with its side effects (deliveries, produced layouts); false when none is.
  bool copy_twin(NodeId id, std::size_t position, bool train);
  // The copy itself, from `twin` (alike in context: copy_twin found it, or it copied it in the
  // analysis State::twin_replay recorded, `replayed`). False when a collective of the twin's
  // moves a tensor this operator lacks.
  bool take_twin_work(NodeId id, std::size_t position, const PlanAnalyzer::State::Twin& twin, bool replayed);
  // The collectives take_twin_work left with their twin (State::collectives_of_twin), copied
  // onto each operator's own operands: before the operator work is read as a whole.
  void copy_pending_collectives();
  // Whether State::twin_replay recorded this plan's cuts in the same context, and, when it did
  // not, the record started for it.
  bool replay_twins(bool train);

  // With `old` (this operator's work under the kept plan), the inputs whose tensor is not
  // `dirty` keep their collectives from it.
  OpWork op_work(NodeId id, std::size_t position, bool train, const OpWork* old,
                 const std::vector<char>* dirty = nullptr);

  // A value a fused element-wise kernel passes on without writing it (Stack::fused_elementwise).
  bool on_chip(const TensorFacts& facts) const {
    return cluster_.stack.fused_elementwise && facts.fusable_intermediate;
  }

  // A low-precision GEMM quantizes its activation input before the forward and the output's
  // gradient before the backward (memory-bound passes; the weights once per step, not priced).
  void add_quantization(OpWork& w, const Node& node, const NumericNode& nn, const NodeCut& cut, bool train) const;

  // A fused attention kernel at its own efficiency (by head dim and local query length).
  // Its backward recomputes the scores: 2.5x the forward FLOPs (FlashAttention-2's count,
  // five matrix products against two), reading Q, K, V, O and dO and writing dQ, dK, dV.
  void price_attention(OpWork& w, const NumericNode& nn, const NodeCut& cut, bool backward) const;

  // Each parameter's gather unit (ParamWork::gather_unit), found once per graph.
  void find_gather_units();

  // Each parameter: its layout at its first consumer, and the union of the axes over
  // which its gradient is partial (the data-parallel group of that parameter).
  void group_parameters();

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
  ParamPrices prices(PlanAnalyzer::State::ParamGroup& g, int zero) const;

  // Appends to `ops` one collective of `kind` over `axes` (nothing when not `wanted` or the
  // group is empty) of `bytes`.
  static void add_param_comm(std::vector<CommOp>& ops, bool wanted, double seconds, const PlanAnalyzer::State::ParamGroup& g,
                             hardware::Collective kind, const std::vector<int>& axes, const hardware::GroupShape& group,
                             double bytes);
  void add_parameters(PlanAnalysis& a);

  // Inference keeps no activations; weights only (16-bit), in their first consumer's layout.
  void inference_weights(std::vector<StageMemory>& memory) const;

  // Activations kept for backward under the plan's recomputation policy, per stage and
  // (with `by_node`: bytes per node id) on the operator holding each.
  // Under layer_recompute() a recomputed layer keeps what it reads from outside itself (its
  // input, the rotary tables) and the others what they would without recomputation.
  // `offloaded` (under Plan::offload_layers): per layer, the bytes sent to host memory (those
  // layers' saved tensors count there, and one layer's worth stays in device memory, in transit)
  // and the copies' exposed seconds.
  void saved_activations(std::vector<double>& per_stage, std::vector<double>* by_node,
                         Offloaded* offloaded = nullptr) const;
  // Per stage, where its operators that save (bytes per node id, by saved_activations) lie in
  // its forward FLOPs: what an interleaved stage's chunks hold (interleaved_pipeline.h).
  std::vector<std::vector<SavedPosition>> saved_positions(const std::vector<OpWork>& ops,
                                                          const std::vector<double>& saved_by_node) const;
  // Whether the activations held at the peak are counted chunk by chunk: an interleaved
  // pipeline in training (micro_batches_in_flight's mean chunk otherwise).
  bool chunked_in_flight() const;
  // Under chunked_in_flight(): micro-batches' worth of activations stage s holds at its peak
  // (StageMemory), its chunks' saved bytes taken from `positions`.
  double in_flight(int s, const std::vector<SavedPosition>& positions) const;

  // Seconds the host copies of Plan::offload_layers do not hide, per offloaded layer: layer l's
  // saved tensors go out under layer l+1's forward and come back under its backward.
  void add_offload_exposure(Offloaded& offloaded) const;

  // A saved tensor as the smaller of its producer's and its holder's layouts: sequence
  // parallelism keeps a linear's input before the all-gather (gathered again in backward), and
  // a residual add keeps the row-parallel output after the reduce-scatter, not the partial sums.
  double saved_elements(const SavedTensor& s, NodeId holder) const;     // State::Sums::saved_elements
  double saved_elements_of(const SavedTensor& s, NodeId holder) const;  // made anew

  // `kept(saved tensor, holder)`: whether it counts (null: all).
  void add_saved(const std::vector<SavedTensor>& saved, const std::function<bool(const SavedTensor&, NodeId)>& kept,
                 std::vector<double>& per_stage, std::vector<double>* by_node, Offloaded* offloaded) const;
  void add_activations(PlanAnalysis& a, bool train);
  void add_pipeline_transfers(std::vector<double>& p2p_bytes) const;

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
  // copy_twin's delivery context (delivery_context), its storage reused.
  std::vector<char> twin_delivered_, twin_gradient_delivered_;
  std::vector<std::optional<OperandLayout>> twin_wants_, twin_gradients_;
  mutable int expert_parallel_ = -1;           // expert_parallel(), -1 until found
};

}  // namespace symtensor::compiler::analyzer_internal
