#include "compiler/export/target_limits.h"

#include <fmt/format.h>

namespace symtensor::compiler {
namespace {

// Drops a degree by folding it into data parallelism (the world size stays).
void fold_into_dp(ParallelRecipe& r, int& degree) {
  r.dp *= degree;
  degree = 1;
}

void even_stages(ParallelRecipe& r) {
  if (r.pp > 0 && r.layers % r.pp == 0) r.layers_per_stage.assign(r.pp, r.layers / r.pp);
}

}  // namespace

std::vector<std::string> apply_target_limits(ExportTarget target, ExecutionMode mode, ParallelRecipe& r) {
  std::vector<std::string> items;
  const std::string name(to_string(target));
  if (mode == ExecutionMode::infer) items.push_back("an inference plan: written as the training recipe of the same layout");
  switch (target) {
    case ExportTarget::megatron:
      if (r.zero_stage >= 1 && !r.distopt && r.zero_stage == 1) r.distopt = true;  // ZeRO-1 is the distributed optimizer
      break;
    case ExportTarget::nemo:
      if (r.zero_stage >= 2) {
        items.push_back(fmt::format("ZeRO-{}: MegatronStrategy shards optimizer states only (distributed optimizer)", r.zero_stage));
        r.zero_stage = 0, r.distopt = true;
      }
      if (r.zero_stage == 1) r.zero_stage = 0, r.distopt = true;
      if (r.uneven_stages()) {
        items.push_back(fmt::format("uneven pipeline stages ({} layers): MegatronStrategy splits the layers evenly",
                                    fmt::join(r.layers_per_stage, ",")));
        even_stages(r);
      }
      break;
    case ExportTarget::torchtitan:
      if (r.tp > 1 && !r.sp) {
        items.push_back("tensor parallelism without sequence parallelism: torchtitan's TP always shards the norms on the sequence");
        r.sp = true;
      }
      if (r.dp > 1 && (r.zero_stage == 1 || r.zero_stage == 2 || r.distopt)) {
        items.push_back(fmt::format("{}: torchtitan replicates (DDP) or fully shards (FSDP, ZeRO-3); nearest: FSDP",
                                    r.distopt && r.zero_stage == 0 ? std::string("distributed optimizer")
                                                                   : fmt::format("ZeRO-{}", r.zero_stage)));
        r.zero_stage = 3, r.distopt = false;
      }
      if (r.uneven_stages()) {
        items.push_back(fmt::format("uneven pipeline stages ({} layers): written as even layers per stage",
                                    fmt::join(r.layers_per_stage, ",")));
        even_stages(r);
      }
      break;
    case ExportTarget::deepspeed:
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
      if (r.uneven_stages()) {
        items.push_back(fmt::format("uneven pipeline stages ({} layers): PipelineModule partitions uniformly",
                                    fmt::join(r.layers_per_stage, ",")));
        even_stages(r);
      }
      break;
    case ExportTarget::dtensor:
      if (r.pp > 1) {
        items.push_back(fmt::format("pipeline parallelism pp={}: the script builds no pipeline; folded into data parallelism", r.pp));
        fold_into_dp(r, r.pp);
        r.vp = 1, r.schedule = Schedule::one_f_one_b, r.layers_per_stage.assign(1, r.layers);
      }
      if (r.cp > 1) {
        items.push_back(fmt::format("context parallelism cp={}: not in parallelize_module's styles; folded into data parallelism", r.cp));
        fold_into_dp(r, r.cp);
      }
      if (r.dp > 1 && (r.zero_stage == 1 || r.zero_stage == 2 || r.distopt)) {
        items.push_back("ZeRO-1/2 or the distributed optimizer: the script replicates (DDP) or fully shards (fully_shard); nearest: fully_shard");
        r.zero_stage = 3, r.distopt = false;
      }
      if (r.recompute == RecomputePolicy::selective) {
        items.push_back("selective recomputation: the script wraps whole layers in checkpoint_wrapper; nearest: full");
        r.recompute = RecomputePolicy::full;
      }
      break;
    case ExportTarget::jax:
      if (r.pp > 1) {
        items.push_back(fmt::format("pipeline parallelism pp={}: PartitionSpecs shard within one program; folded into data parallelism", r.pp));
        fold_into_dp(r, r.pp);
        r.vp = 1, r.schedule = Schedule::one_f_one_b, r.layers_per_stage.assign(1, r.layers);
      }
      if (r.dp > 1 && (r.zero_stage == 1 || r.zero_stage == 2 || r.distopt)) {
        items.push_back("ZeRO-1/2 or the distributed optimizer: parameters are either replicated or sharded over the batch axes; nearest: sharded (ZeRO-3)");
        r.zero_stage = 3, r.distopt = false;
      }
      break;
  }
  return items;
}

}  // namespace symtensor::compiler
