// LLaMA family (HF LlamaForCausalLM and the decoders written like it): RMSNorm, rotary
// embeddings (rope_scaling folded into inv_freq), SwiGLU MLP, grouped-query attention when
// kv_heads < heads, LM head untied or tied to the embedding. Qwen2 adds q/k/v biases
// (Llama's attention_bias also o_proj's); Qwen3 normalizes each head of q and k (q_norm,
// k_norm) and may have heads * head_dim != hidden; Mistral v0.1 masks beyond a sliding
// window; Mixtral and Qwen3-MoE replace the MLP with a top-k mixture of SwiGLU experts
// routed with a capacity (layers.h, moe_mlp).
// DeepSeek-V2/V3 (HF DeepseekV3ForCausalLM, DeepseekV2ForCausalLM) attend with multi-head
// latent attention (layers.h, latent_attention; rotary tables of qk_rope_head_dim with yarn
// folded in, softmax scale qk_head_dim^-0.5 x yarn's mscale^2), keep the first
// first_k_dense_replace layers dense (intermediate_size) and route the others to fine-grained
// experts with DeepSeek's router, adding n_shared_experts always-on experts ("shared_experts",
// one SwiGLU MLP of n_shared_experts x moe_intermediate_size). DeepSeek-V3's multi-token
// prediction layer is not written (HF's modeling code does not run it either).
// gpt-oss (HF GptOssForCausalLM) alternates sliding-window layers (layer_types; every
// global_every-th layer full causal) with one yarn rotary table, biased q/k/v/o, attention
// sinks (layers.h, AttentionSpec::sinks), and routes every layer's tokens to biased experts
// with gpt-oss's clamped SwiGLU (MoeSpec::gpt_oss) under "mlp.router" / "mlp.experts".
// Nemotron (HF NemotronForCausalLM, layer_norm_1p) normalizes with LayerNorm1P (LayerNorm of
// 1 + weight, biased), rotates the first partial_rotary of each head and has the squared-ReLU
// MLP up_proj -> relu(x)^2 -> down_proj.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

namespace {

double latent_attention_scale(const ModelConfig& c) {
  double scale = 1.0 / std::sqrt(static_cast<double>(c.qk_nope_head_dim + c.qk_rope_head_dim));
  if (c.rope_scaling.type == "yarn" && c.rope_scaling.mscale_all_dim > 0) {
    const double m = yarn_mscale(c.rope_scaling.factor, c.rope_scaling.mscale_all_dim);
    scale *= m * m;
  }
  return scale;
}

}  // namespace

