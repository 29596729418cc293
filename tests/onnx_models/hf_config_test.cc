// `models --hf-config`: Hugging Face config.json files (written here, tiny and as published)
// read into the zoo's decoders. Each tiny family passes ONNX's checker and strict shape
// inference; parameter counts equal the count from the HF config by hand; the importer finds
// the layers, heads and tensor-parallel GEMM pairs Megatron needs; other model_types and
// broken files are refused in one line naming the file and the key.
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
#include "compiler/onnx_import/import.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/strategies/transformer_structure.h"
#include "tests/onnx_models/tiny_hf_configs.h"
#include "tests/temp_path.h"

namespace symtensor::models {
namespace {

using symtensor::testing::kDeepSeekV3Tiny;
using symtensor::testing::kGptOssTiny;
using symtensor::testing::kNemotronTiny;

std::string write_json(const std::string& file, const std::string& json) {
  const std::string path = symtensor::testing::temp_path(file);
  std::ofstream(path) << json;
  return path;
}

std::string hf_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// ONNX's checker and strict shape inference pass.
void expect_valid_onnx(onnx::ModelProto& model) {
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, false)));
}

// Imported at batch 2, seq 8.
compiler::Graph import_tiny(const onnx::ModelProto& model, const std::string& name) {
  compiler::ImportOptions options;
  options.bindings = {{"batch", 2.0}, {"seq", 8.0}};
  options.warn_opaque = false;
  return compiler::import_onnx_model(model, name, options);
}

// The parameters of a llama-family decoder from its HF config values, by hand: per layer
// q [h, H d], k and v [h, kv d], o [H d, h] (+ biases), q/k norms of d, SwiGLU 3 h I (or E
// experts of 3 h I and a router h E), two norms of h; embedding V h, head V h unless tied,
// final norm h.
struct Arch {
  std::int64_t L, h, H, kv, d, I, V;
  std::int64_t experts = 0;
  bool qkv_bias = false, o_bias = false, qk_norm = false, tied = false;
  std::int64_t norms = 2;  // RMSNorms of h a layer (Gemma 3: 4)
};

std::int64_t hand_count(const Arch& a) {
  std::int64_t attention = a.h * a.H * a.d + 2 * a.h * a.kv * a.d + a.H * a.d * a.h;
  if (a.qkv_bias) attention += a.H * a.d + 2 * a.kv * a.d;
  if (a.o_bias) attention += a.h;
  if (a.qk_norm) attention += 2 * a.d;
  const std::int64_t mlp = a.experts > 0 ? a.experts * 3 * a.h * a.I + a.h * a.experts : 3 * a.h * a.I;
  return a.L * (attention + mlp + a.norms * a.h) + a.V * a.h * (a.tied ? 1 : 2) + a.h;
}

struct TinyFamily {
  const char* name;
  const char* json;
  Arch arch;
};

const TinyFamily kTiny[] = {
    {"llama", R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "hidden_act": "silu", "tie_word_embeddings": false,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 64, "rope_type": "llama3"}})",
     {2, 64, 4, 2, 16, 96, 128}},
    {"llama_tied_biased", R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128, "head_dim": 32,
        "attention_bias": true, "tie_word_embeddings": true})",
     {2, 64, 4, 4, 32, 96, 128, 0, true, true, false, true}},
    {"mistral", R"({"model_type": "mistral", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "sliding_window": 4})",
     {2, 64, 4, 2, 16, 96, 128}},
    {"mixtral", R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "num_local_experts": 4,
        "num_experts_per_tok": 2, "sliding_window": null})",
     {2, 64, 4, 2, 16, 96, 128, 4}},
    {"qwen2", R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "use_sliding_window": false,
        "sliding_window": 4096})",
     {2, 64, 4, 2, 16, 96, 128, 0, true}},
    {"qwen3", R"({"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 128,
        "layer_types": ["full_attention", "full_attention"]})",
     {2, 64, 4, 2, 32, 96, 128, 0, false, false, true}},
    {"qwen3_moe", R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 192,
        "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 32, "vocab_size": 128, "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": true,
        "decoder_sparse_step": 1, "mlp_only_layers": []})",
     {2, 64, 4, 2, 32, 32, 128, 8, false, false, true}},
    {"gemma3_text", R"({"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "vocab_size": 128, "query_pre_attn_scalar": 24, "sliding_window": 4, "sliding_window_pattern": 2,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "attn_logit_softcapping": null,
        "final_logit_softcapping": null, "layer_types": ["sliding_attention", "full_attention"]})",
     {2, 64, 4, 2, 32, 96, 128, 0, false, false, true, true, 4}},
};

