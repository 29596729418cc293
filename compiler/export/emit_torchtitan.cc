// torchtitan's job config (torchtitan/config/job_config.py, v0.2.x TOML): the model (a
// llama3 flavor), the plan's parallelism, batch, activation checkpointing and precision, and
// the least a benchmark run needs; PLACEHOLDER comments mark what neither the ONNX nor the
// plan says.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/export/emitters.h"
#include "compiler/export/titan_flavor.h"

namespace symtensor::compiler {
namespace {

std::string_view titan_schedule(const ParallelRecipe& r) {
  if (r.vp > 1) return "Interleaved1F1B";
  return r.schedule == Schedule::gpipe ? "GPipe" : "1F1B";
}

std::string model_section(const ExportContext& c) {
  const ModelArchitecture& m = c.arch;
  const std::string flavor = titan_flavor_name(m);
  std::string s = "[model]\n";
  if (flavor == kTitanCustomFlavor)
    s += fmt::format("# the model's own flavor, added by {}.py (written beside this file)\n", kTitanFlavorModule);
  for (const auto& d : titan_llama3_differences(m))
    s += fmt::format("# PLACEHOLDER llama3 cannot build {}: this model needs a TrainSpec of its own\n", d);
  s += "name = \"llama3\"\n";
  s += fmt::format("flavor = \"{}\"\n", flavor);
  s += fmt::format("# PLACEHOLDER hf_assets_path: the ONNX holds no tokenizer; its vocabulary must be {}\n", m.vocab);
  if (c.recipe.precision == hardware::Precision::fp8) s += "converters = [\"quantize.linear.float8\"]\n";
  if (c.recipe.precision == hardware::Precision::mxfp8) s += "converters = [\"quantize.linear.mx\"]\n";
  if (c.recipe.precision == hardware::Precision::fp4)
    s += "# PLACEHOLDER NVFP4: torchtitan v0.2 converts linears to float8 or mxfp8 only\n";
  if (flavor == kTitanCustomFlavor) s += fmt::format("\n[experimental]\ncustom_import = \"{}\"\n", kTitanFlavorModule);
  return s;
}

std::string parallelism_section(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  const bool shard = r.zero_stage == 3;
  std::string s = "[parallelism]\n";
  // HSDP: FSDP inside each of dp_replicate groups, replicated across them.
  const int replicas = shard ? std::max(r.dp_replicate, 1) : r.dp;
  s += fmt::format("data_parallel_replicate_degree = {}\n", replicas);
  s += fmt::format("data_parallel_shard_degree = {}\n", r.dp / replicas);
  s += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", shard ? "default" : "never");
  s += fmt::format("tensor_parallel_degree = {}\n", r.tp);
  s += fmt::format("pipeline_parallel_degree = {}\n", r.pp);
  if (r.pp > 1) {
    s += fmt::format("pipeline_parallel_schedule = \"{}\"\n", titan_schedule(r));
    s += fmt::format("pipeline_parallel_microbatch_size = {}\n", r.micro_batch_size);
    if (r.layers > 0) {
      // torchtitan counts the embedding and the output as `less_layers` layers each: 1 as
      // Megatron's split with them accounted, 0 for the plan's even split.
      const int less = r.embedding_and_loss_as_layers() ? 1 : 0;
      s += fmt::format("pipeline_parallel_layers_per_stage = {}\n", (r.layers + 2 * less) / r.pp / std::max(r.vp, 1));
      s += fmt::format("pipeline_parallel_first_stage_less_layers = {0}\npipeline_parallel_last_stage_less_layers = {0}\n", less);
    }
  }
  s += fmt::format("context_parallel_degree = {}\n", r.cp);
  if (r.experts > 0) s += fmt::format("expert_parallel_degree = {}\n", r.ep);
  if (r.cp > 1)
    s += fmt::format("context_parallel_rotate_method = \"{}\"\n",
                     c.plan.context_parallel_comm == ContextParallelComm::all_gather ? "allgather" : "alltoall");
  return s;
}

// torchtitan accumulates global / (local_batch_size x dp) steps; with a pipeline each of
// them runs local / pipeline_parallel_microbatch_size micro-batches.
std::string training_section(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = "[training]\n";
  s += fmt::format("local_batch_size = {}\n", r.pp > 1 ? r.micro_batch_size * r.micro_batches : r.micro_batch_size);
  s += fmt::format("global_batch_size = {}\n", static_cast<long long>(r.global_batch));
  if (r.seq > 0) s += fmt::format("seq_len = {}\n", static_cast<long long>(r.seq));
  else s += "# PLACEHOLDER seq_len: the plan binds no sequence length\n";
  if (r.precision == hardware::Precision::fp16) s += "# PLACEHOLDER fp16: torchtitan's mixed precision is bfloat16 or float32\n";
  s += fmt::format("mixed_precision_param = \"{}\"\n", r.precision == hardware::Precision::fp32 ? "float32" : "bfloat16");
  s += "mixed_precision_reduce = \"float32\"\n";
  s += "# PLACEHOLDER steps and dataset: not in the ONNX nor the plan (c4_test ships with torchtitan)\n";
  s += "steps = 100\n";
  s += "dataset = \"c4_test\"\n";
  return s;
}

}  // namespace

std::string emit_torchtitan(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = comment_block(c.header, "# ");
  s += fmt::format("# launch: torchrun --nnodes {} --nproc-per-node {} -m torchtitan.train --job.config_file THIS_FILE\n\n",
                   r.nodes, r.gpus_per_node);
  s += model_section(c) + "\n" + parallelism_section(c) + "\n";
  s += "[activation_checkpoint]\n";
  s += fmt::format("mode = \"{}\"\n", to_string(r.recompute));
  if (r.recompute == RecomputePolicy::selective) s += "selective_ac_option = \"op\"\n";
  s += "\n[compile]\n";
  s += "# the torchtitan stack's kernel speeds are fitted to eager runs (hardware/stacks/torchtitan.yaml)\n";
  s += "enable = false\n";
  s += "\n" + training_section(c);
  if (r.precision == hardware::Precision::fp8) s += "\n[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n";
  if (r.precision == hardware::Precision::mxfp8) s += "\n[quantize.linear.mx]\nrecipe_name = \"mxfp8_cublas\"\n";
  s += "\n[checkpoint]\nenable = false\n";
  return s;
}

}  // namespace symtensor::compiler
