// NeMo 2: nemo.lightning's MegatronStrategy and Trainer, as a Python module that a recipe
// imports (`from nemo_plan import trainer_kwargs, strategy_kwargs, data_kwargs`).
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {
namespace {

std::string py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace

std::string emit_nemo(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  std::string s = comment_block(c.header, "# ");
  s += "import nemo.lightning as nl\n";
  s += "from megatron.core.optimizer import OptimizerConfig\n\n";
  s += "strategy_kwargs = dict(\n";
  s += fmt::format("    tensor_model_parallel_size={},\n", r.tp);
  s += fmt::format("    pipeline_model_parallel_size={},\n", r.pp);
  s += fmt::format("    virtual_pipeline_model_parallel_size={},\n", r.vp > 1 ? std::to_string(r.vp) : "None");
  s += fmt::format("    context_parallel_size={},\n", r.cp);
  s += fmt::format("    sequence_parallel={},\n", py_bool(r.sp && r.tp > 1));
  s += fmt::format("    expert_model_parallel_size={},\n", r.ep);
  if (r.experts > 0) s += fmt::format("    expert_tensor_parallel_size={},\n", r.etp);
  s += ")\n";
  s += "# activation recomputation lives on the model's TransformerConfig\n";
  s += "model_config_overrides = dict(\n";
  if (r.recompute == RecomputePolicy::full)
    s += fmt::format("    recompute_granularity=\"full\",\n    recompute_method=\"{}\",\n    recompute_num_layers={},\n",
                     r.recompute_layers.empty() ? "uniform" : "block", r.recompute_num_layers());
  else if (r.recompute == RecomputePolicy::selective)
    s += "    recompute_granularity=\"selective\",\n";
  else
    s += "    recompute_granularity=None,\n";
  s += ")\n";
  s += fmt::format("optimizer_config = OptimizerConfig(optimizer=\"adam\", use_distributed_optimizer={}{})\n",
                   py_bool(r.distopt), megatron_precision(r.precision) == "bf16" ? ", bf16=True" : "");
  s += fmt::format("trainer_kwargs = dict(devices={}, num_nodes={})\n", r.gpus_per_node, r.nodes);
  s += fmt::format("data_kwargs = dict(micro_batch_size={}, global_batch_size={}{})\n", r.micro_batch_size,
                   static_cast<long long>(r.global_batch), r.seq > 0 ? fmt::format(", seq_length={}", static_cast<long long>(r.seq)) : "");
  s += "\n\ndef make_trainer(**extra):\n";
  s += "    strategy = nl.MegatronStrategy(**strategy_kwargs)\n";
  s += "    return nl.Trainer(strategy=strategy, **trainer_kwargs, **extra)\n";
  return s;
}

}  // namespace symtensor::compiler
