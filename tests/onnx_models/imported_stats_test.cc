// The zoo through SymTensor's importer and model statistics: parameter counts agree with
// the proto-level count, and forward GEMM FLOPs agree with each family's analytic formula.
// FLOPs are per sequence of s tokens at batch 1; a GEMM [m,k]x[k,n] is 2mkn.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"

namespace symtensor::models {
namespace {

struct Figures {
  double parameters = 0;
  double gemm_flops = 0;
  double attention_flops = 0;  // fused attention kernels
  double forward_flops = 0;    // every operator
};

// Attention materialized (MatMul, Softmax, MatMul) unless `fused`: published formulas count
// its two GEMMs whole.
Figures imported(const std::string& preset, double seq, bool fused = false) {
  onnx::ModelProto model = build_model(preset_config(preset));
  compiler::ImportOptions options;
  options.bindings = {{"batch", 1.0}};
  if (seq > 0) options.bindings["seq"] = seq;
  options.warn_opaque = false;
  options.fusion.attention = fused ? compiler::AttentionMode::fused : compiler::AttentionMode::materialized;
  compiler::Graph graph = compiler::import_onnx_model(model, preset, options);
  compiler::ModelStats stats = compiler::compute_model_stats(graph);
  auto params = graph.symbols.evaluate(stats.parameter_count);
  auto flops = graph.symbols.evaluate(stats.gemm_flops);
  EXPECT_TRUE(params && flops) << preset << ": statistics still hold free symbols";
  EXPECT_EQ(params.value_or(0), static_cast<double>(count_parameters(model))) << preset;
  return {params.value_or(0), flops.value_or(0), graph.symbols.evaluate(stats.attention_flops).value_or(-1),
          graph.symbols.evaluate(stats.forward_flops).value_or(-1)};
}

TEST(ImportedStats, GptForwardGemmFlops) {
  // Per layer: QKV 6sh^2, projection 2sh^2, MLP 16sh^2, QK^T and PV 2s^2h each -> 24sh^2 + 4s^2h;
  // tied LM head 2shV: F = 24 l s h^2 (1 + s/(6h)) + 2shV, i.e. Megatron's
  // 96Bslh^2(1 + s/(6h) + V/(16lh)) without the backward and recompute factors.
  for (const char* preset : {"gpt-1.7b", "gpt-145.6b", "gpt3-175b", "gpt2-small"}) {
    const ModelConfig c = preset_config(preset);
    const double l = c.layers, h = c.hidden, V = c.vocab, s = c.seq;
    const double expected = 24 * l * s * h * h * (1 + s / (6 * h)) + 2 * s * h * V;
    EXPECT_DOUBLE_EQ(imported(preset, s).gemm_flops, expected) << preset;
    // Fused, causal: the two attention GEMMs (4s^2h per layer) become one kernel doing half.
    const Figures fused = imported(preset, s, true);
    EXPECT_DOUBLE_EQ(fused.attention_flops, l * 2 * s * s * h) << preset;
    EXPECT_DOUBLE_EQ(fused.gemm_flops + fused.attention_flops, expected - l * 2 * s * s * h) << preset;
  }
}

TEST(ImportedStats, LlamaAndQwenForwardGemmFlops) {
  // Per layer: q and o 4sh^2, k and v 4sh(kv*d), SwiGLU 6shI, attention 4s^2h; head 2shV.
  for (const char* preset : {"llama2-7b", "llama2-70b", "qwen2-7b"}) {
    const ModelConfig c = preset_config(preset);
    const double l = c.layers, h = c.hidden, I = c.intermediate, V = c.vocab, s = 2048;
    const double kv_width = static_cast<double>(c.kv_heads * (c.hidden / c.heads));
    const double expected = l * (4 * s * h * h + 4 * s * h * kv_width + 6 * s * h * I + 4 * s * s * h) + 2 * s * h * V;
    EXPECT_DOUBLE_EQ(imported(preset, s).gemm_flops, expected) << preset;
  }
}

TEST(ImportedStats, MixtralRoutesTopKTokensPerExpert) {
  // Capacity routing at factor 1: each expert runs on C = k*s/E tokens of each sequence, so
  // the expert GEMMs are E * 6*C*h*I = k * 6shI per layer (not E * 6shI: experts are not
  // dense), plus the router 2shE; the dispatch and combine einsums are fused into
  // MoeDispatch (0 FLOPs) and MoeCombine (2kh per token), no longer GEMMs.
  const ModelConfig c = preset_config("mixtral-8x7b");
  const double l = c.layers, h = c.hidden, I = c.intermediate, V = c.vocab, E = c.experts, k = c.top_k;
  const double s = 4096, kv_width = 1024;
  const double capacity = k * s / E;  // 1024, an integer: no rounding up
  const double gemm = l * (4 * s * h * h + 4 * s * h * kv_width + 2 * s * h * E + E * 6 * capacity * h * I) + 2 * s * h * V;
  const Figures f = imported("mixtral-8x7b", s, /*fused=*/true);
  EXPECT_DOUBLE_EQ(f.gemm_flops, gemm);
  // The same in active parameters: 12,879,925,248 (published 12.9B) minus the embedding (Vh)
  // and the norms (2h per layer, h final), which take part in no GEMM, twice per token.
  const double active = 12879925248.0;
  EXPECT_DOUBLE_EQ(gemm / s, 2 * (active - V * h - 2 * l * h - h));
  // Forward FLOPs per token, everything counted (element-wise ops, routing, the combine's
  // 2kh, causal fused attention 2sh per layer), within 2% of 2 x 12.9B + attention:
  // 25.76 + 1.07 = 26.83 GFLOP. The graph has 1% less: the embedding lookup does no FLOPs.
  EXPECT_DOUBLE_EQ(f.attention_flops, l * 2 * s * s * h);
  const double formula = 2 * 12.9e9 + 2 * s * h * l;
  EXPECT_NEAR(f.forward_flops / s, formula, 0.02 * formula);
  EXPECT_GT(f.forward_flops / s, (gemm + f.attention_flops) / s + l * 2 * k * h);  // the combines and the rest
  // Dense experts would be 4x the expert FLOPs: 93 GFLOP per token, far outside.
  EXPECT_LT(f.forward_flops / s, 0.5 * (gemm + l * (E - k) * 6 * s * h * I) / s);
}

TEST(ImportedStats, MixtralCapacityFactorScalesExpertFlops) {
  // C = ceil(1.25 * 2 * 2048 / 8) = 640 tokens per expert: the expert GEMMs grow by 1.25x.
  ModelConfig c = preset_config("mixtral-8x7b");
  c.layers = 1;
  const double h = c.hidden, I = c.intermediate, E = c.experts, s = 2048;
  auto expert_flops = [&](double factor) {
    c.capacity_factor = factor;
    onnx::ModelProto model = build_model(c);
    compiler::ImportOptions options;
    options.bindings = {{"batch", 1.0}, {"seq", s}};
    options.warn_opaque = false;
    compiler::Graph graph = compiler::import_onnx_model(model, "mixtral-1-layer", options);
    return *graph.symbols.evaluate(compiler::compute_model_stats(graph).gemm_flops);
  };
  EXPECT_DOUBLE_EQ(expert_flops(1.25) - expert_flops(1.0), E * 6 * (640 - 512) * h * I);
}

TEST(ImportedStats, EncodersMatchPublishedMacs) {
  // BERT-large at s=512: 24*(24sh^2 + 4s^2h) + pooler Gemm 2h^2 (+ h for its bias term).
  const double h = 1024, s = 512;
  const double bert = imported("bert-large", s).gemm_flops;
  EXPECT_GE(bert, 24 * (24 * s * h * h + 4 * s * s * h) + 2 * h * h);
  EXPECT_LE(bert, 24 * (24 * s * h * h + 4 * s * s * h) + 2 * h * h + 2 * h);
  // ViT-L/16: published 61.55 GMACs (torchvision) = patch conv + 24 layers on 197 tokens + head.
  EXPECT_NEAR(imported("vit-l16", 0).gemm_flops / 2, 61.55e9, 0.005 * 61.55e9);
  // ResNet-50: published 4.09 GMACs (torchvision).
  EXPECT_NEAR(imported("resnet50", 0).gemm_flops / 2, 4.09e9, 0.01 * 4.09e9);
}

}  // namespace
}  // namespace symtensor::models
