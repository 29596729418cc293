#include "onnx_models/model_config.h"

#include <stdexcept>

namespace symtensor::models {

const char* family_name(Family family) {
  switch (family) {
    case Family::gpt: return "gpt";
    case Family::llama: return "llama";
    case Family::bert: return "bert";
    case Family::vit: return "vit";
    case Family::resnet: return "resnet";
  }
  return "?";
}

const char* weights_name(Weights weights) { return weights == Weights::none ? "none" : "random"; }

Weights parse_weights(const std::string& text) {
  if (text == "none") return Weights::none;
  if (text == "random") return Weights::random;
  throw std::runtime_error("--weights: expected 'none' or 'random', got '" + text + "'");
}

namespace {

void require(bool ok, const ModelConfig& config, const std::string& what) {
  if (!ok) throw std::runtime_error("model '" + config.name + "': " + what);
}

}  // namespace

void validate(const ModelConfig& c) {
  if (c.family == Family::resnet) {
    require(c.resnet_width > 0, c, "resnet width must be positive");
    for (std::int64_t blocks : c.resnet_blocks) require(blocks > 0, c, "resnet stage blocks must be positive");
    require(c.image_size >= 32 && c.image_size % 32 == 0, c, "image size must be a positive multiple of 32");
    require(c.classes > 0, c, "classes must be positive");
    return;
  }
  require(c.layers > 0, c, "layers must be positive");
  require(c.hidden > 0, c, "hidden must be positive");
  require(c.heads > 0, c, "heads must be positive");
  require(c.hidden % c.heads == 0, c,
          "hidden (" + std::to_string(c.hidden) + ") must be a multiple of heads (" + std::to_string(c.heads) + ")");
  require(c.intermediate > 0, c, "intermediate must be positive");
  switch (c.family) {
    case Family::gpt:
    case Family::bert:
      require(c.vocab > 0 && c.seq > 0, c, "vocab and seq must be positive");
      require(c.family != Family::bert || c.type_vocab > 0, c, "type vocab must be positive");
      break;
    case Family::llama:
      require(c.vocab > 0 && c.seq > 0, c, "vocab and seq must be positive");
      require(c.kv_heads > 0 && c.heads % c.kv_heads == 0, c,
              "kv-heads (" + std::to_string(c.kv_heads) + ") must divide heads (" + std::to_string(c.heads) + ")");
      require((c.hidden / c.heads) % 2 == 0, c, "head size must be even for rotary embeddings");
      require(c.experts >= 0, c, "experts must not be negative");
      require(c.experts == 0 || (c.top_k > 0 && c.top_k <= c.experts), c,
              "top-k must be between 1 and experts");
      require(c.capacity_factor > 0 && c.capacity_factor <= 1000, c, "capacity factor must be in (0, 1000]");
      break;
    case Family::vit:
      require(c.patch_size > 0 && c.image_size > 0 && c.image_size % c.patch_size == 0, c,
              "image size must be a positive multiple of the patch size");
      require(c.classes > 0, c, "classes must be positive");
      break;
    case Family::resnet: break;
  }
}

}  // namespace symtensor::models
