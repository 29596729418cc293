#include "onnx_models/model_config.h"

#include <algorithm>
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
  require(!c.decode_step || c.family == Family::llama, c,
          std::string("--decode-step is written for the llama family (Llama, Mistral, Mixtral, Qwen, Nemotron, gpt-oss), not ") +
              family_name(c.family));
  require(c.mtp_layers >= 0, c, "multi-token prediction layers must not be negative");
  require(c.mtp_layers == 0 || !c.decode_step, c, "--mtp trains extra heads; the decode step has none");
  if (c.family == Family::resnet) {
    require(c.resnet_width > 0, c, "resnet width must be positive");
    for (std::int64_t blocks : c.resnet_blocks) require(blocks > 0, c, "resnet stage blocks must be positive");
    require(c.image_size >= 32 && c.image_size % 32 == 0, c, "image size must be a positive multiple of 32");
    require(c.classes > 0, c, "classes must be positive");
    return;
  }
  require(c.vision.layers == 0 || c.family == Family::llama, c, "a vision tower is written for the llama family only");
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
      require(rotary_dim(c) % 2 == 0, c, "head size must be even for rotary embeddings");
      require(c.sliding_window >= 0, c, "sliding window must not be negative");
      require(c.global_every >= 0, c, "global layer period must not be negative");
      require(c.model_type != "gemma3_text" || (c.sliding_window > 0 && c.tied_embeddings && c.qk_norm), c,
              "gemma3_text needs a sliding window, q/k norms and the tied head");
      require(c.rope_scaling.type.empty() || c.rope_scaling.type == "linear" || c.rope_scaling.type == "llama3" ||
                  c.rope_scaling.type == "yarn",
              c, "rope scaling '" + c.rope_scaling.type + "' is not one of linear, llama3, yarn");
      require(c.rope_scaling.type.empty() || c.rope_scaling.factor > 0, c, "rope scaling factor must be positive");
      require(c.rope_scaling.type != "llama3" || (c.rope_scaling.high_freq_factor > c.rope_scaling.low_freq_factor &&
                                                   c.rope_scaling.low_freq_factor > 0 &&
                                                   c.rope_scaling.original_max_positions > 0),
              c, "llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor and original positions > 0");
      require(c.rope_scaling.type != "yarn" || (c.rope_scaling.original_max_positions > 0 &&
                                                 c.rope_scaling.beta_fast > 0 && c.rope_scaling.beta_slow > 0),
              c, "yarn rope scaling needs original positions and beta_fast, beta_slow > 0");
      require(c.kv_lora_rank >= 0 && c.q_lora_rank >= 0, c, "latent ranks must not be negative");
      require(c.kv_lora_rank == 0 || (c.qk_nope_head_dim > 0 && c.qk_rope_head_dim > 0 && c.qk_rope_head_dim % 2 == 0 &&
                                      c.v_head_dim > 0 && c.kv_heads == c.heads),
              c, "latent attention needs qk_nope/v head dims, an even qk_rope head dim and kv-heads = heads");
      require(c.kv_lora_rank > 0 || c.q_lora_rank == 0, c, "q_lora_rank needs latent attention (kv_lora_rank)");
      require(c.experts >= 0, c, "experts must not be negative");
      require(c.first_dense_layers >= 0 && c.first_dense_layers <= c.layers, c,
              "dense first layers must be between 0 and the layers");
      require(c.first_dense_layers == 0 || (c.experts > 0 && c.dense_intermediate > 0), c,
              "dense first layers need experts and a dense intermediate size");
      require(c.shared_experts >= 0 && (c.shared_experts == 0 || c.experts > 0), c,
              "shared experts need routed experts");
      require(c.expert_groups >= 1 && c.top_groups >= 1 && c.top_groups <= c.expert_groups && c.group_top >= 1, c,
              "expert groups: 1 <= topk_group <= n_group");
      require(c.expert_groups == 1 || (c.experts % c.expert_groups == 0 && c.group_top <= c.experts / c.expert_groups &&
                                       c.top_k <= c.top_groups * (c.experts / c.expert_groups)),
              c, "expert groups must divide the experts and hold the top-k");
      require(c.routed_scaling > 0, c, "routed scaling factor must be positive");
      require(c.experts == 0 || (c.top_k > 0 && c.top_k <= c.experts), c,
              "top-k must be between 1 and experts");
      require(c.capacity_factor > 0 && c.capacity_factor <= 1000, c, "capacity factor must be in (0, 1000]");
      require(c.swiglu_limit >= 0 && (c.swiglu_limit == 0 || c.experts > 0), c,
              "the clamped SwiGLU (swiglu_limit) is written for experts only");
      require(!c.attention_sinks || c.kv_lora_rank == 0, c, "attention sinks are written for q/k/v attention only");
      require(c.partial_rotary > 0 && c.partial_rotary <= 1, c, "the rotated share of a head must be in (0, 1]");
      require(rotary_dim(c) > 0, c, "no head dim is rotated (head size x partial rotary factor < 1)");
      require(!c.layer_norm_1p || (c.experts == 0 && c.kv_lora_rank == 0), c,
              "Nemotron's layer (LayerNorm1P, squared-ReLU MLP) is written without experts and latent attention");
      require(!c.mlp_bias || c.layer_norm_1p, c, "MLP biases are written for Nemotron's squared-ReLU MLP only");
      if (c.vision.layers != 0) {
        const auto& v = c.vision;
        require(v.layers > 0 && v.hidden > 0 && v.heads > 0 && v.hidden % v.heads == 0 && v.intermediate > 0, c,
                "the vision tower needs positive layers, hidden (a multiple of its heads) and intermediate");
        require(v.patch_size > 0 && v.image_size > 0 && v.image_size % v.patch_size == 0, c,
                "the vision tower's image size must be a positive multiple of its patch size");
        require(v.tiles >= 1, c, "image tiles must be at least 1");
        require(!c.decode_step, c, "--decode-step is written for text-only decoders, not a vision tower");
      }
      break;
    case Family::vit:
      require(c.patch_size > 0 && c.image_size > 0 && c.image_size % c.patch_size == 0, c,
              "image size must be a positive multiple of the patch size");
      require(c.classes > 0, c, "classes must be positive");
      break;
    case Family::resnet: break;
  }
}

