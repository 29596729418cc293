// DeepSpeed's config JSON (docs/_pages/config-json.md) and, beside it, the PipelineModule
// call that sets the pipeline degree (DeepSpeed sets it in code, not in the JSON).
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {
namespace {

// The plan's split: equal transformer layers per stage, the embedding on the first and the
// head on the last on top (as Megatron-DeepSpeed's GPTModelPipe splits).
constexpr const char* kPartition = "type:transformer";

// DeepSpeed checks train_batch_size = micro-batch x accumulation x data-parallel ranks.
long long accumulation_steps(const ParallelRecipe& r) {
  const long long per_step = static_cast<long long>(r.micro_batch_size) * std::max(r.dp, 1);
  const long long global = static_cast<long long>(r.global_batch);
  return per_step > 0 && global % per_step == 0 ? global / per_step : r.micro_batches;
}

}  // namespace

std::string emit_deepspeed(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  nlohmann::ordered_json j;
  j["train_batch_size"] = static_cast<long long>(r.global_batch);
  j["train_micro_batch_size_per_gpu"] = r.micro_batch_size;
  j["gradient_accumulation_steps"] = accumulation_steps(r);
  j["gradient_clipping"] = 1.0;  // the code's default is off; the docs' 1.0 written out
  if (megatron_precision(r.precision) == "bf16") j["bf16"] = {{"enabled", true}};
  if (r.precision == hardware::Precision::fp16) j["fp16"] = {{"enabled", true}};
  nlohmann::ordered_json zero;
  zero["stage"] = r.zero_stage;
  zero["overlap_comm"] = true;
  zero["contiguous_gradients"] = true;
  zero["offload_optimizer"] = {{"device", "none"}};
  if (r.zero_stage == 3) zero["offload_param"] = {{"device", "none"}};
  j["zero_optimization"] = zero;
  if (r.tp > 1) j["tensor_parallel"] = {{"autotp_size", r.tp}};
  if (r.recompute != RecomputePolicy::none) {
    const int per_stage = r.layers > 0 ? r.layers / std::max(1, r.pp) : 1;
    j["activation_checkpointing"] = {{"partition_activations", r.tp > 1},
                                     {"number_checkpoints", per_stage},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  }
  j["pipeline"] = {{"stages", r.pp}, {"partition", kPartition}};
  return j.dump(2) + "\n";
}

std::string emit_deepspeed_pipeline(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = comment_block(c.header, "# ");
  s += "# DeepSpeed's pipeline degree is set where the model is built.\n";
  s += "# PLACEHOLDER the optimizer, learning-rate schedule, tokenizer and data: not in the ONNX nor the plan\n";
  s += "# (the JSON beside has no optimizer section: the training script's applies).\n";
  s += fmt::format("# PLACEHOLDER the partition regex must match the transformer block's class name; embedding and head\n"
                   "# weigh 0 and sit on the first and last stage ({} layers per stage).\n",
                   r.layers > 0 ? r.layers / std::max(1, r.pp) : 0);
  s += "from deepspeed.pipe import PipelineModule\n\n";
  s += fmt::format("NUM_STAGES = {}\n", r.pp);
  s += fmt::format("PARTITION_METHOD = \"{}\"\n", kPartition);
  s += fmt::format("ACTIVATION_CHECKPOINT_INTERVAL = {}\n", r.recompute == RecomputePolicy::none ? 0 : 1);
  s += "\n\ndef pipeline_module(layers, loss_fn=None):\n";
  s += "    return PipelineModule(layers=layers, num_stages=NUM_STAGES, partition_method=PARTITION_METHOD,\n";
  s += "                          loss_fn=loss_fn, activation_checkpoint_interval=ACTIVATION_CHECKPOINT_INTERVAL)\n";
  return s;
}

}  // namespace symtensor::compiler
