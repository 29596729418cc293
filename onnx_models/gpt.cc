// GPT (GPT-2 / Megatron layout): learned positions, pre-LayerNorm blocks, fused QKV,
// GELU MLP, final LayerNorm, LM head tied to the token embedding (MatMul with its transpose).
#include <string>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

void build_gpt(GraphBuilder& g, const ModelConfig& c) {
  const int64_t h = c.hidden;
  std::string ids = g.input("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  std::string positions = g.input("position_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  g.push("transformer");
  std::string wte = g.parameter("wte.weight", {c.vocab, h}, Init::uniform(1.0));
  std::string wpe = g.parameter("wpe.weight", {c.seq, h}, Init::uniform(1.0));
  std::string x = g.op("Add", {g.op("Gather", {wte, ids}), g.op("Gather", {wpe, positions})});
  std::string mask = mask_for_scores(g, causal_mask(g, positions), false);
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    g.push("h." + std::to_string(layer));
    PreNormLayer block{"ln_1", "attn", "ln_2", "mlp", h, c.norm_epsilon, {}};
    AttentionSpec& attn = block.attention_spec;
    attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.heads;
    attn.fused_qkv = true, attn.qkv_bias = true, attn.out_bias = true;
    attn.out_name = "c_proj";
    attn.mask = mask;
    x = pre_norm_layer(g, x, block, [&](const std::string& m) { return gelu_mlp(g, m, h, c.intermediate, "c_fc", "c_proj"); });
    g.pop();
  }
  x = layer_norm(g, x, "ln_f", h, c.norm_epsilon);
  g.pop();
  std::string head = g.op("Transpose", {wte}, {{"perm", std::vector<int64_t>{1, 0}}});
  g.output(g.op("MatMul", {x, head}), "logits", onnx::TensorProto::FLOAT, {"batch", "seq", c.vocab});
}

}  // namespace symtensor::models
