// DeepSpeed's config JSON (docs/_pages/config-json.md) and, beside it, the PipelineModule
// call that sets the pipeline degree (DeepSpeed sets it in code, not in the JSON).
#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {

std::string emit_deepspeed(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  nlohmann::ordered_json j;
  j["train_batch_size"] = static_cast<long long>(r.global_batch);
  j["train_micro_batch_size_per_gpu"] = r.micro_batch_size;
  j["gradient_accumulation_steps"] = r.micro_batches;
  if (r.precision == hardware::Precision::bf16 || r.precision == hardware::Precision::fp8) j["bf16"] = {{"enabled", true}};
  if (r.precision == hardware::Precision::fp16) j["fp16"] = {{"enabled", true}};
  nlohmann::ordered_json zero;
  zero["stage"] = r.zero_stage;
  zero["overlap_comm"] = true;
  zero["contiguous_gradients"] = true;
  j["zero_optimization"] = zero;
  if (r.tp > 1) j["tensor_parallel"] = {{"autotp_size", r.tp}};
  if (r.recompute != RecomputePolicy::none) {
    const int per_stage = r.layers > 0 ? r.layers / std::max(1, r.pp) : 1;
    j["activation_checkpointing"] = {{"partition_activations", r.tp > 1},
                                     {"number_checkpoints", per_stage},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  }
  j["pipeline"] = {{"stages", r.pp}, {"partition", "uniform"}};
  return j.dump(2) + "\n";
}

std::string emit_deepspeed_pipeline(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = comment_block(c.header, "# ");
  s += "# DeepSpeed's pipeline degree is set where the model is built:\n";
  s += "from deepspeed.pipe import PipelineModule\n\n";
  s += fmt::format("NUM_STAGES = {}\n", r.pp);
  s += fmt::format("ACTIVATION_CHECKPOINT_INTERVAL = {}\n", r.recompute == RecomputePolicy::none ? 0 : 1);
  s += "\n\ndef pipeline_module(layers, loss_fn=None):\n";
  s += "    return PipelineModule(layers=layers, num_stages=NUM_STAGES, partition_method=\"uniform\",\n";
  s += "                          loss_fn=loss_fn, activation_checkpoint_interval=ACTIVATION_CHECKPOINT_INTERVAL)\n";
  return s;
}

}  // namespace symtensor::compiler
