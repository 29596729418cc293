#include "compiler/export/target_limits.h"

#include <algorithm>
#include <exception>
#include <string_view>

#include <fmt/format.h>

namespace symtensor::compiler {
namespace {

// Drops a degree by folding it into data parallelism (the world size stays).
void fold_into_dp(ParallelRecipe& r, int& degree) {
  r.dp *= degree;
  degree = 1;
}

// Uneven stages become even ones, with the item saying why (`why` after the layer counts).
void even_stages(ParallelRecipe& r, std::vector<std::string>& items, std::string_view why) {
  if (!r.uneven_stages()) return;
  items.push_back(fmt::format("uneven pipeline stages ({} layers): {}", fmt::join(r.layers_per_stage, ","), why));
  if (r.pp > 0 && r.layers % r.pp == 0) r.layers_per_stage.assign(r.pp, r.layers / r.pp);
}

// A target without expert parallelism: the experts are replicated over the data-parallel
// ranks (and tensor-parallel as the dense layers) instead.
void no_expert_parallelism(ParallelRecipe& r, std::vector<std::string>& items, std::string_view why) {
  if (r.ep <= 1) return;
  items.push_back(fmt::format("expert parallelism ep={}: {}; experts replicated over data parallelism", r.ep, why));
  r.ep = 1, r.etp = r.tp;
  r.dispatcher = MoeDispatcher::alltoall, r.moe_comm_overlap = false;
}

// Megatron-Core's flex dispatcher and combined 1F1B, priced as such: a target that exchanges
// tokens with its own all-to-all, one micro-batch at a time, runs another exchange.
void megatron_moe_exchange(ParallelRecipe& r, std::vector<std::string>& items, std::string_view target) {
  if (r.dispatcher != MoeDispatcher::alltoall) {
    items.push_back(fmt::format("the {} token dispatcher (one copy of a token per remote node): {} sends one per expert with "
                                "its all-to-all; nearest: the all-to-all", to_string(r.dispatcher), target));
    r.dispatcher = MoeDispatcher::alltoall;
  }
  if (r.moe_comm_overlap) {
    items.push_back(fmt::format("the expert all-to-alls beside the adjacent micro-batch (Megatron-Core's combined 1F1B): "
                                "{} runs them in line; nearest: in line", target));
    r.moe_comm_overlap = false;
  }
}

// A target without pipelines: the stages fold into data parallelism.
void no_pipeline(ParallelRecipe& r, std::vector<std::string>& items, std::string_view why) {
  if (r.pp <= 1) return;
  items.push_back(fmt::format("pipeline parallelism pp={}: {}; folded into data parallelism", r.pp, why));
  fold_into_dp(r, r.pp);
  r.vp = 1, r.schedule = Schedule::one_f_one_b, r.layers_per_stage.assign(1, r.layers);
}

// Megatron's block method recomputes one count of layers in every stage (per chunk): the
// per-stage counts become the largest.
void one_recompute_count(ParallelRecipe& r, std::vector<std::string>& items) {
  if (r.recompute_layers.empty()) return;
  const int most = *std::max_element(r.recompute_layers.begin(), r.recompute_layers.end());
  if (std::count(r.recompute_layers.begin(), r.recompute_layers.end(), most) != static_cast<long>(r.recompute_layers.size()))
    items.push_back(fmt::format("recomputation of {} layers per stage: --recompute-num-layers takes one count; nearest: {} in every stage",
                                fmt::join(r.recompute_layers, "/"), most));
  r.recompute_layers.assign(r.recompute_layers.size(), most);
  if (r.vp > 1 && most % r.vp != 0)
    items.push_back(fmt::format("recomputation of {} layers per stage over {} chunks: nearest {} per chunk", most, r.vp,
                                r.recompute_num_layers()));
}

// A target that checkpoints every layer or none.
void every_layer_recomputed(ParallelRecipe& r, std::vector<std::string>& items, std::string_view why) {
  if (r.recompute_layers.empty()) return;
  items.push_back(fmt::format("recomputation of {} layers per stage: {}; nearest: every layer", fmt::join(r.recompute_layers, "/"), why));
  r.recompute_layers.clear();
}

// ZeRO-1/2 or the distributed optimizer: part of the model states sharded. Megatron-FSDP's
// optim_grads_params (ZeRO-3, which implies the distributed optimizer) shards them all.
bool shards_part_of_the_states(const ParallelRecipe& r) {
  return r.zero_stage == 1 || r.zero_stage == 2 || (r.distopt && r.zero_stage < 3);
}

// A target that shards the model states over every data-parallel rank or none: HSDP's
// replicas become one shard group.
void no_hsdp(ParallelRecipe& r, std::vector<std::string>& items, std::string_view why) {
  if (r.dp_replicate <= 1) return;
  items.push_back(fmt::format("HSDP ({} replicas of {}-way sharded states): {}; nearest: sharded over all {} data-parallel ranks",
                              r.dp_replicate, r.dp / r.dp_replicate, why, r.dp));
  r.dp_replicate = 1;
}

// Selective recomputation priced with another policy than the target's selective mode runs
// (hardware::SelectiveRecompute): the target would recompute other tensors than the plan
// priced, so the plan is not written exactly; nearest: full recomputation, which every
// policy prices alike.
void own_selective_policy(ParallelRecipe& r, std::vector<std::string>& items, hardware::SelectiveRecompute runs) {
  if (r.recompute != RecomputePolicy::selective || r.selective == runs) return;
  const bool op_level = r.selective == hardware::SelectiveRecompute::every_other_matmul;
  items.push_back(op_level ? "selective recomputation priced as torchtitan's op-level policy (the stack's recompute.selective "
                             "every_other_matmul): Megatron-Core's --recompute-granularity selective recomputes the attention "
                             "core only; nearest: full"
                           : "selective recomputation priced as Megatron-LM's (the attention core recomputed): torchtitan's "
                             "selective mode (option op) recomputes all but every other matmul of a layer; nearest: full "
                             "(--stack torchtitan prices its own policy)");
  r.recompute = RecomputePolicy::full;
}

}  // namespace

std::vector<std::string> apply_target_limits(ExportTarget target, ExecutionMode mode, ParallelRecipe& r) {
  std::vector<std::string> items;
  const std::string name(to_string(target));
  if (mode == ExecutionMode::infer) items.push_back("an inference plan: written as the training recipe of the same layout");
  if (r.offload_layers > 0 && target != ExportTarget::megatron && target != ExportTarget::nemo) {
    items.push_back(fmt::format("activation offloading of {} layers: only Megatron-Core's --cpu-offloading-num-layers offloads "
                                "saved activations; nearest: none", r.offload_layers));
    r.offload_layers = 0;
  }
  switch (target) {
    case ExportTarget::megatron:
      if (r.zero_stage >= 1 && !r.distopt && r.zero_stage == 1) r.distopt = true;  // ZeRO-1 is the distributed optimizer
      no_hsdp(r, items, "the distributed optimizer and Megatron-FSDP shard over the whole data-parallel group as written");
      own_selective_policy(r, items, hardware::SelectiveRecompute::attention_core);
      one_recompute_count(r, items);
      break;
    case ExportTarget::nemo:
      if (r.zero_stage >= 2) {
        items.push_back(fmt::format("ZeRO-{}: MegatronStrategy shards optimizer states only (distributed optimizer)", r.zero_stage));
        r.zero_stage = 0, r.distopt = true;
      }
      if (r.zero_stage == 1) r.zero_stage = 0, r.distopt = true;
      no_hsdp(r, items, "MegatronStrategy's distributed optimizer shards over the whole data-parallel group");
      even_stages(r, items, "MegatronStrategy splits the layers evenly");
      own_selective_policy(r, items, hardware::SelectiveRecompute::attention_core);
      one_recompute_count(r, items);
      break;
    case ExportTarget::torchtitan:
      if (r.tp > 1 && !r.sp) {
        items.push_back("tensor parallelism without sequence parallelism: torchtitan's TP always shards the norms on the sequence");
        r.sp = true;
      }
      if (r.dp > 1 && shards_part_of_the_states(r)) {
        items.push_back(fmt::format("{}: torchtitan replicates (DDP) or fully shards (FSDP, ZeRO-3); nearest: FSDP",
                                    r.distopt && r.zero_stage == 0 ? std::string("distributed optimizer")
                                                                   : fmt::format("ZeRO-{}", r.zero_stage)));
        r.zero_stage = 3, r.distopt = false;
      }
      if (!r.embedding_and_loss_as_layers()) even_stages(r, items, "written as even layers per stage");
      own_selective_policy(r, items, hardware::SelectiveRecompute::every_other_matmul);
      every_layer_recomputed(r, items, "activation_checkpoint mode full wraps every block");
      megatron_moe_exchange(r, items, "torchtitan");
      if (r.ep > 1 && r.etp != 1) {
        // [parallelism] states expert_parallel_degree only: experts are not tensor-parallel.
        items.push_back(fmt::format("expert tensor parallelism etp={}: torchtitan's [parallelism] states expert_parallel_degree "
                                    "only; nearest: etp=1", r.etp));
        r.etp = 1;
        if (r.tp > 1 && r.ep % r.tp != 0) no_expert_parallelism(r, items, fmt::format("with etp=1 it must be a multiple of tp={}", r.tp));
      }
      break;
    case ExportTarget::deepspeed:
      no_hsdp(r, items, "ZeRO partitions over the whole data-parallel group");
      no_expert_parallelism(r, items, "the DeepSpeed config has no key for it (deepspeed.moe sets ep_size in the model code)");
      if (r.cp > 1) {
        items.push_back(fmt::format("context parallelism cp={}: no DeepSpeed config key; folded into data parallelism", r.cp));
        fold_into_dp(r, r.cp);
      }
      if (r.tp > 1 && r.pp > 1) {
        items.push_back(fmt::format("tensor parallelism tp={} with pipeline parallelism: AutoTP does not combine with PipelineModule; "
                                    "folded into data parallelism", r.tp));
        fold_into_dp(r, r.tp);
      }
      if (r.sp) {
        items.push_back("sequence parallelism: AutoTP has no Megatron-style sequence parallelism");
        r.sp = false;
      }
      if (r.vp > 1) {
        items.push_back(fmt::format("interleaved pipeline (vp={}): DeepSpeed's pipeline engine runs 1F1B only", r.vp));
        r.vp = 1, r.schedule = Schedule::one_f_one_b;
      }
      if (r.distopt && r.zero_stage == 0) r.zero_stage = 1, r.distopt = false;
      if (r.pp > 1 && r.zero_stage >= 2) {
        items.push_back(fmt::format("ZeRO-{} with a pipeline: DeepSpeed's pipeline engine supports ZeRO-0/1 only", r.zero_stage));
        r.zero_stage = 1;
      }
      if (r.recompute == RecomputePolicy::selective) {
        items.push_back("selective recomputation: DeepSpeed checkpoints whole layers; nearest: full");
        r.recompute = RecomputePolicy::full;
      }
      even_stages(r, items, "PipelineModule partitions uniformly");
      every_layer_recomputed(r, items, "the config checkpoints at one interval");
      break;
    case ExportTarget::dtensor:
      no_hsdp(r, items, "the script's fully_shard takes the one-dimensional data-parallel mesh");
      no_pipeline(r, items, "the script builds no pipeline");
      no_expert_parallelism(r, items, "parallelize_module's styles do not shard experts");
      if (r.cp > 1) {
        items.push_back(fmt::format("context parallelism cp={}: not in parallelize_module's styles; folded into data parallelism", r.cp));
        fold_into_dp(r, r.cp);
      }
      if (r.dp > 1 && shards_part_of_the_states(r)) {
        items.push_back("ZeRO-1/2 or the distributed optimizer: the script replicates (DDP) or fully shards (fully_shard); nearest: fully_shard");
        r.zero_stage = 3, r.distopt = false;
      }
      if (r.recompute == RecomputePolicy::selective) {
        items.push_back("selective recomputation: the script wraps whole layers in checkpoint_wrapper; nearest: full");
        r.recompute = RecomputePolicy::full;
      }
      every_layer_recomputed(r, items, "the script wraps every layer");
      break;
    case ExportTarget::jax:
      no_hsdp(r, items, "parameters are sharded over all the batch axes or none");
      no_pipeline(r, items, "PartitionSpecs shard within one program");
      no_expert_parallelism(r, items, "the PartitionSpecs written shard the dense layers' axes only");
      if (r.dp > 1 && shards_part_of_the_states(r)) {
        items.push_back("ZeRO-1/2 or the distributed optimizer: parameters are either replicated or sharded over the batch axes; nearest: sharded (ZeRO-3)");
        r.zero_stage = 3, r.distopt = false;
      }
      // No stack prices jax.checkpoint's dots_with_no_batch_dims_saveable: it keeps the weight
      // matmuls' outputs but recomputes the layer's elementwise ops as well as attention's dots.
      if (r.recompute == RecomputePolicy::selective) {
        items.push_back("selective recomputation: jax.checkpoint's dots_with_no_batch_dims_saveable also recomputes the "
                        "layer's norms and activations, which no stack's selective policy prices; nearest: full");
        r.recompute = RecomputePolicy::full;
      }
      every_layer_recomputed(r, items, "one jax.checkpoint policy for every layer");
      break;
  }
  return items;
}

std::vector<std::string> recipe_beyond_target(ExportTarget target, const ParallelRecipe& recipe) {
  if (target != ExportTarget::jax && !recipe.not_expressible.empty()) return recipe.not_expressible;
  ParallelRecipe adjusted = recipe;
  return apply_target_limits(target, ExecutionMode::train, adjusted);
}

ParallelRecipe megatron_layout_recipe(const MegatronKnobs& k, int layers, hardware::SelectiveRecompute selective) {
  ParallelRecipe r;
  r.tp = k.tp, r.pp = k.pp, r.vp = std::max(k.vp, 1), r.cp = k.cp, r.dp = std::max(k.dp, 1);
  r.ep = k.ep, r.etp = expert_tp(k);
  r.dispatcher = k.dispatcher, r.moe_comm_overlap = k.ep_overlap;
  r.micro_batch_size = k.mb;
  r.sp = k.sp && k.tp > 1;
  r.distopt = k.distopt || k.fsdp > 0;
  r.zero_stage = k.fsdp;
  r.dp_replicate = k.replicate;
  r.recompute = k.recompute;
  r.selective = selective;
  r.schedule = r.vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
  r.vocab_div = k.vocab_div;
  r.layers = layers;
  try {
    r.layers_per_stage = megatron_stage_layers(k, layers);
  } catch (const std::exception& e) {
    r.not_expressible.emplace_back(e.what());
  }
  return r;
}

}  // namespace symtensor::compiler
