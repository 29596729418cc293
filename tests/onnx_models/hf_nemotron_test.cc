// `models --hf-config` for Nemotron (hf_config_test.cc says what these tests check).
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

}  // namespace
}  // namespace symtensor::models
