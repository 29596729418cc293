// What a LLaMA layer keeps for its backward pass under Megatron's tensor and sequence
// parallelism, counted by hand as Megatron-Core with Transformer Engine keeps it: each
// RMSNorm its input (the residual sum, not its two addends), each linear its input before the
// sequence-parallel all-gather, FlashAttention Q, K, V and O, the SwiGLU its two inputs, RoPE
// only its cos/sin tables (q·cos needs no q for q's gradient). Under FP8 the linears keep FP8
// copies of their inputs (1 byte) while FlashAttention still keeps O in bf16.
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr double kSeq = 64, kBatch = 1, kHidden = 64, kHeads = 4, kKvHeads = 2, kMlp = 96, kTp = 2;

double activations(int layers, hardware::Precision precision) {
  models::Overrides o;
  o.layers = layers, o.hidden = kHidden, o.heads = kHeads, o.kv_heads = kKvHeads, o.intermediate = kMlp;
  Graph g = symtensor::testing::zoo_graph("llama2-7b-tiny", o, kBatch, kSeq);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, static_cast<int>(kTp));
  StrategyOptions so;
  so.precision = precision;
  const Plan plan = make_megatron_plan(g, c, parse_megatron_knobs("tp=2,sp=1"), so);
  return analyze_plan(g, c, plan).stage_memory.at(0).activations_per_micro_batch;
}

TEST(SavedActivations, LlamaLayerUnderSequenceParallelismByHand) {
  const double sbh = kSeq * kBatch * kHidden / kTp;                       // a sharded hidden-wide tensor
  const double kv = kSeq * kBatch * kHidden / kHeads * kKvHeads / kTp;  // K or V
  const double mlp = kSeq * kBatch * kMlp / kTp;
  const double rope_tables = 4 * kSeq * kHidden / kHeads;  // cos and sin, for q and for k
  const double bf16 = 2 * (sbh * 6 + 2 * kv + 3 * mlp + rope_tables);
  // norm inputs x2, q, O, the QKV and fc1 inputs; K, V; gate, up, the fc2 input.
  // Beside these, the norms' per-token statistics ([s, b, 1], under 1%).
  EXPECT_NEAR(activations(2, hardware::Precision::bf16) - activations(1, hardware::Precision::bf16), bf16, 0.01 * bf16);
  // FP8: the QKV, o_proj, fc1 and fc2 inputs in 1 byte (o_proj's is a copy beside O).
  const double fp8 = 2 * (sbh * 4 + 2 * kv + 2 * mlp + rope_tables) + 1 * (3 * sbh + mlp);
  EXPECT_NEAR(activations(2, hardware::Precision::fp8) - activations(1, hardware::Precision::fp8), fp8, 0.01 * fp8);
}

// NeMo's MXFP8 recipe keeps no bf16 weights beside the quantized copies (fp8_param_gather);
// Megatron-LM's defaults do.
TEST(SavedActivations, QuantizedOnlyWeightsUnderNemoMxfp8) {
  models::Overrides o;
  o.layers = 2;
  Graph g = symtensor::testing::zoo_graph("llama2-7b-tiny", o, 4, 32);
  auto parameters = [&](const std::string& stack) {
    const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("gb200-nvl72", 1, 1), {stack});
    StrategyOptions so;
    so.precision = hardware::Precision::mxfp8;
    const Plan plan = make_megatron_plan(g, c, parse_megatron_knobs("tp=1"), so);
    return analyze_plan(g, c, plan).stage_memory.at(0).parameters;
  };
  const double linear = 2 * (4 * 64.0 * 64 + 3 * 64 * 96);  // 2 layers of llama2-7b-tiny
  EXPECT_DOUBLE_EQ(parameters("megatron") - parameters("nemo"), 2 * linear);
}

}  // namespace
}  // namespace symtensor::compiler
