// LLaMA-2 family: RMSNorm, rotary embeddings, SwiGLU MLP, untied LM head, grouped-query
// attention when kv_heads < heads. Qwen2 adds q/k/v biases; Mixtral replaces the MLP with
// a top-k mixture of SwiGLU experts routed with a capacity (layers.h, moe_mlp).
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
  Rotary rotary = rotary_tables(g, positions, h / c.heads, c.rope_theta);
  std::string mask = mask_for_scores(g, causal_mask(g, positions), grouped);
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    g.push("layers." + std::to_string(layer));
    std::string a = rms_norm(g, x, "input_layernorm", h, c.norm_epsilon);
    g.push("self_attn");
    AttentionSpec attn;
    attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.kv_heads;
    attn.qkv_bias = c.qkv_bias;
    attn.rotary = &rotary;
    attn.mask = mask;
    x = g.op("Add", {x, self_attention(g, a, attn)});
    g.pop();
    std::string m = rms_norm(g, x, "post_attention_layernorm", h, c.norm_epsilon);
    if (c.experts > 0) {
      g.push("block_sparse_moe");
      x = g.op("Add", {x, moe_mlp(g, m, {h, c.intermediate, c.experts, c.top_k, c.capacity_factor})});
    } else {
      g.push("mlp");
      x = g.op("Add", {x, swiglu_mlp(g, m, h, c.intermediate)});
    }
    g.pop();
    g.pop();
  }
  x = rms_norm(g, x, "norm", h, c.norm_epsilon);
  g.pop();
  std::string logits = linear(g, x, "lm_head", h, c.vocab, false);
  g.output(logits, "logits", onnx::TensorProto::FLOAT, {"batch", "seq", c.vocab});
}

}  // namespace symtensor::models
