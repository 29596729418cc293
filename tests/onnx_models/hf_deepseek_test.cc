// `models --hf-config` for DeepSeek-V2/V3 (hf_config_test.cc says what these tests check).
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
#include "compiler/onnx_import/parameters.h"
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

// ---- DeepSeek-V2/V3: multi-head latent attention, dense first layers, routed + shared experts.

// DeepSeek-V3's published config.json (deepseek-ai/DeepSeek-V3; the MTP layer,
// num_nextn_predict_layers, is written only when asked, ModelConfig::mtp_layers).
constexpr const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3,
  "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432,
  "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
  "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 128, "num_experts_per_tok": 8,
  "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "pretraining_tp": 1,
  "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                   "original_max_position_embeddings": 4096, "type": "yarn"},
  "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": true,
  "tie_word_embeddings": false, "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
  "transformers_version": "4.33.1", "use_cache": true, "v_head_dim": 128, "vocab_size": 129280})";

// Tiny ones: V3's router (sigmoid, 2 of 4 groups) and V2's (softmax, no q compression).
constexpr const char* kDeepSeekV2Tiny = R"({"model_type": "deepseek_v2", "hidden_size": 64, "intermediate_size": 96,
    "moe_intermediate_size": 32, "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_attention_heads": 4,
    "q_lora_rank": null, "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
    "n_routed_experts": 8, "num_experts_per_tok": 3, "n_shared_experts": 2, "n_group": 1, "topk_group": 1,
    "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": false, "vocab_size": 128})";

// The parameters of a DeepSeek decoder by hand: per layer q_a [h, qr], its norm, q_b [qr, H(n+r)]
// (or q [h, H(n+r)]), kv_a [h, kr + r], its norm, kv_b [kr, H(n+v)], o [Hv, h], two norms;
// F dense SwiGLU layers of D, the others E experts of 3hI, a router hE, its bias E and the
// shared experts 3h(S I); embedding and head Vh each, final norm h.
std::int64_t deepseek_hand_count(const ModelConfig& c) {
  const std::int64_t h = c.hidden, H = c.heads, qr = c.q_lora_rank, kr = c.kv_lora_rank;
  const std::int64_t n = c.qk_nope_head_dim, r = c.qk_rope_head_dim, v = c.v_head_dim;
  const std::int64_t q = qr > 0 ? h * qr + qr + qr * H * (n + r) : h * H * (n + r);
  const std::int64_t attention = q + h * (kr + r) + kr + kr * H * (n + v) + H * v * h;
  const std::int64_t E = c.experts, I = c.intermediate;
  const std::int64_t moe = E * 3 * h * I + h * E + (c.sigmoid_router ? E : 0) + 3 * h * c.shared_experts * I;
  const std::int64_t F = c.first_dense_layers, L = c.layers;
  return L * (attention + 2 * h) + F * 3 * h * c.dense_intermediate + (L - F) * moe + c.vocab * h * 2 + h;
}

TEST(HfDeepSeek, ReadsTheLatentAttentionAndTheExperts) {
  const ModelConfig c = load_hf_config(write_json("deepseek_v3.json", kDeepSeekV3));
  EXPECT_EQ(c.q_lora_rank, 1536);
  EXPECT_EQ(c.kv_lora_rank, 512);
  EXPECT_EQ(c.qk_nope_head_dim + c.qk_rope_head_dim, 192);
  EXPECT_EQ(c.v_head_dim, 128);
  EXPECT_EQ(c.first_dense_layers, 3);
  EXPECT_EQ(c.dense_intermediate, 18432);
  EXPECT_EQ(c.intermediate, 2048);
  EXPECT_EQ(c.experts, 256);
  EXPECT_EQ(c.top_k, 8);
  EXPECT_EQ(c.shared_experts, 1);
  EXPECT_TRUE(c.sigmoid_router);
  EXPECT_EQ(c.expert_groups, 8);
  EXPECT_EQ(c.top_groups, 4);
  EXPECT_EQ(c.routed_scaling, 2.5);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_EQ(rotary_dim(c), 64);
  EXPECT_EQ(rotary_attention_factor(c), 1.0);  // mscale = mscale_all_dim
  // yarn's inv_freq (transformers' _compute_yarn_parameters, dim 64, base 10000, factor 40,
  // original 4096): the correction range is dims floor(10.2)..ceil(22.9) = 10..23; below it
  // the frequencies are kept, above it divided by 40, linear in between.
  const std::vector<float> f = rotary_inv_freq(c);
  ASSERT_EQ(f.size(), 32u);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double base = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(i) / 64.0);
    const double ramp = std::clamp((static_cast<double>(i) - 10.0) / 13.0, 0.0, 1.0);
    const double expected = base / 40 * ramp + base * (1 - ramp);
    EXPECT_NEAR(f[i], expected, 1e-6 * expected) << i;
  }
  EXPECT_EQ(c.name, "deepseek_v3");
  EXPECT_EQ(preset_config("deepseek-v3").kv_lora_rank, 512);
}