std::int64_t image_tokens(const ModelConfig& c) {
  if (c.vision.layers == 0) return 0;
  const std::int64_t grid = c.vision.image_size / c.vision.patch_size;
  return c.vision.tiles * grid * grid;
}

std::int64_t head_size(const ModelConfig& c) {
  return c.head_dim > 0 ? c.head_dim : (c.heads > 0 ? c.hidden / c.heads : 0);
}

std::int64_t rotary_dim(const ModelConfig& c) {
  if (c.kv_lora_rank > 0) return c.qk_rope_head_dim;
  return static_cast<std::int64_t>(static_cast<double>(head_size(c)) * c.partial_rotary);
}

double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

double rotary_attention_factor(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  if (r.type != "yarn") return 1.0;
  if (r.attention_factor > 0) return r.attention_factor;
  if (r.mscale > 0 && r.mscale_all_dim > 0) return yarn_mscale(r.factor, r.mscale) / yarn_mscale(r.factor, r.mscale_all_dim);
  return yarn_mscale(r.factor, 1.0);
}

namespace {

// transformers' _compute_yarn_parameters: the dims rotating fewer than beta_fast times over
// the original context are interpolated (/ factor) by a linear ramp reaching beta_slow.
std::vector<float> yarn_inv_freq(const ModelConfig& c, std::int64_t dim) {
  const RopeScaling& r = c.rope_scaling;
  const double base = c.rope_theta, positions = static_cast<double>(r.original_max_positions);
  auto correction_dim = [&](double rotations) {
    return static_cast<double>(dim) * std::log(positions / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
  };
  const double fast = correction_dim(r.beta_fast), slow = correction_dim(r.beta_slow);
  const double low = std::max(r.truncate ? std::floor(fast) : fast, 0.0);
  double high = std::min(r.truncate ? std::ceil(slow) : slow, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  std::vector<float> out;
  for (std::int64_t i = 0; i < dim / 2; ++i) {
    const double extrapolation = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(dim));
    const double interpolation = extrapolation / r.factor;
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double keep = 1 - ramp;  // the extrapolation's share
    out.push_back(static_cast<float>(interpolation * (1 - keep) + extrapolation * keep));
  }
  return out;
}

}  // namespace

std::vector<float> rotary_inv_freq(const ModelConfig& c) {
  const std::int64_t dim = rotary_dim(c);
  const RopeScaling& r = c.rope_scaling;
  if (r.type == "yarn") return yarn_inv_freq(c, dim);
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
