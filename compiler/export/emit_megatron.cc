// Megatron-LM's argument names (megatron/training/arguments.py), one flag per line:
//   torchrun ... pretrain_gpt.py $(grep -v '^#' megatron.args)
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {

std::string comment_block(const std::vector<std::string>& lines, std::string_view prefix) {
  std::string s;
  for (const auto& l : lines) s += fmt::format("{}{}\n", prefix, l);
  return s;
}

std::string_view megatron_precision(hardware::Precision p) {
  switch (p) {
    case hardware::Precision::bf16: return "bf16";
    case hardware::Precision::fp16: return "fp16";
    // Low-precision recipes run the linear GEMMs in FP8/FP4 beside bf16 training.
    case hardware::Precision::fp8: case hardware::Precision::mxfp8: case hardware::Precision::fp4: return "bf16";
    default: return "";
  }
}

std::string emit_megatron(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = comment_block(c.header, "# ");
  s += fmt::format("# launch: torchrun --nnodes {} --nproc-per-node {} pretrain_gpt.py $(grep -v '^#' THIS_FILE)\n", r.nodes,
                   r.gpus_per_node);
  const auto flag = [&s](std::string_view name) { s += fmt::format("--{}\n", name); };
  const auto value = [&s](std::string_view name, const auto& v) { s += fmt::format("--{} {}\n", name, v); };
  value("tensor-model-parallel-size", r.tp);
  value("pipeline-model-parallel-size", r.pp);
  value("context-parallel-size", r.cp);
  if (r.cp > 1) value("cp-comm-type", c.plan.context_parallel_comm == ContextParallelComm::all_gather ? "allgather" : "p2p");
  if (r.sp && r.tp > 1) flag("sequence-parallel");
  if (r.experts > 0) {
    value("num-experts", r.experts);
    value("expert-model-parallel-size", r.ep);
    value("expert-tensor-parallel-size", r.etp);
  }
  if (r.layers > 0) value("num-layers", r.layers);
  if (r.vp > 1 && r.pp > 0 && r.layers > 0) value("num-layers-per-virtual-pipeline-stage", r.layers / r.pp / r.vp);
  if (r.uneven_stages() && r.pp > 1) {
    value("decoder-first-pipeline-num-layers", r.layers_per_stage.front());
    value("decoder-last-pipeline-num-layers", r.layers_per_stage.back());
  }
  if (r.distopt || r.zero_stage == 1) flag("use-distributed-optimizer");
  if (r.zero_stage >= 2) {
    flag("use-megatron-fsdp");
    value("data-parallel-sharding-strategy", r.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
  }
  if (r.dp > 1) flag("overlap-grad-reduce");
  if (r.recompute == RecomputePolicy::full) {
    value("recompute-granularity", "full");
    // block: the first N layers of each stage's chunk; uniform 1: every layer.
    value("recompute-method", r.recompute_layers.empty() ? "uniform" : "block");
    value("recompute-num-layers", r.recompute_num_layers());
  } else if (r.recompute == RecomputePolicy::selective) {
    value("recompute-granularity", "selective");
  }
  value("micro-batch-size", r.micro_batch_size);
  value("global-batch-size", static_cast<long long>(r.global_batch));
  if (r.seq > 0) value("seq-length", static_cast<long long>(r.seq));
  if (const auto p = megatron_precision(r.precision); !p.empty()) flag(p);
  // The recipe priced (FRAMEWORKS.md 1d): per-tensor current scaling ("tensorwise") for fp8,
  // MXFP8 blocks on Blackwell, NVFP4 for fp4.
  if (r.precision == hardware::Precision::fp8) value("fp8-format", "hybrid"), value("fp8-recipe", "tensorwise");
  if (r.precision == hardware::Precision::mxfp8) value("fp8-format", "e4m3"), value("fp8-recipe", "mxfp8");
  if (r.precision == hardware::Precision::fp4) value("fp4-format", "e2m1"), value("fp4-recipe", "nvfp4");
  return s;
}

}  // namespace symtensor::compiler
