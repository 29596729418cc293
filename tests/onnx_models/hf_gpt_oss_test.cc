// `models --hf-config` for gpt-oss (hf_config_test.cc says what these tests check).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx_models/hf_config.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "onnx_models/model_zoo.h"
#include "compiler/analysis/model_stats.h"
#include "compiler/analysis/palm_flops.h"
#include "compiler/analysis/transformer_structure.h"
#include "compiler/onnx_import/import.h"
#include "compiler/ops/op_semantics.h"
#include "tests/onnx_models/tiny_hf_configs.h"
#include "tests/temp_path.h"
#include "tests/onnx_models/hf_test_helpers.h"

namespace symtensor::models {
namespace {

using symtensor::testing::kDeepSeekV3Tiny;
using symtensor::testing::kGptOssTiny;
using symtensor::testing::kNemotronTiny;
using hf_testing::expect_valid_onnx;
using hf_testing::hf_error;
using hf_testing::import_tiny;
using hf_testing::write_json;

// ---- gpt-oss: alternating sliding-window and full layers, attention sinks, biased experts.

// openai/gpt-oss-120b's config.json (the mxfp4 quantization_config is not an architecture
// field and is left out); gpt-oss-20b differs in the layers (24) and experts (32).
std::string gpt_oss_config(int layers, int experts) {
  std::string types;
  for (int i = 0; i < layers; ++i) types += std::string(i ? ", " : "") + (i % 2 == 0 ? "\"sliding_attention\"" : "\"full_attention\"");
  return R"({"architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880, "layer_types": [)" +
         types + R"(], "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
  "num_experts_per_tok": 4, "num_hidden_layers": )" + std::to_string(layers) + R"(, "num_key_value_heads": 8,
  "num_local_experts": )" + std::to_string(experts) + R"(, "output_router_logits": false, "pad_token_id": 199999,
  "rms_norm_eps": 1e-05, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
  "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false}, "rope_theta": 150000,
  "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": false,
  "transformers_version": "4.55.0.dev0", "use_cache": true, "vocab_size": 201088})";
}

// By hand: per layer q [h, H d] + H d, k and v [h, kv d] + kv d, o [H d, h] + h, sinks H; the
// router h E + E; E experts of gate_up h 2I + 2I and down I h + h; two norms; embedding and
// head V h each, final norm h.
std::int64_t gpt_oss_hand_count(const ModelConfig& c) {
  const std::int64_t h = c.hidden, H = c.heads, kv = c.kv_heads, d = head_size(c), E = c.experts, I = c.intermediate;
  const std::int64_t attention = h * H * d + H * d + 2 * (h * kv * d + kv * d) + H * d * h + h + H;
  const std::int64_t moe = h * E + E + E * (h * 2 * I + 2 * I + I * h + h);
  return c.layers * (attention + moe + 2 * h) + 2 * c.vocab * h + h;
}

// Active per token by hand: all but the embedding, E - k of the experts and nothing else.
std::int64_t gpt_oss_active(const ModelConfig& c) {
  const std::int64_t h = c.hidden, I = c.intermediate;
  return gpt_oss_hand_count(c) - c.vocab * h - c.layers * (c.experts - c.top_k) * (h * 2 * I + 2 * I + I * h + h);
}