class HfTiny : public ::testing::TestWithParam<TinyFamily> {};

onnx::ModelProto tiny_model(const TinyFamily& f) {
  ModelConfig c = load_hf_config(write_json(std::string(f.name) + ".json", f.json));
  c.weights = Weights::random;
  return build_model(c);
}

TEST_P(HfTiny, PassesCheckerAndStrictShapeInference) {
  onnx::ModelProto model = tiny_model(GetParam());
  expect_valid_onnx(model);
}

TEST_P(HfTiny, ParameterCountIsTheConfigsByHand) {
  EXPECT_EQ(count_parameters(tiny_model(GetParam())), hand_count(GetParam().arch));
}

TEST_P(HfTiny, ImportFindsTheLayersHeadsAndTensorParallelPairs) {
  const TinyFamily& f = GetParam();
  onnx::ModelProto model = tiny_model(f);
  compiler::ImportOptions options;
  options.bindings = {{"batch", 2.0}, {"seq", 8.0}};
  options.warn_opaque = false;
  compiler::Graph g = compiler::import_onnx_model(model, f.name, options);
  const auto spaces = compiler::node_iteration_spaces(g);
  const compiler::TransformerStructure s = compiler::find_transformer_structure(g, spaces);
  EXPECT_EQ(s.layers(), f.arch.L);
  // Attention: one fused kernel a layer, cut along its heads (or KV groups).
  ASSERT_EQ(s.attention.size(), static_cast<std::size_t>(f.arch.L));
  for (compiler::NodeId n : s.attention) EXPECT_GE(compiler::attention_heads_loop(spaces[n], 0), 0) << g.node(n).name;
  // Row-parallel: o and down (the experts' w2); column-parallel: q, k, v and gate/up (w1/w3).
  const std::size_t per_layer_columns = 5, per_layer_rows = 2;
  EXPECT_EQ(s.row.size(), f.arch.L * per_layer_rows);
  EXPECT_EQ(s.vocab_heads.size(), 1u);
  EXPECT_EQ(s.embeddings.size(), 1u);
  // Qwen3's and Gemma 3's per-head q_norm/k_norm belong to the attention block (no layer
  // boundary): q_proj and k_proj behind them are column-parallel like v_proj.
  EXPECT_EQ(s.column.size(), f.arch.L * per_layer_columns);
  // Each q/k norm's nodes (Pow, ReduceMean, ..., the weight's Mul) are in the tensor-parallel region.
  if (f.arch.qk_norm) {
    EXPECT_FALSE(s.head_norms.empty());
    for (compiler::NodeId n : s.head_norms) {
      EXPECT_TRUE(s.in_tp_region[n]) << g.node(n).name;
      EXPECT_LT(s.norm_region[n], 0) << g.node(n).name;
    }
  } else {
    EXPECT_TRUE(s.head_norms.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfTiny, ::testing::ValuesIn(kTiny),
                         [](const auto& info) { return std::string(info.param.name); });

// Published configs as their repositories hold them (architecture and bookkeeping fields).
constexpr const char* kLlama3_8B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0",
  "use_cache": true, "vocab_size": 128256})";

constexpr const char* kLlama31_405B = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 16384,
  "initializer_range": 0.02, "intermediate_size": 53248, "max_position_embeddings": 131072,
  "mlp_bias": false, "model_type": "llama", "num_attention_heads": 128, "num_hidden_layers": 126,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})";

constexpr const char* kQwen3_30B_A3B = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
  "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": true,
  "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
  "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_scaling": null,
  "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";

