// Gemma 3 text decoder (HF Gemma3ForCausalLM, model_type gemma3_text): the embedding scaled
// by sqrt(hidden); per layer input_layernorm -> attention (q_norm/k_norm per head, scores /
// sqrt(query_pre_attn_scalar)) -> post_attention_layernorm -> residual, then
// pre_feedforward_layernorm -> GeGLU (tanh) -> post_feedforward_layernorm -> residual; every
// RMSNorm scales by (1 + weight). Local layers attend within the sliding window with rotary
// base rope_local_theta; every global_every-th layer is global (causal, rope_theta with
// rope_scaling). The head is tied to the embedding.
#include <cmath>
#include <string>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

void build_gemma3(GraphBuilder& g, const ModelConfig& c) {
  const int64_t h = c.hidden;
  const bool grouped = c.kv_heads != c.heads;
  const double eps = c.norm_epsilon;
  std::string ids = g.input("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  std::string positions = g.input("position_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  g.push("model");
  std::string embed = g.parameter("embed_tokens.weight", {c.vocab, h}, Init::uniform(1.0));
  std::string x = g.op("Gather", {embed, ids});
  x = g.op("Mul", {x, g.float_scalar(static_cast<float>(std::sqrt(static_cast<double>(h))))});
  ModelConfig local_rope = c;
  local_rope.rope_theta = c.rope_local_theta, local_rope.rope_scaling = RopeScaling{};
  g.push("global");
  Rotary global_rotary = rotary_tables(g, positions, rotary_inv_freq(c));
  std::string global_mask = mask_for_scores(g, causal_mask(g, positions), grouped);
  g.pop();
  g.push("local");
  Rotary local_rotary = rotary_tables(g, positions, rotary_inv_freq(local_rope));
  std::string local_mask = mask_for_scores(g, sliding_window_mask(g, positions, c.sliding_window), grouped);
  g.pop();
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    const bool global = c.global_every > 0 && (layer + 1) % c.global_every == 0;
    g.push("layers." + std::to_string(layer));
    std::string a = rms_norm(g, x, "input_layernorm", h, eps, true);
    g.push("self_attn");
    AttentionSpec attn;
    attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.kv_heads;
    attn.head_dim = head_size(c);
    attn.qk_norm = true, attn.qk_norm_epsilon = eps, attn.qk_norm_unit_offset = true;
    attn.score_divisor = std::sqrt(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<double>(head_size(c)));
    attn.rotary = global ? &global_rotary : &local_rotary;
    attn.mask = global ? global_mask : local_mask;
    std::string attended = self_attention(g, a, attn);
    g.pop();
    x = g.op("Add", {x, rms_norm(g, attended, "post_attention_layernorm", h, eps, true)});
    std::string m = rms_norm(g, x, "pre_feedforward_layernorm", h, eps, true);
    g.push("mlp");
    std::string mlp = swiglu_mlp(g, m, h, c.intermediate, /*gelu_tanh_gate=*/true);
    g.pop();
    x = g.op("Add", {x, rms_norm(g, mlp, "post_feedforward_layernorm", h, eps, true)});
    g.pop();
  }
  x = rms_norm(g, x, "norm", h, eps, true);
  g.pop();
  std::string head = g.op("Transpose", {embed}, {{"perm", std::vector<int64_t>{1, 0}}});
  g.output(g.op("MatMul", {x, head}), "logits", onnx::TensorProto::FLOAT, {"batch", "seq", c.vocab});
}

}  // namespace symtensor::models
