// ViT: Conv patch embedding, class token (expanded over the batch through an exporter-style
// Shape -> Gather -> Unsqueeze -> Concat -> Expand sub-graph), learned positions, pre-LN
// encoder, final LayerNorm, classifier on the class token.
#include <cmath>
#include <string>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

void build_vit(GraphBuilder& g, const ModelConfig& c) {
  const int64_t h = c.hidden;
  const int64_t grid = c.image_size / c.patch_size;
  const int64_t patches = grid * grid;
  std::string pixels = g.input("pixel_values", onnx::TensorProto::FLOAT, {"batch", 3, c.image_size, c.image_size});
  g.push("vit");
  g.push("embeddings");
  const double conv_bound = 1.0 / std::sqrt(static_cast<double>(3 * c.patch_size * c.patch_size));
  std::string w = g.parameter("patch_embeddings.projection.weight", {h, 3, c.patch_size, c.patch_size},
                              Init::uniform(conv_bound));
  std::string b = g.parameter("patch_embeddings.projection.bias", {h}, Init::uniform(conv_bound));
  std::string x = g.op("Conv", {pixels, w, b},
                       {{"kernel_shape", std::vector<int64_t>{c.patch_size, c.patch_size}},
                        {"strides", std::vector<int64_t>{c.patch_size, c.patch_size}},
                        {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                        {"dilations", std::vector<int64_t>{1, 1}},
                        {"group", int64_t{1}}});
  x = g.op("Reshape", {x, g.ints({0, h, patches})});
  x = g.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1}}});  // [b, patches, h]
  std::string cls = g.parameter("cls_token", {1, 1, h}, Init::uniform(1.0));
  std::string batch = g.op("Gather", {g.op("Shape", {pixels}), g.int_scalar(0)}, {{"axis", int64_t{0}}});
  std::string target = g.op("Concat", {g.op("Unsqueeze", {batch, g.ints({0})}), g.ints({1, 1})},
                            {{"axis", int64_t{0}}});
  cls = g.op("Expand", {cls, target});
  x = g.op("Concat", {cls, x}, {{"axis", int64_t{1}}});
  x = g.op("Add", {x, g.parameter("position_embeddings", {1, patches + 1, h}, Init::uniform(1.0))});
  g.pop();
  g.push("encoder");
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    g.push("layer." + std::to_string(layer));
    PreNormLayer block{"layernorm_before", "attention", "layernorm_after", "", h, c.norm_epsilon, {}};
    AttentionSpec& attn = block.attention_spec;
    attn.hidden = h, attn.heads = c.heads, attn.kv_heads = c.heads;
    attn.qkv_bias = true, attn.out_bias = true;
    attn.q_name = "attention.query", attn.k_name = "attention.key", attn.v_name = "attention.value";
    attn.out_name = "output.dense";
    x = pre_norm_layer(g, x, block, [&](const std::string& m) {
      return gelu_mlp(g, m, h, c.intermediate, "intermediate.dense", "output.dense");
    });
    g.pop();
  }
  g.pop();
  x = layer_norm(g, x, "layernorm", h, c.norm_epsilon);
  g.pop();
  std::string first = g.op("Gather", {x, g.int_scalar(0)}, {{"axis", int64_t{1}}});  // [b, h]
  g.output(gemm_linear(g, first, "classifier", h, c.classes), "logits", onnx::TensorProto::FLOAT,
           {"batch", c.classes});
}

}  // namespace symtensor::models