TEST(HfGptOss, ReadsTheSinksWindowsAndExperts) {
  const ModelConfig c = load_hf_config(write_json("gpt_oss_120b.json", gpt_oss_config(36, 128)));
  EXPECT_EQ(c.model_type, "gpt_oss");
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_EQ(c.sliding_window, 128);
  EXPECT_EQ(c.global_every, 2);  // layers 1, 3, ... full
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.kv_heads, 8);
  EXPECT_TRUE(c.qkv_bias && c.out_bias);
  EXPECT_EQ(c.experts, 128);
  EXPECT_EQ(c.top_k, 4);
  EXPECT_TRUE(c.expert_bias);
  EXPECT_EQ(c.swiglu_limit, 7.0);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_EQ(c.rope_theta, 150000.0);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_FALSE(c.rope_scaling.truncate);
  // yarn with truncate false (transformers' _compute_yarn_parameters): the correction range
  // is dims 8.09..17.40 of 64 unrounded, base 150000, factor 32, original 4096; cos and sin
  // x (0.1 ln 32 + 1).
  EXPECT_NEAR(rotary_attention_factor(c), 0.1 * std::log(32.0) + 1, 1e-12);
  const std::vector<float> f = rotary_inv_freq(c);
  ASSERT_EQ(f.size(), 32u);
  auto correction = [](double rotations) { return 64 * std::log(4096 / (rotations * 2 * std::numbers::pi)) / (2 * std::log(150000.0)); };
  const double low = correction(32), high = correction(1);
  EXPECT_NEAR(low, 8.09, 0.01);
  EXPECT_NEAR(high, 17.40, 0.01);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double base = 1.0 / std::pow(150000.0, 2.0 * static_cast<double>(i) / 64.0);
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    EXPECT_NEAR(f[i], base / 32 * ramp + base * (1 - ramp), 1e-6 * base) << i;
  }
  // A layer_types list other than the alternation is refused; so is a yarn truncate that is no boolean.
  auto error = [](const std::string& from, const std::string& to) {
    std::string json = kGptOssTiny;
    json.replace(json.find(from), from.size(), to);
    return hf_error([&] { config_from_hf_json(json, "c.json"); });
  };
  EXPECT_THAT(error(R"(["sliding_attention", "full_attention"])", R"(["full_attention", "sliding_attention"])"),
              ::testing::HasSubstr("model_type 'gpt_oss': key 'layer_types'"));
  EXPECT_THAT(error(R"("truncate": false)", R"("truncate": 0)"), ::testing::HasSubstr("truncate' must be true or false"));
  EXPECT_THAT(error(R"("head_dim": 16,)", ""), ::testing::HasSubstr("missing key 'head_dim'"));
}

// Total from the built graph (the importer's statistics) within 0.5% of the published count,
// the GEMM FLOPs a token within 2% of 2 x the published active parameters; the attention fused
// with its sinks, half the layers in their 128-token window.
struct GptOssPublished {
  int layers, experts;
  double total, active;  // published, from the model card
};

class HfGptOssPublished : public ::testing::TestWithParam<GptOssPublished> {};

TEST_P(HfGptOssPublished, TotalActiveAndGemmFlopsFromTheGraph) {
  const GptOssPublished p = GetParam();
  const ModelConfig c = load_hf_config(write_json("gpt_oss.json", gpt_oss_config(p.layers, p.experts)));
  const onnx::ModelProto model = build_model(c);
  EXPECT_EQ(count_parameters(model), gpt_oss_hand_count(c));
  const double s = 4096;  // capacity 4 x 4096 / E tokens an expert: no rounding
  compiler::ImportOptions options;
  options.bindings = {{"batch", 1.0}, {"seq", s}};
  options.warn_opaque = false;
  options.fusion.attention = compiler::AttentionMode::fused;
  compiler::Graph graph = compiler::import_onnx_model(model, "gpt-oss", options);
  const compiler::ModelStats stats = compiler::compute_model_stats(graph);
  const double total = graph.symbols.evaluate(stats.parameter_count).value_or(0);
  EXPECT_EQ(total, static_cast<double>(gpt_oss_hand_count(c)));
  EXPECT_LT(std::abs(total - p.total), 0.005 * p.total) << total;
  // Active (the model card's convention: the unembedding counted, the embedding not): the
  // project's count, expert weights x top_k / E and the embedding lookup left out.
  const compiler::PalmFlops palm = compiler::palm_flops(graph);
  EXPECT_EQ(palm.layers, p.layers);
  EXPECT_NEAR(palm.parameters, static_cast<double>(gpt_oss_active(c)), 1.0);
  EXPECT_LT(std::abs(palm.parameters - p.active), 0.02 * p.active) << palm.parameters;
  const double gemm_per_token = graph.symbols.evaluate(stats.gemm_flops).value_or(0) / s;
  EXPECT_LT(std::abs(gemm_per_token - 2 * p.active), 0.02 * 2 * p.active) << gemm_per_token;
  // Exactly 2 x the GEMMs' weights: all active parameters but the biases, sinks and norms.
  const double h = 2880, L = p.layers, k = 4;
  const double not_gemm = L * (4096 + 2 * 512 + h + 64 + p.experts + k * (2 * 2880 + h) + 2 * h) + h;
  EXPECT_DOUBLE_EQ(gemm_per_token, 2 * (palm.parameters - not_gemm));
  // One fused attention a layer, sinks in each; the sliding layers price a band of 128 keys a
  // query (s w - w^2 / 2), the full ones the causal triangle (s^2 / 2); 64 heads of 64 + 64.
  EXPECT_THAT(stats.fused.at("attention"),
              ::testing::StartsWith(std::to_string(p.layers) + "; " + std::to_string(p.layers / 2) + " causal, " +
                                    std::to_string(p.layers / 2) + " in a sliding window of 128, attention sinks, grouped-query"));
  const double w = 128, full = 2 * 64 * (s * s / 2) * 128, band = 2 * 64 * (s * w - w * w / 2) * 128;
  EXPECT_DOUBLE_EQ(graph.symbols.evaluate(stats.attention_flops).value_or(0), L / 2 * (full + band));
  EXPECT_THAT(stats.fused.at("moe"), ::testing::HasSubstr("top-4 of " + std::to_string(p.experts) + " experts"));
}

