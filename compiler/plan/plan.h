#pragma once
// A Plan: how a model runs on a cluster. Every strategy (symtensor, megatron, dp, zero3,
// ilp, a hand-written plan.yaml) produces one; the analytic cost model, the simulator
// lowering and the ONNX rewrite all consume it.
//
// The device mesh is the cluster's mesh with each topology level factored into axes
// (`mesh_factors`, outermost level first). At most one axis is the pipeline axis: its
// coordinate is the pipeline stage, and operators are cut only over the other axes.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan_inputs.h"
#include "compiler/sharding/node_cut.h"
#include "hardware/cluster.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

enum class ExecutionMode { train, infer };
enum class Schedule { gpipe, one_f_one_b, interleaved_1f1b };
enum class RecomputePolicy { none, selective, full };
// How context parallelism moves K and V (Megatron-Core's cp_comm_type): passed around a
// ring of the cp ranks while attention computes (p2p), or all-gathered before it.
enum class ContextParallelComm { ring, all_gather };
// Megatron-Core's MoE token dispatcher: the all-to-all (one copy of a token per expert it is
// routed to), or the flex dispatcher's DeepEP / HybridEP kernels, which send a token once to
// each other node holding one of its experts and fan it out over NVLink there.
enum class MoeDispatcher { alltoall, deepep, hybridep };

std::string_view to_string(ExecutionMode m);
std::string_view to_string(Schedule s);
std::string_view to_string(RecomputePolicy r);
ExecutionMode parse_execution_mode(std::string_view text);   // throws on unknown text
Schedule parse_schedule(std::string_view text);
RecomputePolicy parse_recompute(std::string_view text);
std::string_view to_string(ContextParallelComm c);
ContextParallelComm parse_context_parallel_comm(std::string_view text);  // "ring" or "all_gather"
std::string_view to_string(MoeDispatcher d);
MoeDispatcher parse_moe_dispatcher(std::string_view text);  // "alltoall", "deepep" or "hybridep"

// NodeCut, how one operator's iteration space is cut: compiler/sharding/node_cut.h.

struct Plan {
  std::string strategy;  // "symtensor", "megatron", "dp", "zero3", "ilp", "file"
  std::string model;     // model file, for the record
  std::string cluster;   // cluster profile name
  std::string stack = "megatron";  // the software stack it was priced for (hardware::Stack::name)
  PlanInputs inputs;     // what compile was given (empty when not recorded): export needs nothing else
  ExecutionMode mode = ExecutionMode::train;
  hardware::Precision precision = hardware::Precision::bf16;

  std::vector<std::vector<int>> mesh_factors;  // per topology level, outermost level first
  int pipeline_axis = -1;                      // mesh axis id, or -1 without pipelining

  // Per node id of the imported graph: its pipeline stage and its cut. Both sized to
  // the graph's node count.
  std::vector<int> stage_of_node;
  std::vector<NodeCut> node_cuts;
  // A search's mark on cuts it made anew (new_cuts_stamp): two plans with the same non-zero
  // stamp have the same node_cuts, which the cost model's reuse check then takes without
  // comparing them cut by cut. 0: unknown. Whoever changes a stamped plan's cuts sets a new
  // stamp or 0; the searches clear it on the plans they return.
  std::uint64_t cuts_stamp = 0;

