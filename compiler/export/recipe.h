#pragma once
// A plan read as the recipe of the training frameworks: tensor, pipeline, virtual pipeline,
// context and data parallel degrees, micro-batch size, recomputation, ZeRO, sequence
// parallelism and the layers of each pipeline stage, recovered from the plan's mesh, cuts
// and fields (never from node names). The mesh axes are classified by what they cut in the
// transformer's weight GEMMs (see compiler/analysis/transformer_structure.h): the column
// GEMMs' output width (tp), their batch loop (dp), their sequence loop (cp); the expert
// GEMMs' expert loop (ep) and width (etp).
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/strategies/megatron.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct ParallelRecipe {
  int world = 1;            // devices of the cluster
  int gpus_per_node = 1, nodes = 1;
  int tp = 1, pp = 1, vp = 1, cp = 1, dp = 1;
  // Expert parallelism (MoE): the experts' loop cut ep ways, their GEMMs' width etp ways
  // (1 or tp); `experts` per MoE layer, 0 for dense models.
  int ep = 1, etp = 1, experts = 0;
  int micro_batch_size = 1;  // samples per micro-batch per data-parallel rank
  int micro_batches = 1;     // gradient accumulation steps
  double global_batch = 0;
  double seq = 0;            // the value bound to the sequence dim (0 when unbound)
  bool sp = false, distopt = false;
  int zero_stage = 0;
  // HSDP: the data-parallel replicas over which the sharded model states are replicated
  // (Plan::replicate_axes; torchtitan's data_parallel_replicate_degree), dp / dp_replicate
  // the shard group. 1: sharded over every data-parallel rank.
  int dp_replicate = 1;
  RecomputePolicy recompute = RecomputePolicy::none;
  // What selective recomputation keeps as the plan was priced (the cluster's
  // Stack::selective_recompute): Megatron-LM's --recompute-granularity selective recomputes
  // the attention core, torchtitan's op-level mode all but every other matmul; a target whose
  // selective mode is the other one does not write the plan priced (apply_target_limits).
  hardware::SelectiveRecompute selective = hardware::SelectiveRecompute::attention_core;
  // Megatron-Core's MoE token exchange as priced (Plan::moe_dispatcher, Plan::moe_comm_overlap).
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  bool moe_comm_overlap = false;
  // With full recomputation: per pipeline stage, how many of its layers (Plan::
  // recompute_layers); empty: every layer. recompute_num_layers() is Megatron's count.
  std::vector<int> recompute_layers;
  int recompute_num_layers() const;  // per model chunk (the largest stage's count / vp, rounded up); 1 when empty
  int offload_layers = 0;  // Plan::offload_layers (Megatron's --cpu-offloading-num-layers)
  Schedule schedule = Schedule::one_f_one_b;
  hardware::Precision precision = hardware::Precision::bf16;
  std::vector<int> tp_axes, dp_axes, cp_axes;  // mesh axis ids of the plan's mesh, major to minor
  // The vocabulary as the plan runs it (NodeCut::padded_extents of the LM head's vocabulary
  // loop; 0: not padded) and the --make-vocab-size-divisible-by that makes Megatron-LM pad it
  // so at tp (128 unless the padding asks for another; megatron_vocab_divisor).
  long long padded_vocab = 0;
  int vocab_div = 128;
  int layers = 0;                        // decoder layers found (multi-token prediction's aside)
  int mtp_layers = 0;                    // multi-token prediction layers (on the last stage)
  std::vector<int> layers_per_stage;     // per pipeline stage (device stage): decoder layers
  // What the recipe cannot say about this plan, one line each (an axis that is neither
  // tp, cp, dp nor pp; inconsistent cuts between layers; layers of unequal stages that are
  // not only the first and last).
  std::vector<std::string> not_expressible;

  bool uneven_stages() const;  // layers_per_stage not all equal
  // The split Megatron-LM makes with the embedding and the loss counted as a layer each
  // (megatron_stage_layers when pp x vp does not divide the layers but divides them + 2).
  bool embedding_and_loss_as_layers() const;
  // The first and last stages' layers as Megatron-LM is told them
  // (--decoder-first/last-pipeline-num-layers); {0, 0} where its own split gives the plan's
  // stages (even over pp x vp chunks, or the embedding and the loss counted as layers).
  std::pair<int, int> first_last_layers() const;
  MegatronKnobs knobs() const; // the Megatron knobs of this recipe
};

ParallelRecipe recover_recipe(Graph& graph, const hardware::Cluster& cluster, const Plan& plan);

}  // namespace symtensor::compiler
