// NeMo 2: nemo.lightning's MegatronStrategy and Trainer, as a Python module that a recipe
// imports (`from nemo_plan import trainer_kwargs, strategy_kwargs, data_kwargs`).
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {
namespace {

std::string py_bool(bool b) { return b ? "True" : "False"; }

// The architecture under Megatron-Core's TransformerConfig / NeMo's GPTConfig field names.
std::string nemo_model_config(const ModelArchitecture& m, const ParallelRecipe& r, MoeDispatcher dispatcher) {
  std::string s = m.mla ? "# the model: read from the ONNX graph; multi-head latent attention's fields are Megatron-Core's MLATransformerConfig's:\n"
                         "# build it with a config class deriving from it (NeMo's DeepSeek configs), not llm.GPTConfig\n"
                       : "# the model: read from the ONNX graph (llm.GPTConfig(**model_config_kwargs))\n";
  for (const auto& line : m.unknown) s += "# PLACEHOLDER " + line + "\n";
  s += "model_config_kwargs = dict(\n";
  const auto field = [&s](std::string_view name, const auto& v) { s += fmt::format("    {}={},\n", name, v); };
  field("num_layers", r.layers > 0 ? r.layers : m.layers);
  if (m.mtp_layers > 0) field("mtp_num_layers", m.mtp_layers);
  if (m.hidden > 0) field("hidden_size", m.hidden);
  if (m.ffn_hidden > 0) field("ffn_hidden_size", m.ffn_hidden);
  if (m.heads > 0) field("num_attention_heads", m.heads);
  if (m.query_groups > 0) field("num_query_groups", m.query_groups);
  if (m.mla && m.v_head_dim > 0) field("kv_channels", m.v_head_dim);
  else if (m.head_dim > 0) field("kv_channels", m.head_dim);
  field("gated_linear_unit", py_bool(m.gated_mlp));
  field("qk_layernorm", py_bool(m.qk_norm));
  if (m.norm != NormKind::unknown) field("normalization", fmt::format("\"{}\"", megatron_name(m.norm)));
  if (m.norm_1p) field("layernorm_zero_centered_gamma", "True");
  if (m.norm_epsilon > 0) field("layernorm_epsilon", fmt::format("{:g}", m.norm_epsilon));
  if (m.position != PositionKind::unknown) field("position_embedding_type", fmt::format("\"{}\"", megatron_name(m.position)));
  if (m.rotary_base > 0) field("rotary_base", static_cast<long long>(m.rotary_base));
  if (m.rotary_percent > 0) field("rotary_percent", fmt::format("{:g}", m.rotary_percent));
  if (m.llama3_rope_factor > 0) {  // Megatron-Core GPTModel's rope_scaling / rope_scaling_factor
    field("rope_scaling", "True");
    field("rope_scaling_factor", fmt::format("{:g}", m.llama3_rope_factor));
  }
  if (m.mla) {  // Megatron-Core's MLATransformerConfig fields
    field("multi_latent_attention", "True");
    field("q_lora_rank", m.q_lora_rank > 0 ? std::to_string(m.q_lora_rank) : std::string("None"));
    field("kv_lora_rank", m.kv_lora_rank);
    field("qk_head_dim", m.qk_head_dim);
    field("qk_pos_emb_head_dim", m.qk_pos_head_dim);
    field("v_head_dim", m.v_head_dim);
    field("rope_type", m.yarn ? "\"yarn\"" : "\"rope\"");
    if (m.yarn) {
      field("rotary_scaling_factor", fmt::format("{:g}", m.yarn_factor));
      field("mscale", fmt::format("{:g}", m.yarn_mscale));
      field("mscale_all_dim", fmt::format("{:g}", m.yarn_mscale_all_dim));
    }
  }
  field("share_embeddings_and_output_weights", py_bool(m.tied_embeddings));
  field("add_bias_linear", py_bool(m.linear_bias));
  field("add_qkv_bias", py_bool(m.linear_bias || m.qkv_bias));
  if (!m.dropout) field("hidden_dropout", "0.0"), field("attention_dropout", "0.0");
  if (r.seq > 0) field("seq_length", static_cast<long long>(r.seq));
  field("make_vocab_size_divisible_by", r.vocab_div);
  if (m.moe()) {
    field("num_moe_experts", m.experts);
    if (m.top_k > 0) field("moe_router_topk", m.top_k);
    if (m.moe_ffn_hidden > 0) field("moe_ffn_hidden_size", m.moe_ffn_hidden);
    if (m.shared_expert_ffn > 0) field("moe_shared_expert_intermediate_size", m.shared_expert_ffn);
    if (m.dense_first_layers()) field("moe_layer_freq", moe_layer_pattern(m.moe_layers, "", ""));
    if (m.router_score == RouterScore::sigmoid) field("moe_router_score_function", "\"sigmoid\"");
    if (m.router_score == RouterScore::pre_softmax) field("moe_router_pre_softmax", "True");
    if (m.expert_bias) field("moe_router_enable_expert_bias", "True");
    if (m.router_groups > 0 && m.router_group_topk > 0) {
      field("moe_router_num_groups", m.router_groups);
      field("moe_router_group_topk", m.router_group_topk);
    }
    if (m.router_scaling > 0) field("moe_router_topk_scaling_factor", fmt::format("{:g}", m.router_scaling));
    if (dispatcher == MoeDispatcher::alltoall) {
      field("moe_token_dispatcher_type", "\"alltoall\"");
    } else {
      field("moe_token_dispatcher_type", "\"flex\"");
      field("moe_flex_dispatcher_backend", fmt::format("\"{}\"", to_string(dispatcher)));
    }
    field("moe_grouped_gemm", "True");
  }
  s += ")\n";
  if (m.gated_mlp) s += "# with gated_linear_unit: activation_func=torch.nn.functional.silu (SwiGLU)\n";
  else if (m.squared_relu) s += "# activation_func=squared_relu (nemo.collections.llm.fn.activation: relu(x)^2, Nemotron's MLP)\n";
  s += fmt::format("# PLACEHOLDER tokenizer, data and learning-rate schedule: not in the ONNX; the tokenizer's vocabulary must be {}\n",
                   m.vocab);
  return s;
}

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
  if (r.offload_layers > 0) s += fmt::format("    cpu_offloading=True,\n    cpu_offloading_num_layers={},\n", r.offload_layers);
  // Megatron's --overlap-moe-expert-parallel-comm is this config field of the same name.
  if (c.plan.moe_comm_overlap) s += "    overlap_moe_expert_parallel_comm=True,\n";
  s += ")\n";
  s += fmt::format("optimizer_config = OptimizerConfig(optimizer=\"adam\", use_distributed_optimizer={}{})\n",
                   py_bool(r.distopt), megatron_precision(r.precision) == "bf16" ? ", bf16=True" : "");
  s += nemo_model_config(c.arch, r, c.plan.moe_dispatcher);
  s += fmt::format("trainer_kwargs = dict(devices={}, num_nodes={})\n", r.gpus_per_node, r.nodes);
  s += fmt::format("data_kwargs = dict(micro_batch_size={}, global_batch_size={}{})\n", r.micro_batch_size,
                   static_cast<long long>(r.global_batch), r.seq > 0 ? fmt::format(", seq_length={}", static_cast<long long>(r.seq)) : "");
  s += "\n\ndef make_trainer(**extra):\n";
  s += "    strategy = nl.MegatronStrategy(**strategy_kwargs)\n";
  s += "    return nl.Trainer(strategy=strategy, **trainer_kwargs, **extra)\n";
  return s;
}

}  // namespace symtensor::compiler
