#pragma once
// What each export target cannot express of a recipe: one line per item, and the recipe
// changed to the nearest one the target can write (the world size stays: a degree that
// goes away is folded into data parallelism).
//
// The same limits bound the searches (issue #30, `compile --stack T` / `--export T`): a
// candidate is searched only when the target writes it as it is (recipe_within_target), so
// the export of the plan found says "expressed exactly". Per target (FRAMEWORKS.md):
// - megatron: every Megatron-Core knob the layouts have (tp, pp, vp, cp, dp, sp, ep, etp,
//   the distributed optimizer, Megatron-FSDP, selective (priced as Megatron's attention-core
//   policy, not torchtitan's op-level one) or full recomputation, uneven first
//   and last stages); full recomputation of some layers only with one count in every stage;
// - nemo: MegatronStrategy's: no Megatron-FSDP (ZeRO-2/3), even stages;
// - torchtitan: DDP, FSDP2 or HSDP (ZeRO-0 or 3, not 1/2; FSDP inside replicas), TP always with sequence-sharded norms,
//   async TP (the stack's overlap), PP with 1F1B or interleaved schedules, even stages (or
//   the embedding and loss counted as layers), CP, EP with etp=1, activation checkpointing
//   none, selective (priced as its op-level policy: the stack's recompute.selective
//   every_other_matmul, e.g. --stack torchtitan) or full (every layer);
// - deepspeed: ZeRO-0..3 (0/1 under a pipeline), PipelineModule 1F1B on even stages, AutoTP
//   without a pipeline or sequence parallelism, no CP or EP, full checkpointing of every layer;
// - dtensor: TP/SP and fully_shard, no pipeline, CP or EP, full checkpointing of every layer;
// - jax: any per-operator cuts (PartitionSpecs per parameter), ZeRO-0 or 3, no pipeline or
//   expert parallelism, one checkpoint policy for every layer.
#include <string>
#include <vector>

#include "compiler/export/recipe.h"
#include "compiler/strategies/export_target.h"

namespace symtensor::compiler {

std::vector<std::string> apply_target_limits(ExportTarget target, ExecutionMode mode, ParallelRecipe& recipe);

// What the target cannot write of `recipe` as it is: the recipe's own items (JAX aside: its
// PartitionSpecs are per operator, whatever the recipe cannot say of the cuts), then
// apply_target_limits's for training. recipe_within_target: none.
std::vector<std::string> recipe_beyond_target(ExportTarget target, const ParallelRecipe& recipe);
inline bool recipe_within_target(ExportTarget target, const ParallelRecipe& recipe) {
  return recipe_beyond_target(target, recipe).empty();
}

// The recipe of the Megatron layout (make_megatron_plan) of a model of `layers` transformer
// layers with `knobs` (dp given), with the plan's ZeRO stage being knobs.fsdp, its selective
// recomputation priced as `selective` (the cluster's Stack::selective_recompute): what a
// search asks recipe_within_target about before building or pricing the plan.
ParallelRecipe megatron_layout_recipe(const MegatronKnobs& knobs, int layers, hardware::SelectiveRecompute selective);

}  // namespace symtensor::compiler