void build_llama(GraphBuilder& g, const ModelConfig& c) {
  const int64_t h = c.hidden;
  auto norm = [&](const std::string& t, const char* module) {
    return c.layer_norm_1p ? layer_norm(g, t, module, h, c.norm_epsilon, true) : rms_norm(g, t, module, h, c.norm_epsilon);
  };
  const bool grouped = c.kv_heads != c.heads;
  if (c.decode_step && (c.kv_lora_rank > 0 || c.sliding_window > 0))
    throw std::runtime_error(c.name + ": --decode-step writes full-attention layers with a key/value cache; " +
                             (c.kv_lora_rank > 0 ? "multi-head latent attention caches its latent, which is not written"
                                                 : "a sliding window's cache is not written"));
  const Dim seq = c.decode_step ? Dim(std::int64_t{1}) : Dim("seq");
  std::string ids = g.input("input_ids", onnx::TensorProto::INT64, {"batch", seq});
  std::string positions = g.input("position_ids", onnx::TensorProto::INT64, {"batch", seq});
  g.push("model");
  std::string embed = g.parameter("embed_tokens.weight", {c.vocab, h}, Init::uniform(1.0));
  std::string x = g.op("Gather", {embed, ids});
  if (c.vision.layers > 0) x = with_image_features(g, x, c);
  Rotary rotary = rotary_tables(g, positions, rotary_inv_freq(c), rotary_attention_factor(c));
  // Local layers mask with the sliding window; with global_every, every global_every-th layer
  // is global (causal).
  std::string mask, global_mask;
  if (c.sliding_window > 0)
    mask = sliding_window_mask(g, positions, c.sliding_window);
  else if (!c.decode_step)
    mask = causal_mask(g, positions);
  if (!mask.empty()) mask = mask_for_scores(g, mask, grouped);
  std::vector<std::pair<std::string, std::string>> presents;  // decode step: (value, output name)
  if (c.sliding_window > 0 && c.global_every > 0) global_mask = mask_for_scores(g, causal_mask(g, positions), grouped);
  // One decoder layer (its module pushed by the caller): the residual stream in and out.
  auto decoder_layer = [&](std::string x, int64_t layer) {
    std::string a = norm(x, "input_layernorm");
    g.push("self_attn");
    if (c.kv_lora_rank > 0) {
      LatentAttentionSpec attn;
      attn.hidden = h, attn.heads = c.heads;
      attn.q_lora_rank = c.q_lora_rank, attn.kv_lora_rank = c.kv_lora_rank;
      attn.nope = c.qk_nope_head_dim, attn.rope = c.qk_rope_head_dim, attn.v = c.v_head_dim;
      attn.norm_epsilon = c.norm_epsilon, attn.scale = latent_attention_scale(c);
      attn.rotary = &rotary;
      attn.mask = mask;
      x = g.op("Add", {x, latent_attention(g, a, attn)});
    } else {
      AttentionSpec attn;
      attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.kv_heads;
      attn.head_dim = head_size(c);
      attn.qkv_bias = c.qkv_bias, attn.out_bias = c.out_bias;
      attn.qk_norm = c.qk_norm, attn.qk_norm_epsilon = c.norm_epsilon;
      attn.rotary = &rotary;
      attn.rotary_dim = rotary_dim(c);
      const bool global = !global_mask.empty() && (layer + 1) % c.global_every == 0;
      attn.mask = global ? global_mask : mask;
      attn.sinks = c.attention_sinks;
      std::string present_key, present_value;
      if (c.decode_step) {
        const std::string i = std::to_string(layer);
        const std::vector<Dim> cache = {"batch", c.kv_heads, "past_seq", head_size(c)};
        attn.past_key = g.input("past_key_" + i, onnx::TensorProto::FLOAT, cache);
        attn.past_value = g.input("past_value_" + i, onnx::TensorProto::FLOAT, cache);
        attn.present_key = &present_key, attn.present_value = &present_value;
      }
      x = g.op("Add", {x, self_attention(g, a, attn)});
      if (c.decode_step) {
        presents.emplace_back(present_key, "present_key_" + std::to_string(layer));
        presents.emplace_back(present_value, "present_value_" + std::to_string(layer));
      }
    }
    g.pop();
    std::string m = norm(x, "post_attention_layernorm");
    if (c.experts > 0 && layer >= c.first_dense_layers) {
      const bool mlp_scope =
          c.model_type == "qwen3_moe" || c.model_type.starts_with("deepseek") || c.model_type == "gpt_oss";  // HF's names
      g.push(mlp_scope ? std::string("mlp") : std::string("block_sparse_moe"));
      MoeSpec moe{h, c.intermediate, c.experts, c.top_k, c.capacity_factor, c.norm_topk_prob};
      moe.sigmoid = c.sigmoid_router;
      moe.groups = c.expert_groups, moe.top_groups = c.top_groups, moe.group_top = c.group_top;
      moe.routed_scaling = c.routed_scaling;
      moe.gpt_oss = c.expert_bias, moe.limit = c.swiglu_limit, moe.alpha = c.swiglu_alpha;
      std::string out = moe_mlp(g, m, moe);
      if (c.shared_experts > 0) {
        g.push("shared_experts");
        out = g.op("Add", {out, swiglu_mlp(g, m, h, c.shared_experts * c.intermediate)});
        g.pop();
      }
      x = g.op("Add", {x, out});
    } else {
      g.push("mlp");
      x = g.op("Add", {x, c.layer_norm_1p ? squared_relu_mlp(g, m, h, c.intermediate, c.mlp_bias)
                                         : swiglu_mlp(g, m, h, c.experts > 0 ? c.dense_intermediate : c.intermediate)});
    }
    g.pop();
    return x;
  };
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    g.push("layers." + std::to_string(layer));
    x = decoder_layer(x, layer);
    g.pop();
  }
  const std::string decoded = x;
  x = norm(x, "norm");
  g.pop();
  std::string head;
  if (c.tied_embeddings)
    head = g.op("Transpose", {embed}, {{"perm", std::vector<int64_t>{1, 0}}});
  else
    head = g.parameter("lm_head.weight", {h, c.vocab}, Init::uniform(1.0 / std::sqrt(static_cast<double>(h))));
  g.output(g.op("MatMul", {x, head}), "logits", onnx::TensorProto::FLOAT, {"batch", seq, c.vocab});
  // Multi-token prediction (ModelConfig::mtp_layers), on the shared embedding and head.
  std::string hidden = decoded;
  for (int64_t k = 1; k <= c.mtp_layers; ++k) {
    g.push("mtp");
    g.push("layers." + std::to_string(k - 1));
    const std::string ahead = g.op("Concat", {g.op("Slice", {ids, g.ints({k}), g.ints({std::numeric_limits<int64_t>::max()}), g.ints({1})}),
                                              g.op("Slice", {ids, g.ints({0}), g.ints({k}), g.ints({1})})},
                                   {{"axis", int64_t{1}}});
    const std::string joined = g.op("Concat", {norm(g.op("Gather", {embed, ahead}), "enorm"), norm(hidden, "hnorm")},
                                    {{"axis", int64_t{-1}}});
    hidden = linear(g, joined, "eh_proj", 2 * h, h, false);
    g.push("transformer_layer");
    hidden = decoder_layer(hidden, c.layers + k - 1);
    g.pop();
    const std::string logits = g.op("MatMul", {norm(hidden, "final_layernorm"), head});
    g.pop();
    g.pop();
    g.output(logits, "mtp_logits_" + std::to_string(k), onnx::TensorProto::FLOAT, {"batch", seq, c.vocab});
  }
  for (const auto& [value, name] : presents)
    g.output(value, name, onnx::TensorProto::FLOAT, {"batch", c.kv_heads, "present_seq", head_size(c)});
}

}  // namespace symtensor::models