TEST(HfPublished, Llama3_8BHasItsPublishedCount) {
  const ModelConfig c = load_hf_config(write_json("llama3_8b.json", kLlama3_8B));
  // 32 x (4096*4096*2 + 2*4096*1024 + 3*4096*14336 + 2*4096) + 2*128256*4096 + 4096.
  EXPECT_EQ(hand_count({32, 4096, 32, 8, 128, 14336, 128256}), 8030261248LL);
  EXPECT_EQ(count_parameters(build_model(c)), 8030261248LL);
  // The preset is the same model.
  EXPECT_EQ(count_parameters(build_model(preset_config("llama3-8b"))), 8030261248LL);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.rope_scaling.type.empty());
}

TEST(HfPublished, Llama31_405BWithLlama3RopeScaling) {
  const ModelConfig c = load_hf_config(write_json("llama31_405b.json", kLlama31_405B));
  EXPECT_EQ(count_parameters(build_model(c)), hand_count({126, 16384, 128, 8, 128, 53248, 128256}));
  EXPECT_EQ(count_parameters(build_model(c)), 405853388800LL);
  EXPECT_EQ(count_parameters(build_model(preset_config("llama3.1-405b"))), 405853388800LL);
  // inv_freq as transformers' _compute_llama3_parameters: wavelengths above 8192 / 1 are
  // divided by 8, below 8192 / 4 kept, in between interpolated.
  const std::vector<float> f = rotary_inv_freq(c);
  ASSERT_EQ(f.size(), 64u);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double base = 1.0 / std::pow(500000.0, 2.0 * static_cast<double>(i) / 128.0);
    const double wavelen = 2 * std::numbers::pi / base;
    double expected = base;
    if (wavelen > 8192.0) expected = base / 8;
    else if (wavelen >= 2048.0) {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      expected = (1 - smooth) * base / 8 + smooth * base;
    }
    EXPECT_NEAR(f[i], expected, 1e-6 * expected) << i;
  }
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_NEAR(f[63], 1.0 / std::pow(500000.0, 126.0 / 128.0) / 8, 1e-12);
}

TEST(HfPublished, Qwen3_30B_A3BTotalAndActive) {
  const ModelConfig c = load_hf_config(write_json("qwen3_30b_a3b.json", kQwen3_30B_A3B));
  EXPECT_EQ(c.experts, 128);
  EXPECT_EQ(c.top_k, 8);
  EXPECT_EQ(c.intermediate, 768);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_TRUE(c.qk_norm);
  const Arch a{48, 2048, 32, 4, 128, 768, 151936, 128, false, false, true};
  const std::int64_t total = count_parameters(build_model(c));
  EXPECT_EQ(total, hand_count(a));
  EXPECT_EQ(total, 30532122624LL);  // published 30.5B
  // Active per token: 8 of the 128 experts.
  const std::int64_t active = total - 48LL * 120 * 3 * 2048 * 768;
  EXPECT_EQ(active, 3353032704LL);  // published 3.3B
  EXPECT_EQ(count_parameters(build_model(preset_config("qwen3-30b-a3b"))), total);
}

TEST(HfPublished, PresetsHaveTheirFamiliesCounts) {
  struct Row {
    const char* preset;
    Arch arch;
    double published;  // model card, billions
  };
  const Row rows[] = {
      {"llama3-70b", {80, 8192, 64, 8, 128, 28672, 128256}, 70.6},
      {"llama3.2-1b", {16, 2048, 32, 8, 64, 8192, 128256, 0, false, false, false, true}, 1.24},
      {"llama3.2-3b", {28, 3072, 24, 8, 128, 8192, 128256, 0, false, false, false, true}, 3.21},
      {"mistral-7b", {32, 4096, 32, 8, 128, 14336, 32000}, 7.24},
      {"mixtral-8x22b", {56, 6144, 48, 8, 128, 16384, 32768, 8}, 140.6},
      {"qwen2.5-7b", {28, 3584, 28, 4, 128, 18944, 152064, 0, true}, 7.61},
      {"qwen2.5-72b", {80, 8192, 64, 8, 128, 29568, 152064, 0, true}, 72.7},
      {"qwen3-8b", {36, 4096, 32, 8, 128, 12288, 151936, 0, false, false, true}, 8.19},
      {"qwen3-32b", {64, 5120, 64, 8, 128, 25600, 151936, 0, false, false, true}, 32.8},
      {"qwen3-235b-a22b", {94, 4096, 64, 4, 128, 1536, 151936, 128, false, false, true}, 235.1},
  };
  for (const Row& r : rows) {
    const std::int64_t n = count_parameters(build_model(preset_config(r.preset)));
    EXPECT_EQ(n, hand_count(r.arch)) << r.preset;
    EXPECT_LT(std::abs(static_cast<double>(n) - r.published * 1e9), 0.005 * r.published * 1e9) << r.preset << " " << n;
  }
}