TEST(HfDeepSeek, V3HasThePublishedTotalAndFlopsOfItsActiveParameters) {
  // Counted from the built graph by the importer's statistics: 671,026,419,200 parameters
  // (published 671B, the MTP module aside), and per token 2 x the active parameters in GEMMs
  // (published 37B active: 8 of the 256 routed experts, the shared one, attention, dense layers).
  const ModelConfig c = load_hf_config(write_json("deepseek_v3.json", kDeepSeekV3));
  const onnx::ModelProto model = build_model(c);
  EXPECT_EQ(count_parameters(model), deepseek_hand_count(c));
  const double s = 4096;  // capacity 8 x 4096 / 256 = 128 tokens an expert: no rounding
  compiler::ImportOptions options;
  options.bindings = {{"batch", 1.0}, {"seq", s}};
  options.warn_opaque = false;
  options.fusion.attention = compiler::AttentionMode::fused;
  compiler::Graph graph = compiler::import_onnx_model(model, "deepseek-v3", options);
  const compiler::ModelStats stats = compiler::compute_model_stats(graph);
  const double total = graph.symbols.evaluate(stats.parameter_count).value_or(0);
  EXPECT_EQ(total, static_cast<double>(count_parameters(model)));
  EXPECT_LT(std::abs(total - 671e9), 0.005 * 671e9) << total;
  // Active: the project's count (PaLM/torchtitan's N: expert weights x top_k / E, the embedding
  // lookup left out), with the embedding put back for the published convention.
  const compiler::PalmFlops palm = compiler::palm_flops(graph);
  EXPECT_EQ(palm.layers, 61);
  const double active = palm.parameters + static_cast<double>(c.vocab * c.hidden);
  EXPECT_LT(std::abs(active - 37e9), 0.02 * 37e9) << active;
  const double gemm_per_token = graph.symbols.evaluate(stats.gemm_flops).value_or(0) / s;
  EXPECT_LT(std::abs(gemm_per_token - 2 * 37e9), 0.02 * 2 * 37e9) << gemm_per_token;
  // And exactly 2 x the active parameters that pass through GEMMs (all but the looked-up
  // embedding, the norms and the routers' correction biases).
  const double norms = 61.0 * (2 * 7168 + 1536 + 512) + 7168, biases = 58.0 * 256;
  EXPECT_DOUBLE_EQ(gemm_per_token, 2 * (palm.parameters - norms - biases));
  // Attention is MLA's, fused: Q·Kᵀ over 128 + 64 dims, P·V over 128, causal (half):
  // H s² (d + dv) a layer.
  EXPECT_THAT(stats.fused.at("attention"), ::testing::StartsWith("61; causal"));
  EXPECT_DOUBLE_EQ(graph.symbols.evaluate(stats.attention_flops).value_or(0), 61 * 128 * s * s * (192 + 128));
  EXPECT_THAT(stats.fused.at("moe"), ::testing::HasSubstr("top-8 of 256 experts, capacity floor_div(31+seq,32)"));
}

class HfDeepSeekTiny : public ::testing::TestWithParam<const char*> {};

TEST_P(HfDeepSeekTiny, PassesCheckerAndCountsByHand) {
  ModelConfig c = config_from_hf_json(GetParam(), "tiny.json");
  c.weights = Weights::random;
  onnx::ModelProto model = build_model(c);
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, false)));
  EXPECT_EQ(count_parameters(model), deepseek_hand_count(c));
}