  double global_batch = 0;      // samples per step (the value bound to the batch dim)
  int micro_batches = 1;        // per step, per pipeline (global_batch / dp / micro-batch size)
  // On a mixed fleet (issue #32): per group of the cluster (hardware::Cluster::groups, in
  // order), the micro-batches each of that group's data-parallel replicas runs per step, all
  // of the one micro-batch size (global_batch / micro_batches / dp); the shares add up to the
  // global batch: sum over groups of devices x count = devices x micro_batches
  // (compiler/plan/batch_shares.h). Empty: every replica runs micro_batches (uniform).
  std::vector<int> group_micro_batches;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;       // model chunks per device (interleaved 1F1B)
  RecomputePolicy recompute = RecomputePolicy::none;
  // With recompute == full: per pipeline stage, how many of its transformer layers (the
  // first ones, in order) are recomputed whole; the others keep every activation
  // (Megatron's --recompute-method block, per stage). Empty: every layer, and the rest.
  std::vector<int> recompute_layers;
  // Megatron's --cpu-offloading-num-layers (one pipeline stage only): the activations the first
  // offload_layers layers save for backward go to host memory in the forward pass and come
  // back in the backward, each layer's copy under the next layer's compute. 0: none.
  int offload_layers = 0;
  int zero_stage = 0;           // 0..3; with stage_zero_stages, the least of them
  // Per pipeline stage, its ZeRO stage (0..3), where the stages shard their model states
  // differently (issue #32: on a mixed fleet a memory-poor group's stages shard what the
  // others keep). Empty: zero_stage on every stage. zero_stage_of reads either.
  std::vector<int> stage_zero_stages;
  bool distributed_optimizer = false;  // Megatron's: optimizer state sharded over data parallel
  // HSDP (torchtitan's data_parallel_replicate_degree): the mesh axes of the data-parallel
  // group over which the model states are replicated, not sharded. ZeRO (and the distributed
  // optimizer) then shards over the rest of each parameter's data-parallel group only (the
  // shard group, inside a node or group); the gradients are reduce-scattered inside the shard
  // group and their shards all-reduced across the replicas, the weights gathered inside the
  // shard group. Empty: sharded over the whole group. Meaningless without ZeRO >= 1.
  std::vector<int> replicate_axes;
  bool sequence_parallel = false;      // recorded for Megatron plans; the cuts say what it means
  ContextParallelComm context_parallel_comm = ContextParallelComm::ring;  // for attention cut on its queries
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;                // for expert-parallel token exchanges
  // Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): the expert dispatch and
  // combine all-to-alls of one micro-batch run beside the forward or backward compute of the
  // adjacent one. Priced as exchanges off the compute stream that a chunk's pass waits for at
  // its end, not at the expert GEMM (CommOp::beside_microbatch).
  bool moe_comm_overlap = false;
  // The routing load (--moe-load-imbalance): the busiest expert-parallel rank's routed tokens
  // over the mean, >= 1 (1: token-count balanced). Every prediction prices that rank
  // (compiler/cost/moe_load.h).
  double moe_load_imbalance = 1;

  int pipeline_stages() const;  // size of the pipeline axis, or 1
  // The ZeRO stage of pipeline stage `stage` as written (stage_zero_stages, else zero_stage),
  // and as it runs: the distributed optimizer shards the optimizer states at least (ZeRO-1).
  int zero_stage_of(int stage) const;
  int effective_zero_stage_of(int stage) const;
  // effective_zero_stage_of for every pipeline stage; throws (one line) when
  // stage_zero_stages does not name one per stage.
  std::vector<int> effective_zero_stages() const;
};

// Empty when `imbalance` is a routing load (Plan::moe_load_imbalance: finite, >= 1), else why
// not: "F is not a routing load (the busiest expert rank's tokens over the mean: ...)".
std::string moe_load_imbalance_problem(double imbalance);

// "none", "selective", "full", or "full (layers 3/1)" under Plan::recompute_layers.
std::string describe_recompute(RecomputePolicy policy, const std::vector<int>& layers);
std::string describe_recompute(const Plan& plan);

// "ZeRO-3"; under Plan::stage_zero_stages each stage's as it runs, "ZeRO 1/1/3/3 by stage"
// (the distributed optimizer counted as 1); "" when none is written.
std::string describe_zero(const Plan& plan);

// The plan's device mesh (the cluster's mesh factored as the plan says).
hardware::DeviceMesh plan_mesh(const Plan& plan, const hardware::Cluster& cluster);

// A Plan::cuts_stamp no call returned before (thread-safe).
std::uint64_t new_cuts_stamp();

}  // namespace symtensor::compiler