TEST(HfPublished, Gemma3_1BHasItsPublishedCount) {
  // google/gemma-3-1b-pt: 26 layers of (attention 1152x1024 q, 1152x256 k and v, 1024x1152 o,
  // q/k norms 2x256; GeGLU 3x1152x6912; four norms 4x1152), tied embedding 262144x1152, final
  // norm: 999,885,952 (the model card's 1B).
  const Arch a{26, 1152, 4, 1, 256, 6912, 262144, 0, false, false, true, true, 4};
  EXPECT_EQ(hand_count(a), 999885952LL);
  const ModelConfig c = preset_config("gemma3-1b");
  EXPECT_EQ(count_parameters(build_model(c)), 999885952LL);
  EXPECT_EQ(c.global_every, 6);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.query_pre_attn_scalar, 256);
  // A layer_types list that is not the local : global pattern it implies is refused.
  auto gemma_error = [](const std::string& extra) {
    return hf_error([&] {
      config_from_hf_json(R"({"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 96,
          "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
          "vocab_size": 128, "sliding_window": 4, )" + extra + "}",
                          "c.json");
    });
  };
  EXPECT_EQ(gemma_error(R"("layer_types": ["sliding_attention", "full_attention", "sliding_attention"])"), "");
  EXPECT_THAT(gemma_error(R"("layer_types": ["sliding_attention", "full_attention", "full_attention"])"),
              ::testing::HasSubstr("key 'layer_types' with layer 2 \"full_attention\""));
  EXPECT_THAT(gemma_error(R"("final_logit_softcapping": 30.0)"), ::testing::HasSubstr("key 'final_logit_softcapping'"));
}

TEST(HfPublished, TinyPresetsKeepTheStructure) {
  const ModelConfig q = preset_config("qwen3-30b-a3b-tiny");
  EXPECT_EQ(q.experts, 4);
  EXPECT_EQ(q.top_k, 2);
  EXPECT_TRUE(q.qk_norm);
  EXPECT_NE(q.head_dim * q.heads, q.hidden);
  EXPECT_EQ(preset_config("mistral-7b-tiny").sliding_window, 4);
  EXPECT_TRUE(preset_config("llama3.2-1b-tiny").tied_embeddings);
}

// ---- DeepSeek-V2/V3: multi-head latent attention, dense first layers, routed + shared experts.

// DeepSeek-V3's published config.json (deepseek-ai/DeepSeek-V3; the MTP layer,
// num_nextn_predict_layers, is not written).
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
  EXPECT_THAT(stats.fused.at("moe"), ::testing::HasSubstr("top-8 of 256 experts, capacity 1/32*seq"));
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

// ---- Nemotron: LayerNorm1P, the squared-ReLU MLP, partial rotary --------------------------

// By hand: per layer q [h, H d], k and v [h, kv d], o [H d, h], up and down h I each (+ I and
// h biases under mlp_bias), two LayerNorms of weight and bias; embedding and head V h; final
// LayerNorm 2 h.
std::int64_t nemotron_hand_count(std::int64_t L, std::int64_t h, std::int64_t H, std::int64_t kv, std::int64_t d,
                                 std::int64_t I, std::int64_t V, bool mlp_bias = false) {
  const std::int64_t attention = h * H * d + 2 * h * kv * d + H * d * h;
  const std::int64_t mlp = 2 * h * I + (mlp_bias ? I + h : 0);
  return L * (attention + mlp + 4 * h) + 2 * V * h + 2 * h;
}

