// BERT: word + position + token-type embeddings, post-LayerNorm encoder blocks with a
// padding mask, pooler (first token -> Linear -> Tanh). No pre-training heads.
#include <string>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

void build_bert(GraphBuilder& g, const ModelConfig& c) {
  const int64_t h = c.hidden;
  std::string ids = g.input("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  std::string types = g.input("token_type_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  std::string positions = g.input("position_ids", onnx::TensorProto::INT64, {"batch", "seq"});
  std::string attention_mask = g.input("attention_mask", onnx::TensorProto::INT64, {"batch", "seq"});
  g.push("bert");
  g.push("embeddings");
  std::string words = g.op("Gather", {g.parameter("word_embeddings.weight", {c.vocab, h}, Init::uniform(1.0)), ids});
  std::string token_types =
      g.op("Gather", {g.parameter("token_type_embeddings.weight", {c.type_vocab, h}, Init::uniform(1.0)), types});
  std::string position =
      g.op("Gather", {g.parameter("position_embeddings.weight", {c.seq, h}, Init::uniform(1.0)), positions});
  std::string x = g.op("Add", {g.op("Add", {words, token_types}), position});
  x = layer_norm(g, x, "LayerNorm", h, c.norm_epsilon);
  g.pop();
  // (1 - mask) * -10000, shaped [b, 1, 1, s] for the scores [b, heads, s, s].
  std::string mask = g.op("Unsqueeze", {attention_mask, g.ints({1, 2})});
  mask = g.op("Cast", {mask}, {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});
  mask = g.op("Mul", {g.op("Sub", {g.float_scalar(1.0f), mask}), g.float_scalar(-10000.0f)});
  g.push("encoder");
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    g.push("layer." + std::to_string(layer));
    g.push("attention");
    AttentionSpec attn;
    attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.heads;
    attn.qkv_bias = true, attn.out_bias = true;
    attn.q_name = "self.query", attn.k_name = "self.key", attn.v_name = "self.value";
    attn.out_name = "output.dense";
    attn.mask = mask;
    x = layer_norm(g, g.op("Add", {self_attention(g, x, attn), x}), "output.LayerNorm", h, c.norm_epsilon);
    g.pop();
    std::string mlp = gelu_mlp(g, x, h, c.intermediate, "intermediate.dense", "output.dense");
    x = layer_norm(g, g.op("Add", {mlp, x}), "output.LayerNorm", h, c.norm_epsilon);
    g.pop();
  }
  g.pop();
  g.push("pooler");
  std::string first = g.op("Gather", {x, g.int_scalar(0)}, {{"axis", std::int64_t{1}}});  // [b, h]
  std::string pooled = g.op("Tanh", {gemm_linear(g, first, "dense", h, h)});
  g.pop();
  g.pop();
  g.output(x, "last_hidden_state", onnx::TensorProto::FLOAT, {"batch", "seq", h});
  g.output(pooled, "pooler_output", onnx::TensorProto::FLOAT, {"batch", h});
}

}  // namespace symtensor::models
