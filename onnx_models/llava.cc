// LLaVA's image path (HF LlavaForConditionalGeneration): CLIP's vision transformer over each
// image tile, its patch features through the projector, written into the first positions of
// the decoder's sequence in place of the image placeholders' embeddings.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "onnx_models/families.h"
#include "onnx_models/layers.h"

namespace symtensor::models {

namespace {

// quick_gelu, CLIP's activation: x * sigmoid(1.702 x).
std::string quick_gelu(GraphBuilder& g, const std::string& x) {
  return g.op("Mul", {x, g.op("Sigmoid", {g.op("Mul", {x, g.float_scalar(1.702f)})})});
}

// CLIPVisionTransformer up to the features LLaVA reads: [tiles·batch, patches, vision hidden].
std::string clip_patch_features(GraphBuilder& g, const std::string& pixels, const ModelConfig::VisionTower& v) {
  const std::int64_t h = v.hidden, grid = v.image_size / v.patch_size, patches = grid * grid;
  g.push("vision_tower");
  g.push("vision_model");
  g.push("embeddings");
  const double bound = 1.0 / std::sqrt(static_cast<double>(3 * v.patch_size * v.patch_size));
  std::string w = g.parameter("patch_embedding.weight", {h, 3, v.patch_size, v.patch_size}, Init::uniform(bound));
  std::string x = g.op("Conv", {pixels, w},
                       {{"kernel_shape", std::vector<int64_t>{v.patch_size, v.patch_size}},
                        {"strides", std::vector<int64_t>{v.patch_size, v.patch_size}},
                        {"pads", std::vector<int64_t>{0, 0, 0, 0}}});  // CLIP's patch embedding has no bias
  x = g.op("Reshape", {x, g.ints({0, h, patches})});
  x = g.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  std::string cls = g.op("Reshape", {g.parameter("class_embedding", {h}, Init::uniform(1.0)), g.ints({1, 1, h})});
  std::string images = g.op("Gather", {g.op("Shape", {x}), g.int_scalar(0)}, {{"axis", int64_t{0}}});
  cls = g.op("Expand", {cls, g.op("Concat", {g.op("Unsqueeze", {images, g.ints({0})}), g.ints({1, 1})}, {{"axis", int64_t{0}}})});
  x = g.op("Concat", {cls, x}, {{"axis", int64_t{1}}});
  x = g.op("Add", {x, g.parameter("position_embedding.weight", {patches + 1, h}, Init::uniform(1.0))});
  g.pop();
  x = layer_norm(g, x, "pre_layrnorm", h, v.norm_epsilon);  // sic: HF's name
  g.push("encoder");
  for (int64_t layer = 0; layer < v.layers; ++layer) {
    g.push("layers." + std::to_string(layer));
    PreNormLayer block{"layer_norm1", "self_attn", "layer_norm2", "mlp", h, v.norm_epsilon, {}};
    AttentionSpec& attn = block.attention_spec;
    attn.hidden = h, attn.heads = v.heads, attn.kv_heads = v.heads;
    attn.qkv_bias = true, attn.out_bias = true;
    attn.out_name = "out_proj";
    x = pre_norm_layer(g, x, block, [&](const std::string& m) {
      return linear(g, quick_gelu(g, linear(g, m, "fc1", h, v.intermediate, true)), "fc2", v.intermediate, h, true);
    });
    g.pop();
  }
  g.pop();
  g.pop();
  g.pop();
  // vision_feature_select_strategy "default": the class token is dropped.
  return g.op("Slice", {x, g.ints({1}), g.ints({std::numeric_limits<int64_t>::max()}), g.ints({1})});
}

}  // namespace

std::string with_image_features(GraphBuilder& g, const std::string& embeddings, const ModelConfig& c) {
  const ModelConfig::VisionTower& v = c.vision;
  const std::int64_t tokens = image_tokens(c), grid = v.image_size / v.patch_size;
  std::string pixels;
  if (v.tiles == 1) {
    pixels = g.input("pixel_values", onnx::TensorProto::FLOAT, {"batch", 3, v.image_size, v.image_size});
  } else {
    pixels = g.input("pixel_values", onnx::TensorProto::FLOAT, {"batch", v.tiles, 3, v.image_size, v.image_size});
    pixels = g.op("Reshape", {pixels, g.ints({-1, 3, v.image_size, v.image_size})});
  }
  std::string features = clip_patch_features(g, pixels, v);
  if (v.tiles > 1) features = g.op("Reshape", {features, g.ints({-1, v.tiles * grid * grid, v.hidden})});
  g.push("multi_modal_projector");
  std::string projected = linear(g, gelu(g, linear(g, features, "linear_1", v.hidden, c.hidden, true)), "linear_2",
                                 c.hidden, c.hidden, true);
  g.pop();
  std::string text = g.op("Slice", {embeddings, g.ints({tokens}), g.ints({std::numeric_limits<int64_t>::max()}), g.ints({1})});
  return g.op("Concat", {projected, text}, {{"axis", int64_t{1}}});
}

}  // namespace symtensor::models
