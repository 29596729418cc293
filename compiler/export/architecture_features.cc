// What the emitters write of a read architecture: Megatron's names of its norm and position
// kinds, Megatron-Core's YaRN table, the MoE layer pattern, and the features a framework's
// recipe lacks (model_architecture.h). The reading itself is model_architecture.cc.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "compiler/export/model_architecture.h"

namespace symtensor::compiler {

std::string_view megatron_name(NormKind k) {
  switch (k) {
    case NormKind::layer_norm: return "LayerNorm";
    case NormKind::rms_norm: return "RMSNorm";
    case NormKind::unknown: break;
  }
  return "";
}

std::string_view megatron_name(PositionKind k) {
  switch (k) {
    case PositionKind::learned_absolute: return "learned_absolute";
    case PositionKind::rope: return "rope";
    case PositionKind::none: return "none";
    case PositionKind::unknown: break;
  }
  return "";
}

double megatron_yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

std::vector<double> megatron_yarn_inv_freq(int dim, double base, double factor, double original_positions, double beta_fast,
                                           double beta_slow) {
  const double pi = std::acos(-1.0);
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(original_positions / (rotations * 2 * pi)) / (2 * std::log(base));
  };
  const double low = std::max(std::floor(correction_dim(beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(beta_slow)), static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  std::vector<double> out;
  for (int i = 0; i < dim / 2; ++i) {
    const double extrapolated = std::pow(base, -2.0 * i / dim), interpolated = extrapolated / factor;
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double keep = 1.0 - ramp;  // the extrapolation share
    out.push_back(interpolated * (1 - keep) + extrapolated * keep);
  }
  return out;
}

std::string moe_layer_pattern(const std::vector<int>& layers, std::string_view open, std::string_view close) {
  std::string s(open);
  for (std::size_t i = 0; i < layers.size();) {
    std::size_t j = i;
    while (j < layers.size() && layers[j] == layers[i]) ++j;
    s += fmt::format("{}[{}]*{}", i ? "+" : "", layers[i], j - i);
    i = j;
  }
  return s + std::string(close);
}

bool ModelArchitecture::dense_first_layers() const {
  return std::count(moe_layers.begin(), moe_layers.end(), 0) > 0 && std::count(moe_layers.begin(), moe_layers.end(), 1) > 0;
}

std::vector<std::string> ModelArchitecture::deepseek_features() const {
  std::vector<std::string> f;
  if (mla)
    f.push_back(fmt::format("multi-head latent attention (q/kv latents {}/{}, head dims {}+{}, values {})", q_lora_rank, kv_lora_rank,
                            qk_head_dim, qk_pos_head_dim, v_head_dim));
  if (shared_expert_ffn > 0) f.push_back(fmt::format("shared experts of width {}", shared_expert_ffn));
  if (dense_first_layers()) f.push_back("dense and MoE layers mixed " + moe_layer_pattern(moe_layers));
  if (mtp_layers > 0) f.push_back(fmt::format("{} multi-token prediction layer{}", mtp_layers, mtp_layers > 1 ? "s" : ""));
  if (router_score == RouterScore::sigmoid || router_score == RouterScore::pre_softmax || router_groups > 0 || router_scaling > 0 ||
      expert_bias)
    f.push_back(fmt::format("a router of {} scores{}{}{}", router_score == RouterScore::sigmoid ? "sigmoid" : "softmax",
                            expert_bias ? " with an expert bias" : "",
                            router_groups > 0 ? fmt::format(", limited to {} of {} groups", router_group_topk, router_groups) : "",
                            router_scaling > 0 ? fmt::format(", weights x{:g}", router_scaling) : ""));
  return f;
}

std::vector<std::string> ModelArchitecture::gpt_oss_features() const {
  std::vector<std::string> f;
  if (sink_layers > 0)
    f.push_back(fmt::format("attention sinks (a learned logit per head in each softmax's denominator) in {} of {} layers", sink_layers,
                            layers));
  for (const auto& [window, count] : window_layers)
    f.push_back(fmt::format("sliding-window attention of {} tokens in {} of {} layers (the others full causal)", window, count, layers));
  if (interleaved_glu || clamped_glu)
    f.push_back(fmt::format("the {}SwiGLU{} ((up + 1) x gate x sigmoid(alpha x gate) in gpt-oss; Megatron's --swiglu is silu(gate) x up "
                            "of [gate; up])",
                            clamped_glu ? "clamped " : "", interleaved_glu ? " of one interleaved gate/up projection" : ""));
  if (router_bias) f.push_back("a bias on the router's logits");
  if (yarn_rotary_factor > 0)
    f.push_back(fmt::format("a YaRN-scaled rotary table (cos and sin x{:g}) outside multi-head latent attention", yarn_rotary_factor));
  return f;
}

std::vector<std::string> ModelArchitecture::nemotron_features() const {
  std::vector<std::string> f;
  if (squared_relu) f.push_back("the squared-ReLU MLP (relu(x)^2, no gate)");
  if (norm_1p) f.push_back(fmt::format("{} of (1 + weight) (zero-centered gamma)", megatron_name(norm)));
  if (rotary_percent > 0) f.push_back(fmt::format("rotary embeddings on {:g} of each head", rotary_percent));
  return f;
}

}  // namespace symtensor::compiler