TEST(HfNemotron, ReadsTheNormsActivationAndPartialRotary) {
  const ModelConfig c = load_hf_config(write_json("nemotron_tiny.json", kNemotronTiny));
  EXPECT_EQ(c.model_type, "nemotron");
  EXPECT_TRUE(c.layer_norm_1p);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.partial_rotary, 0.5);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.norm_epsilon, 1e-5);
  EXPECT_FALSE(c.tied_embeddings);
  // HF's rope init: dim = int(head_dim x partial_rotary_factor) = 16, inv_freq 10000^(-2i/16).
  EXPECT_EQ(rotary_dim(c), 16);
  const std::vector<float> f = rotary_inv_freq(c);
  ASSERT_EQ(f.size(), 8u);
  for (std::size_t i = 0; i < f.size(); ++i)
    EXPECT_NEAR(f[i], 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(i) / 16.0), 1e-7) << i;
  EXPECT_THAT(describe(c), ::testing::HasSubstr("rotary on 0.5 of each head, LayerNorm1P, mlp 96 squared-ReLU"));
  // NemotronConfig's defaults: partial_rotary_factor 0.5, hidden_act relu2, the heads as KV heads.
  const ModelConfig d = config_from_hf_json(R"({"model_type": "nemotron", "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128, "mlp_bias": true})",
                                            "d.json");
  EXPECT_EQ(d.partial_rotary, 0.5);
  EXPECT_EQ(d.kv_heads, 4);
  EXPECT_EQ(d.seq, 4096);
  EXPECT_EQ(rotary_dim(d), 8);
  EXPECT_TRUE(d.mlp_bias);
  ModelConfig tiny = d;
  tiny.weights = Weights::random;
  EXPECT_EQ(count_parameters(build_model(tiny)), nemotron_hand_count(2, 64, 4, 4, 16, 96, 128, true));
  // What the zoo does not write is refused, naming the key.
  auto error = [](const std::string& from, const std::string& to) {
    std::string json = kNemotronTiny;
    json.replace(json.find(from), from.size(), to);
    return hf_error([&] { config_from_hf_json(json, "c.json"); });
  };
  EXPECT_THAT(error(R"("hidden_act": "relu2")", R"("hidden_act": "gelu")"),
              ::testing::HasSubstr("model_type 'nemotron': key 'hidden_act' = \"gelu\" is not written yet"));
  EXPECT_THAT(error(R"("partial_rotary_factor": 0.5)", R"("partial_rotary_factor": 1.5)"),
              ::testing::HasSubstr("key 'partial_rotary_factor' must be at most 1"));
  EXPECT_THAT(error(R"("partial_rotary_factor": 0.5)", R"("partial_rotary_factor": 0.01)"),
              ::testing::HasSubstr("no head dim is rotated"));
}

// The graph as NemotronForCausalLM computes it: LayerNormalization of (1 + weight) with a
// bias, up -> Relu -> Mul(r, r) -> down, rotary on a Slice of the first 16 dims of each head;
// the fusion pass finds one attention a layer and Megatron's pairs (q, k, v, up | o, down).
TEST(HfNemotron, TinyPassesCheckerAndKeepsTheLayerStructure) {
  ModelConfig c = config_from_hf_json(kNemotronTiny, "tiny.json");
  c.weights = Weights::random;
  onnx::ModelProto model = build_model(c);
  expect_valid_onnx(model);
  EXPECT_EQ(count_parameters(model), nemotron_hand_count(2, 64, 4, 2, 32, 96, 128));
  std::map<std::string, int> ops;
  for (const auto& n : model.graph().node()) ++ops[n.op_type()];
  EXPECT_EQ(ops["LayerNormalization"], 2 * 2 + 1);
  EXPECT_EQ(ops["Relu"], 2);
  EXPECT_EQ(ops["Sigmoid"], 0);  // no SwiGLU
  EXPECT_EQ(ops["Cos"], 1);
  compiler::Graph g = import_tiny(model, "nemotron-tiny");
  const auto spaces = compiler::node_iteration_spaces(g);
  const compiler::TransformerStructure s = compiler::find_transformer_structure(g, spaces);
  EXPECT_EQ(s.layers(), 2);
  ASSERT_EQ(s.attention.size(), 2u);
  for (compiler::NodeId n : s.attention) {
    EXPECT_EQ(g.node(n).op_type, "FusedAttention");
    EXPECT_EQ(g.node(n).attr_int("causal", 0), 1);
    EXPECT_GE(compiler::attention_heads_loop(spaces[n], 0), 0);
  }
  EXPECT_EQ(s.column.size(), 2u * 4);
  EXPECT_EQ(s.row.size(), 2u * 2);
  EXPECT_EQ(s.vocab_heads.size(), 1u);
  EXPECT_EQ(s.embeddings.size(), 1u);
}

