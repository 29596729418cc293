#include "onnx_models/model_config.h"

#include <cmath>
#include <numbers>
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
  require(c.head_dim > 0 || c.hidden % c.heads == 0, c,
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
      require(c.head_dim >= 0, c, "head dim must not be negative");
      require(head_size(c) % 2 == 0, c, "head size must be even for rotary embeddings");
      require(c.sliding_window >= 0, c, "sliding window must not be negative");
      require(c.global_every >= 0, c, "global layer period must not be negative");
      require(c.model_type != "gemma3_text" || (c.sliding_window > 0 && c.tied_embeddings && c.qk_norm), c,
              "gemma3_text needs a sliding window, q/k norms and the tied head");
      require(c.rope_scaling.type.empty() || c.rope_scaling.type == "linear" || c.rope_scaling.type == "llama3", c,
              "rope scaling '" + c.rope_scaling.type + "' is not one of linear, llama3");
      require(c.rope_scaling.type.empty() || c.rope_scaling.factor > 0, c, "rope scaling factor must be positive");
      require(c.rope_scaling.type != "llama3" || (c.rope_scaling.high_freq_factor > c.rope_scaling.low_freq_factor &&
                                                   c.rope_scaling.low_freq_factor > 0 &&
                                                   c.rope_scaling.original_max_positions > 0),
              c, "llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor and original positions > 0");
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

std::int64_t head_size(const ModelConfig& c) {
  return c.head_dim > 0 ? c.head_dim : (c.heads > 0 ? c.hidden / c.heads : 0);
}

std::vector<float> rotary_inv_freq(const ModelConfig& c) {
  const std::int64_t dim = head_size(c);
  const RopeScaling& r = c.rope_scaling;
  std::vector<float> out;
  for (std::int64_t i = 0; i < dim; i += 2) {
    double f = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(dim));
    if (r.type == "linear") {
      f /= r.factor;
    } else if (r.type == "llama3") {  // transformers' _compute_llama3_parameters
      const double old = static_cast<double>(r.original_max_positions);
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > old / r.low_freq_factor) {
        f /= r.factor;
      } else if (wavelen >= old / r.high_freq_factor) {
        const double smooth = (old / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * f / r.factor + smooth * f;
      }
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

}  // namespace symtensor::models
