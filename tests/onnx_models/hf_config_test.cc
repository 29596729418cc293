// `models --hf-config`: Hugging Face config.json files (written here, tiny and as published)
// read into the zoo's decoders. Each tiny family passes ONNX's checker and strict shape
// inference; parameter counts equal the count from the HF config by hand; the importer finds
// the layers, heads and tensor-parallel GEMM pairs Megatron needs; other model_types and
// broken files are refused in one line naming the file and the key.
// DeepSeek, gpt-oss and Nemotron are in hf_deepseek_test.cc, hf_gpt_oss_test.cc and
// hf_nemotron_test.cc; the helpers in hf_test_helpers.h.
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