// Published sizes: Nemotron-4 15B (technical report, Table 1: "3.2 billion embedding
// parameters and 12.5 billion non-embedding parameters") and Nemotron-4 340B ("9.4 billion
// embedding parameters and 331.6 billion non-embedding parameters"); totals within 0.5%, the
// GEMM FLOPs a token 2 x the GEMMs' weights (every parameter but the norms and the lookup).
TEST(HfNemotron, PresetsHaveThePublishedCounts) {
  struct Row {
    const char* preset;
    std::int64_t L, h, H, d, I;
    std::int64_t count;
    double non_embedding, total;  // published
  };
  const Row rows[] = {{"nemotron-4-15b", 32, 6144, 48, 128, 24576, 15628775424LL, 12.5e9, 15.7e9},
                      {"nemotron-4-340b", 96, 18432, 96, 192, 73728, 341029195776LL, 331.6e9, 341.0e9}};
  for (const Row& r : rows) {
    const ModelConfig c = preset_config(r.preset);
    EXPECT_EQ(c.kv_heads, 8) << r.preset;
    EXPECT_EQ(c.vocab, 256000) << r.preset;
    EXPECT_EQ(c.seq, 4096) << r.preset;
    EXPECT_EQ(rotary_dim(c), r.d / 2) << r.preset;
    const onnx::ModelProto model = build_model(c);
    const std::int64_t n = count_parameters(model);
    EXPECT_EQ(n, nemotron_hand_count(r.L, r.h, r.H, 8, r.d, r.I, 256000)) << r.preset;
    EXPECT_EQ(n, r.count) << r.preset;
    const double embeddings = 2.0 * 256000 * static_cast<double>(r.h);
    EXPECT_LT(std::abs(static_cast<double>(n) - embeddings - r.non_embedding), 0.005 * r.non_embedding) << r.preset;
    EXPECT_LT(std::abs(static_cast<double>(n) - r.total), 0.005 * r.total) << r.preset << " " << n;
    compiler::ImportOptions options;
    options.bindings = {{"batch", 1.0}, {"seq", 4096.0}};
    options.warn_opaque = false;
    compiler::Graph graph = compiler::import_onnx_model(model, r.preset, options);
    const compiler::ModelStats stats = compiler::compute_model_stats(graph);
    EXPECT_EQ(graph.symbols.evaluate(stats.parameter_count).value_or(0), static_cast<double>(n)) << r.preset;
    const double norms = static_cast<double>(r.L * 4 * r.h + 2 * r.h);
    const double gemm_per_token = graph.symbols.evaluate(stats.gemm_flops).value_or(0) / 4096;
    EXPECT_DOUBLE_EQ(gemm_per_token, 2 * (static_cast<double>(n) - embeddings / 2 - norms)) << r.preset;
  }
  const ModelConfig tiny = preset_config("nemotron-4-340b-tiny");
  EXPECT_TRUE(tiny.layer_norm_1p);
  EXPECT_EQ(rotary_dim(tiny), head_size(tiny) / 2);
  EXPECT_NO_THROW(build_model(tiny));
}

// Refusals: one line naming the file, the model_type and what is missing, or the key.
TEST(HfRefusals, OtherFamiliesAreNamedWithWhatIsMissing) {
  const std::string path = write_json("gemma2.json", R"({"model_type": "gemma2", "hidden_size": 2304})");
  const std::string e = hf_error([&] { load_hf_config(path); });
  EXPECT_THAT(e, ::testing::StartsWith(path + ": model_type 'gemma2' is not supported yet"));
  EXPECT_THAT(e, ::testing::HasSubstr("logit soft-capping"));
  EXPECT_THAT(e, ::testing::HasSubstr("deepseek_v3, gpt_oss, nemotron)"));
  EXPECT_EQ(e.find('\n'), std::string::npos);
  for (const char* type : {"gemma3", "gemma2", "qwen2_moe", "phi3"})
    EXPECT_THAT(hf_error([&] { config_from_hf_json(std::string(R"({"model_type": ")") + type + "\"}", "c.json"); }),
                ::testing::HasSubstr(std::string("model_type '") + type + "' is not supported yet"));
  EXPECT_THAT(hf_error([] { config_from_hf_json(R"({"model_type": "bloom"})", "c.json"); }),
              ::testing::HasSubstr("c.json: model_type 'bloom' is not supported (written: llama, mistral"));
}

