// LLaMA family (HF LlamaForCausalLM and the decoders written like it): RMSNorm, rotary
// embeddings (rope_scaling folded into inv_freq), SwiGLU MLP, grouped-query attention when
// kv_heads < heads, LM head untied or tied to the embedding. Qwen2 adds q/k/v biases
// (Llama's attention_bias also o_proj's); Qwen3 normalizes each head of q and k (q_norm,
// k_norm) and may have heads * head_dim != hidden; Mistral v0.1 masks beyond a sliding
// window; Mixtral and Qwen3-MoE replace the MLP with a top-k mixture of SwiGLU experts
// routed with a capacity (layers.h, moe_mlp).
#include <string>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

void build_llama(GraphBuilder& g, const ModelConfig& c) {
  const int64_t h = c.hidden;
  const bool grouped = c.kv_heads != c.heads;
  std::string ids = g.input("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  std::string positions = g.input("position_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  g.push("model");
  std::string embed = g.parameter("embed_tokens.weight", {c.vocab, h}, Init::uniform(1.0));
  std::string x = g.op("Gather", {embed, ids});
  Rotary rotary = rotary_tables(g, positions, rotary_inv_freq(c));
  std::string mask;
  if (c.sliding_window > 0)
    mask = sliding_window_mask(g, positions, c.sliding_window);
  else
    mask = causal_mask(g, positions);
  mask = mask_for_scores(g, mask, grouped);
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    g.push("layers." + std::to_string(layer));
    std::string a = rms_norm(g, x, "input_layernorm", h, c.norm_epsilon);
    g.push("self_attn");
    AttentionSpec attn;
    attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.kv_heads;
    attn.head_dim = head_size(c);
    attn.qkv_bias = c.qkv_bias, attn.out_bias = c.out_bias;
    attn.qk_norm = c.qk_norm, attn.qk_norm_epsilon = c.norm_epsilon;
    attn.rotary = &rotary;
    attn.mask = mask;
    x = g.op("Add", {x, self_attention(g, a, attn)});
    g.pop();
    std::string m = rms_norm(g, x, "post_attention_layernorm", h, c.norm_epsilon);
    if (c.experts > 0) {
      g.push(c.model_type == "qwen3_moe" ? std::string("mlp") : std::string("block_sparse_moe"));  // HF's names
      x = g.op("Add", {x, moe_mlp(g, m, {h, c.intermediate, c.experts, c.top_k, c.capacity_factor, c.norm_topk_prob})});
    } else {
      g.push("mlp");
      x = g.op("Add", {x, swiglu_mlp(g, m, h, c.intermediate)});
    }
    g.pop();
    g.pop();
  }
  x = rms_norm(g, x, "norm", h, c.norm_epsilon);
  g.pop();
  std::string logits;
  if (c.tied_embeddings) {
    std::string head = g.op("Transpose", {embed}, {{"perm", std::vector<int64_t>{1, 0}}});
    logits = g.op("MatMul", {x, head});
  } else {
    logits = linear(g, x, "lm_head", h, c.vocab, false);
  }
  g.output(logits, "logits", onnx::TensorProto::FLOAT, {"batch", "seq", c.vocab});
}

}  // namespace symtensor::models
