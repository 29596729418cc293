#pragma once
// What a Plan asks of every device, per micro-batch: the work of each operator (local
// FLOPs and bytes, forward and backward), the collectives it needs (redistributions of
// its inputs, partial-sum reductions, and their duals in the backward pass), what it
// keeps for the backward pass, the parameter gradient synchronisation, and the memory of
// each pipeline stage. Plain numbers: the analytic estimator and the simulator lowering
// both read it, so the two evaluators price the same work.
//
// Backward is derived from iteration spaces: the gradient of an operand sums over every
// loop that does not index it, so it is partial over the mesh axes cutting those loops
// (a MatMul's activation gradient over a cut `n`, a weight's gradient over a cut batch
// loop: the data-parallel all-reduce). Backward FLOPs are the forward FLOPs once per
// operand that needs a gradient.
#include <memory>
#include <string>
#include <vector>

#include "compiler/cost/moe_load.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/collectives.h"

namespace symtensor::compiler {

struct CommOp {
  hardware::Collective kind = hardware::Collective::all_reduce;
  std::vector<int> axes;       // mesh axis ids of the group
  hardware::GroupShape group;  // ranks per topology level
  double bytes = 0;            // S as nccl-tests defines it
  double seconds = 0;          // analytic (hardware::collective_time)
  TensorId tensor = kNone;     // the tensor moved
  // Runs beside its operator's kernel instead of before it (ring attention passes K/V
  // blocks while it computes on the previous ones): only what exceeds the kernel's time is
  // exposed (exposed_seconds).
  bool overlapped = false;
  // Runs beside the compute of the adjacent micro-batch (Plan::moe_comm_overlap, Megatron's
  // combined 1F1B): off the critical path of its operator; a stage's pass exposes only what
  // such exchanges take beyond the pass's compute.
  bool beside_microbatch = false;
  // A gradient reduce-scatter under ZeRO-2/3: the gradients are kept sharded, so each
  // micro-batch's backward reduces its own (FSDP2's default, Megatron-FSDP), not the step's
  // last alone (accumulating whole gradients would keep them whole in memory).
  bool every_micro_batch = false;
};

// Time `ops` add to the critical path of an operator whose kernel takes `kernel_seconds`:
// the blocking ones whole, the overlapped ones beyond the kernel's time, none of those beside
// the adjacent micro-batch (their stage's totals expose them).
double exposed_seconds(const std::vector<CommOp>& ops, double kernel_seconds);
// Seconds of `ops` that run beside the adjacent micro-batch's compute (not in exposed_seconds).
double beside_microbatch_seconds(const std::vector<CommOp>& ops);

// Whether selective recomputation prices as no recomputation on this graph under this stack,
// to the bit (Analyzer::recomputed, add_saved): no operator writes an attention-score-sized
// tensor (fused attention's backward recomputes its scores itself) and the stack's selective
// policy is attention's core, not every other GEMM. The searches then leave it out.
bool selective_recompute_is_none(const NumericGraph& ng, const hardware::Stack& stack);

// Per node: the ordinal of its layer (NumericGraph::node_layers) among the layers of its
// pipeline stage, in order, or -1 outside layers; `counts` gets each stage's layer count.
// Plan::recompute_layers counts these.
std::vector<int> stage_layer_ordinals(const NumericGraph& ng, const Plan& plan, std::vector<int>* counts = nullptr);

// An operator's work except its collectives (OpWork): what the analyzer copies from a twin
// at once, the collectives only when an analysis is read.
struct OpNumbers {
  NodeId node = kNone;
  int stage = 0;
  double ways = 1;  // devices its work is divided over (its cut's ways)
  double fwd_flops = 0, fwd_bytes = 0, fwd_seconds = 0;  // local, per micro-batch
  double bwd_flops = 0, bwd_bytes = 0, bwd_seconds = 0;  // 0 in inference
  double saved_bytes = 0;        // activations kept for backward, per micro-batch
  // Plan::offload_layers: host copies of its layer's saved tensors that the next layer's
  // forward (backward) does not hide, per micro-batch.
  double offload_fwd_seconds = 0, offload_bwd_seconds = 0;
  // Local bytes of its outputs and activation (non-parameter) inputs: live while it runs
  // forward, and as their gradients while it runs backward.
  double buffer_bytes = 0;
  bool recomputed = false;       // forward run again in the backward pass
};

struct OpWork : OpNumbers {
  std::vector<CommOp> fwd_comm;  // before/after the op on the critical path
  std::vector<CommOp> bwd_comm;
};

struct ParamWork {
  TensorId tensor = kNone;
  int stage = 0;
  double local_elements = 0;      // this device's shard of the parameter
  std::vector<CommOp> grad_sync;  // during backward: all-reduce, or reduce-scatter under ZeRO-2/3
  std::vector<CommOp> regather;   // ZeRO-1/2, distributed optimizer: all-gather of the updated weights after the step
  std::vector<CommOp> gather;     // ZeRO-3: all-gather before use (forward and backward)
  // The unit ZeRO-3 gathers it with: its first consumer's layer (layer_of), as FSDP wraps
  // each layer; outside the layers, its first consumer's (one operator's parameters).
  int gather_unit = 0;
};

struct StageMemory {
  double parameters = 0, gradients = 0, optimizer = 0;  // bytes per device
  double activations_per_micro_batch = 0;
  // Micro-batches' worth of activations held at the peak, by schedule: GPipe m, 1F1B
  // p - s, interleaved 1F1B its warm-up chunks (each 1/v of a micro-batch) plus one.
  double micro_batches_in_flight = 1;
  // Transient buffers beside them at the peak: the largest operator's buffer_bytes (the LM
  // head's logits and their gradient on the last stage), and the collectives' staging
  // buffers (ZeRO-3: the gathered weights of the largest unit and the next one prefetched;
  // ZeRO-2/3: a unit's unsharded gradients before their reduce-scatter).
  double working_buffers = 0, collective_buffers = 0;
  NodeId working_buffers_node = kNone;  // whose buffers working_buffers are
  double reserve = 0;                   // the device's memory_reserve_bytes
  double peak() const;
};

struct PlanAnalysis {
  std::vector<OpWork> ops;        // in topological order
  std::vector<ParamWork> params;
  std::vector<StageMemory> stage_memory;
  std::vector<double> p2p_bytes;  // per stage boundary (s -> s+1), per micro-batch
  double optimizer_seconds_per_stage = 0;
  double device_memory = 0;       // capacity, bytes
  hardware::StackMemory state_bytes;  // the model states' bytes per parameter, as the stack keeps them
  MoeLoad moe_load;                   // the routing load priced (Plan::moe_load_imbalance)
};

// A plan's analysis summed per pipeline stage, one micro-batch: what the step estimate
// reads. stage_totals(analyze(plan), plan) and PlanAnalyzer::totals(plan) are equal.
struct StageTotals {
  // Seconds: kernels, and the collectives each operator exposes past its kernel; backward
  // includes the recomputed forward.
  std::vector<double> fwd_compute, fwd_comm, bwd_compute, bwd_comm;
  // Seconds of the parameters' collectives: gradient synchronisation, ZeRO-3's gathers of
  // one pass and the largest unit's (ParamWork::gather_unit).
  std::vector<double> grad_sync, gather, first_gather;
  // Of the gradient synchronisation, what each micro-batch's backward runs (ZeRO-2/3's
  // reduce-scatter, CommOp::every_micro_batch); grad_sync holds the rest, run once a step.
  std::vector<double> micro_batch_grad_sync;
  std::vector<double> p2p_bytes;    // per stage boundary
  std::vector<double> peak_memory;  // bytes per device
  double model_flops = 0, hardware_flops = 0;  // all devices; hardware adds the recompute
  // The optimizer step and, under ZeRO-1/2 or the distributed optimizer, the all-gather of
  // the updated weights after it (ParamWork::regather), on the slowest stage: nothing is
  // left to hide either behind.
  double after_step_s = 0;
  double device_memory = 0;
};

StageTotals stage_totals(const PlanAnalysis& analysis, const Plan& plan);

// Prices plans of one graph on one cluster. Keeps what the plans share between calls:
// every redistribution priced once per mesh, layout and shape (repeated layers and
// repeated plans never reach GiNaC again), and per-tensor scratch. Not thread-safe.
class PlanAnalyzer {
 public:
  // `ng` must be NumericGraph(graph); all three must outlive the analyzer.
  PlanAnalyzer(Graph& graph, const hardware::Cluster& cluster, const NumericGraph& ng);
  ~PlanAnalyzer();
  PlanAnalyzer(const PlanAnalyzer&) = delete;
  PlanAnalyzer& operator=(const PlanAnalyzer&) = delete;

