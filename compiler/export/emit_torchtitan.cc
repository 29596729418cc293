// torchtitan's job config (torchtitan/config/job_config.py) as TOML: the sections this plan
// sets; the rest of a job file ([model], [optimizer], ...) stays the user's.
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {
namespace {

std::string_view titan_schedule(const ParallelRecipe& r) {
  if (r.vp > 1) return "Interleaved1F1B";
  return r.schedule == Schedule::gpipe ? "GPipe" : "1F1B";
}

}  // namespace

std::string emit_torchtitan(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = comment_block(c.header, "# ");
  s += fmt::format("# launch: torchrun --nnodes {} --nproc-per-node {} -m torchtitan.train --job.config_file THIS_FILE\n\n",
                   r.nodes, r.gpus_per_node);
  const bool shard = r.zero_stage == 3;
  s += "[parallelism]\n";
  s += fmt::format("data_parallel_replicate_degree = {}\n", shard ? 1 : r.dp);
  s += fmt::format("data_parallel_shard_degree = {}\n", shard ? r.dp : 1);
  s += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", shard ? "default" : "never");
  s += fmt::format("tensor_parallel_degree = {}\n", r.tp);
  s += fmt::format("pipeline_parallel_degree = {}\n", r.pp);
  if (r.pp > 1) {
    s += fmt::format("pipeline_parallel_schedule = \"{}\"\n", titan_schedule(r));
    s += fmt::format("pipeline_parallel_microbatch_size = {}\n", r.micro_batch_size);
    if (r.layers > 0) s += fmt::format("pipeline_parallel_layers_per_stage = {}\n", r.layers / r.pp / r.vp);
  }
  s += fmt::format("context_parallel_degree = {}\n", r.cp);
  if (r.experts > 0) s += fmt::format("expert_parallel_degree = {}\n", r.ep);
  if (r.cp > 1)
    s += fmt::format("context_parallel_rotate_method = \"{}\"\n",
                     c.plan.context_parallel_comm == ContextParallelComm::all_gather ? "allgather" : "alltoall");
  s += "\n[activation_checkpoint]\n";
  s += fmt::format("mode = \"{}\"\n", to_string(r.recompute));
  if (r.recompute == RecomputePolicy::selective) s += "selective_ac_option = \"op\"\n";
  s += "\n[training]\n";
  // local_batch_size: samples per data-parallel rank per step (all its micro-batches).
  s += fmt::format("local_batch_size = {}\n", r.micro_batch_size * r.micro_batches);
  s += fmt::format("global_batch_size = {}\n", static_cast<long long>(r.global_batch));
  if (r.seq > 0) s += fmt::format("seq_len = {}\n", static_cast<long long>(r.seq));
  s += fmt::format("mixed_precision_param = \"{}\"\n", r.precision == hardware::Precision::fp16 ? "float16"
                                                        : r.precision == hardware::Precision::fp32 ? "float32" : "bfloat16");
  return s;
}

}  // namespace symtensor::compiler