INSTANTIATE_TEST_SUITE_P(Sizes, HfGptOssPublished,
                         ::testing::Values(GptOssPublished{36, 128, 116.83e9, 5.13e9}, GptOssPublished{24, 32, 20.91e9, 3.61e9}),
                         [](const auto& info) { return info.param.layers == 36 ? std::string("gpt_oss_120b") : std::string("gpt_oss_20b"); });

TEST(HfGptOss, PresetsAreThePublishedConfigs) {
  for (const auto& [preset, layers, experts] : {std::tuple{"gpt-oss-120b", 36, 128}, std::tuple{"gpt-oss-20b", 24, 32}}) {
    const ModelConfig c = preset_config(preset);
    EXPECT_EQ(count_parameters(build_model(c)),
              count_parameters(build_model(load_hf_config(write_json("p.json", gpt_oss_config(layers, experts))))))
        << preset;
    EXPECT_TRUE(c.attention_sinks);
  }
  EXPECT_EQ(count_parameters(build_model(preset_config("gpt-oss-120b"))), 116829156672LL);
  const ModelConfig tiny = preset_config("gpt-oss-20b-tiny");
  EXPECT_TRUE(tiny.attention_sinks && tiny.expert_bias);
  EXPECT_EQ(tiny.global_every, 2);
  EXPECT_NO_THROW(build_model(tiny));
}

TEST(HfGptOss, TinyPassesCheckerAndFusesSinksAndWindow) {
  ModelConfig c = config_from_hf_json(kGptOssTiny, "tiny.json");
  c.weights = Weights::random;
  onnx::ModelProto model = build_model(c);
  expect_valid_onnx(model);
  EXPECT_EQ(count_parameters(model), gpt_oss_hand_count(c));
  compiler::Graph g = import_tiny(model, "gpt-oss-tiny");
  const auto spaces = compiler::node_iteration_spaces(g);
  const compiler::TransformerStructure s = compiler::find_transformer_structure(g, spaces);
  EXPECT_EQ(s.layers(), 2);
  ASSERT_EQ(s.attention.size(), 2u);
  for (std::size_t l = 0; l < 2; ++l) {
    const compiler::Node& n = g.node(s.attention[l]);
    EXPECT_EQ(n.op_type, "FusedAttention");
    EXPECT_EQ(n.attr_int("causal", 0), 1);
    EXPECT_EQ(n.attr_int("window", 0), l == 0 ? 4 : 0);  // layer 0 sliding, layer 1 full
    ASSERT_EQ(n.inputs.size(), 5u);
    EXPECT_EQ(n.inputs[3], compiler::kNone);  // no mask read
    EXPECT_EQ(g.tensor(n.inputs[4]).shape.size(), 5u);  // [1, kv, rep, 1, 1]
    EXPECT_GE(compiler::attention_heads_loop(spaces[s.attention[l]], 0), 0);
  }
  // Columns q, k, v and the experts' gate_up; rows o and the experts' down (the router is no pair).
  EXPECT_EQ(s.column.size(), 2u * 4);
  EXPECT_EQ(s.row.size(), 2u * 2);
  EXPECT_EQ(s.vocab_heads.size(), 1u);
}

}  // namespace
}  // namespace symtensor::models