TEST_P(HfDeepSeekTiny, ImportFindsTheLatentAttentionAndTensorParallelPairs) {
  const ModelConfig c = config_from_hf_json(GetParam(), "tiny.json");
  compiler::ImportOptions options;
  options.bindings = {{"batch", 2.0}, {"seq", 8.0}};
  options.warn_opaque = false;
  compiler::Graph g = compiler::import_onnx_model(build_model(c), "deepseek-tiny", options);
  const auto spaces = compiler::node_iteration_spaces(g);
  const compiler::TransformerStructure s = compiler::find_transformer_structure(g, spaces);
  const std::size_t L = static_cast<std::size_t>(c.layers), sparse = L - static_cast<std::size_t>(c.first_dense_layers);
  EXPECT_EQ(s.layers(), c.layers);
  // One fused attention a layer, Q·Kᵀ over nope + rope = 24 dims, P·V over v = 16, cut on the heads.
  ASSERT_EQ(s.attention.size(), L);
  for (compiler::NodeId n : s.attention) {
    EXPECT_EQ(g.node(n).op_type, "FusedAttention");
    EXPECT_GE(compiler::attention_heads_loop(spaces[n], 0), 0) << g.node(n).name;
    const compiler::Shape& q = g.tensor(g.node(n).inputs[0]).shape;
    const compiler::Shape& v = g.tensor(g.node(n).inputs[2]).shape;
    EXPECT_TRUE((q.back() - 24).is_zero() && (v.back() - 16).is_zero()) << q.back() << " " << v.back();
  }
  // The down projections (q_a_proj when there is one, kv_a_proj_with_mqa) and their norms stay
  // whole; the up projections are column-parallel, o_proj row-parallel. Dense layers: gate/up
  // and down; sparse ones: the shared experts' and the routed experts' (w1/w3, w2).
  const std::size_t downs = c.q_lora_rank > 0 ? 2 : 1;
  EXPECT_EQ(s.down_projections.size(), L * downs);
  EXPECT_FALSE(s.latent_norms.empty());
  for (compiler::NodeId n : s.latent_norms) EXPECT_FALSE(s.in_tp_region[n]) << g.node(n).name;
  for (compiler::NodeId n : s.down_projections) {
    const std::string& weight = g.tensor(g.node(n).inputs.at(compiler::weight_operand(g, s, n))).name;
    EXPECT_TRUE(weight.ends_with("q_a_proj.weight") || weight.ends_with("kv_a_proj_with_mqa.weight")) << weight;
  }
  // Columns: q_b_proj (or q_proj) and kv_b_proj, then gate/up, or the shared experts' and w1/w3.
  EXPECT_EQ(s.column.size(), L * 2 + L * 2 + sparse * 2);
  EXPECT_EQ(s.row.size(), L * 2 + sparse);
  EXPECT_EQ(s.vocab_heads.size(), 1u);
  EXPECT_EQ(s.embeddings.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Routers, HfDeepSeekTiny, ::testing::Values(kDeepSeekV3Tiny, kDeepSeekV2Tiny),
                         [](const auto& info) { return info.index == 0 ? std::string("v3") : std::string("v2"); });

TEST(HfDeepSeek, V2LiteHasItsPublishedCount) {
  // deepseek-ai/DeepSeek-V2-Lite: 15.7B total (27 layers, no q compression, 64 routed + 2
  // shared experts of 1408, 6 routed a token, the first layer dense).
  const ModelConfig c = preset_config("deepseek-v2-lite");
  const std::int64_t n = count_parameters(build_model(c));
  EXPECT_EQ(n, deepseek_hand_count(c));
  EXPECT_LT(std::abs(static_cast<double>(n) - 15.7e9), 0.005 * 15.7e9) << n;
  EXPECT_EQ(count_parameters(build_model(preset_config("deepseek-v3"))), 671026419200LL);
  const ModelConfig tiny = preset_config("deepseek-v3-tiny");
  EXPECT_EQ(tiny.first_dense_layers, 1);
  EXPECT_EQ(tiny.expert_groups, 2);
  EXPECT_GT(tiny.kv_lora_rank, 0);
  EXPECT_NO_THROW(build_model(tiny));
}

// Multi-token prediction (`models --mtp 1`): one more decoder layer behind eh_proj [2h, h]
// and three RMSNorms (enorm, hnorm, final_layernorm), on the shared embedding and head; its
// work per token is one more layer's, eh_proj's and the head's again.
TEST(HfDeepSeek, MultiTokenPredictionIsOneMoreLayerAProjectionAndTheSharedHead) {
  ModelConfig base = config_from_hf_json(kDeepSeekV3Tiny, "tiny.json");
  base.weights = Weights::random;
  ModelConfig mtp = base, deeper = base;
  mtp.mtp_layers = 1;
  deeper.layers += 1;
  onnx::ModelProto with_mtp = build_model(mtp);
  expect_valid_onnx(with_mtp);
  ASSERT_EQ(with_mtp.graph().output_size(), 2);
  EXPECT_EQ(with_mtp.graph().output(1).name(), "mtp_logits_1");
  const onnx::ModelProto one_more = build_model(deeper);
  const std::int64_t h = base.hidden, V = base.vocab;
  EXPECT_EQ(count_parameters(with_mtp), count_parameters(one_more) + 2 * h * h + 3 * h);
  compiler::Graph g_mtp = import_tiny(with_mtp, "mtp"), g_deeper = import_tiny(one_more, "deeper");
  const compiler::ModelStats a = compiler::compute_model_stats(g_mtp), b = compiler::compute_model_stats(g_deeper);
  const double tokens = 2 * 8;
  const double gemm_mtp = g_mtp.symbols.evaluate(a.gemm_flops).value_or(0);
  const double gemm_deeper = g_deeper.symbols.evaluate(b.gemm_flops).value_or(0);
  EXPECT_DOUBLE_EQ(gemm_mtp - gemm_deeper, tokens * (2.0 * 2 * h * h + 2.0 * h * V));
  EXPECT_DOUBLE_EQ(g_mtp.symbols.evaluate(a.attention_flops).value_or(0),
                   g_deeper.symbols.evaluate(b.attention_flops).value_or(0));
  // The MTP layer is a layer to place; its enorm and hnorm start none (eh_proj's output is
  // the layer's residual stream, not a latent).
  EXPECT_EQ(compiler::palm_flops(g_mtp).layers, base.layers + 1);
  // Two depths: the embedding and head they share with the main model are no merged copies.
  ModelConfig two = mtp;
  two.mtp_layers = 2;
  const compiler::Graph g_two = import_tiny(build_model(two), "mtp2");
  EXPECT_TRUE(compiler::shared_weight_notes(g_two).empty());
  // DeepSeek-V3 with its published MTP module: 14B more in the checkpoint, which stores the
  // module's own copies of the embedding and the head (2 x 129280 x 7168); counted here once.
  ModelConfig v3 = load_hf_config(write_json("deepseek_v3.json", kDeepSeekV3));
  const double main_model = static_cast<double>(count_parameters(build_model(v3)));
  v3.mtp_layers = 1;
  const double module = static_cast<double>(count_parameters(build_model(v3))) - main_model + 2.0 * 129280 * 7168;
  EXPECT_LT(std::abs(module - 14e9), 0.05 * 14e9) << module;
}

TEST(HfDeepSeek, WhatIsNotWrittenIsRefused) {
  auto error = [](const std::string& extra) {
    return hf_error([&] {
      std::string json = kDeepSeekV3Tiny;
      json.insert(json.size() - 1, ", " + extra);
      config_from_hf_json(json, "c.json");
    });
  };
  EXPECT_EQ(error(R"("num_nextn_predict_layers": 1)"), "");
  EXPECT_THAT(error(R"("topk_method": "greedy")"), ::testing::HasSubstr("model_type 'deepseek_v3': key 'topk_method'"));
  EXPECT_THAT(error(R"("scoring_func": "softmax")"), ::testing::HasSubstr("key 'scoring_func'"));
  EXPECT_THAT(error(R"("moe_layer_freq": 2)"), ::testing::HasSubstr("key 'moe_layer_freq'"));
  EXPECT_THAT(error(R"("attention_bias": true)"), ::testing::HasSubstr("key 'attention_bias'"));
  EXPECT_THAT(error(R"("rope_interleave": false)"), ::testing::HasSubstr("key 'rope_interleave'"));
  EXPECT_THAT(error(R"("n_group": 3)"), ::testing::HasSubstr("key 'n_group' (3) must divide"));
  EXPECT_THAT(hf_error([] { config_from_hf_json(R"({"model_type": "deepseek_v3", "hidden_size": 64})", "c.json"); }),
              ::testing::HasSubstr("c.json: missing key"));
}

}  // namespace
}  // namespace symtensor::models