  // Throws (one line) when the plan does not fit the graph, as analyze_plan.
  PlanAnalysis analyze(const Plan& plan);
  // The same without a copy: valid until the next call (a search that only wants the
  // estimate). After a throw the analyzer holds no analysis.
  const PlanAnalysis& analyze_in_place(const Plan& plan);
  // stage_totals(analyze(plan), plan), valid until the next call. A plan with the operator
  // work of the last one (a search's ZeRO, recomputation and interleaving staircase) costs
  // O(stages): the sums per recomputation policy and per ZeRO stage are kept with the work.
  const StageTotals& totals(const Plan& plan);

  // Whether an analysis from scratch copies an operator's work from its twin in an earlier
  // repeated layer when both are priced in the same context (on by default; the result is the
  // same either way: tests compare the two).
  void reuse_repeated_layers(bool on);
  // How many operators' work was copied from a twin, over every analysis so far.
  std::size_t twin_copies() const;
  // How many analyses from scratch copied the twins a previous one of the same stamped cuts
  // found (State::TwinReplay), without comparing contexts again.
  std::size_t twin_replays() const;

  Graph& graph() const { return graph_; }
  const hardware::Cluster& cluster() const { return cluster_; }
  const NumericGraph& numeric() const { return ng_; }

  struct State;

 private:
  Graph& graph_;
  const hardware::Cluster& cluster_;
  const NumericGraph& ng_;
  std::unique_ptr<State> state_;
};

// Throws (one line) when the plan does not fit the graph (sizes, unknown axes, a cut of a
// dim that does not divide).
PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan);
// The same with the graph's compiled numeric form made once by the caller (a search that
// prices many plans of one graph): `ng` must be NumericGraph(graph).
PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan, const NumericGraph& ng);

}  // namespace symtensor::compiler
