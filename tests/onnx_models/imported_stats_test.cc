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
  return {params.value_or(0), flops.value_or(0), graph.symbols.evaluate(stats.attention_flops).value_or(-1)};
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

TEST(ImportedStats, MixtralComputesEveryExpert) {
  // Experts run densely: E*6shI per layer, plus the router 2shE. The routed (top-2) cost is
  // this minus (E-k)*6shI per layer, and per token it is twice the active parameters
  // (12,879,925,248, published 12.9B) that take part in GEMMs -- all but the embedding (Vh) and the
  // norms (2h per layer, h final) -- plus the attention term 2sh per layer.
  const ModelConfig c = preset_config("mixtral-8x7b");
  const double l = c.layers, h = c.hidden, I = c.intermediate, V = c.vocab, E = c.experts, s = 2048;
  const double dense = l * (4 * s * h * h + 4 * s * h * 1024 + 2 * s * h * E + E * 6 * s * h * I + 4 * s * s * h) +
                       2 * s * h * V;
  const Figures f = imported("mixtral-8x7b", s);  // materialized attention
  EXPECT_DOUBLE_EQ(f.gemm_flops, dense);
  const double routed = dense - l * (E - c.top_k) * 6 * s * h * I;
  const double active = 12879925248.0;
  EXPECT_DOUBLE_EQ(routed / (2 * s), active - V * h - 2 * l * h - h + 2 * s * l * h);
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