TEST(HfRefusals, MissingOrBadKeysAreNamed) {
  const std::string path = write_json("missing.json", R"({"model_type": "qwen2", "hidden_size": 64,
      "num_hidden_layers": 2, "vocab_size": 128, "intermediate_size": 96, "num_key_value_heads": 2})");
  EXPECT_EQ(hf_error([&] { load_hf_config(path); }),
            path + ": missing key 'num_attention_heads' (model_type 'qwen2')");
  EXPECT_THAT(hf_error([] { config_from_hf_json("{}", "c.json"); }), ::testing::HasSubstr("c.json: missing key 'model_type'"));
  EXPECT_THAT(hf_error([] { config_from_hf_json(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": "4096"})", "c.json"); }),
              ::testing::HasSubstr("c.json: key 'hidden_size' must be an integer, got \"4096\""));
  EXPECT_THAT(hf_error([] { config_from_hf_json("{\"model_type\": ", "c.json"); }),
              ::testing::StartsWith("c.json: not valid JSON"));
  EXPECT_THAT(hf_error([] { load_hf_config("/nonexistent/config.json"); }),
              ::testing::HasSubstr("cannot open config file '/nonexistent/config.json'"));
  // Qwen3's class defaults head_dim to 128 whatever the width: it must be given.
  EXPECT_THAT(hf_error([] {
                config_from_hf_json(R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "intermediate_size": 96})",
                                    "c.json");
              }),
              ::testing::HasSubstr("missing key 'head_dim'"));
}

TEST(HfRefusals, FieldsTheZooCannotWriteAreRefusedNotApproximated) {
  const std::string base = R"("model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 128, "intermediate_size": 96)";
  auto error = [&](const std::string& extra) {
    return hf_error([&] { config_from_hf_json("{" + base + ", " + extra + "}", "c.json"); });
  };
  EXPECT_THAT(error(R"("hidden_act": "gelu")"), ::testing::HasSubstr("model_type 'llama': key 'hidden_act'"));
  EXPECT_THAT(error(R"("mlp_bias": true)"), ::testing::HasSubstr("key 'mlp_bias'"));
  EXPECT_THAT(error(R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})"),
              ::testing::HasSubstr("key 'rope_scaling' with rope type 'yarn'"));
  EXPECT_THAT(error(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})"),
              ::testing::HasSubstr("missing key 'rope_scaling.low_freq_factor'"));
  EXPECT_THAT(error(R"("num_key_value_heads": 3)"), ::testing::HasSubstr("'num_key_value_heads' (3) must divide"));
  EXPECT_THAT(error(R"("layer_types": ["sliding_attention", "full_attention"])"),
              ::testing::HasSubstr("key 'layer_types'"));
  EXPECT_THAT(hf_error([] {
                config_from_hf_json(R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
                    "moe_intermediate_size": 32, "num_experts": 8, "num_experts_per_tok": 2,
                    "mlp_only_layers": [0]})",
                                    "c.json");
              }),
              ::testing::HasSubstr("key 'mlp_only_layers'"));
  EXPECT_THAT(hf_error([] {
                config_from_hf_json(R"({"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "intermediate_size": 96,
                    "use_sliding_window": true})",
                                    "c.json");
              }),
              ::testing::HasSubstr("key 'use_sliding_window'"));
  // Llama's class takes the heads when num_key_value_heads is absent: multi-head attention.
  EXPECT_EQ(config_from_hf_json("{" + base + "}", "c.json").kv_heads, 4);
}

}  // namespace
}  // namespace symtensor::models
