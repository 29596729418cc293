// Memory broken down per stage: the parts sum to the estimate's peak, and on the
// Korthikanti 22B layer (h 6144, 64 heads, s 2048, t 8; materialized attention, no dropout
// as the zoo's GPT writes it) one layer's activations are sbh(8 + 24/t + 2as/(ht)) bytes.
#include <map>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "compiler/cost/memory_breakdown.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

Plan megatron(Graph& g, const hardware::Cluster& c, const std::string& knobs, hardware::Precision p = hardware::Precision::bf16) {
  StrategyOptions so;
  so.megatron = knobs;
  so.precision = p;
  return make_plan("megatron", g, c, so);
}

TEST(MemoryBreakdown, PartsSumToTheEstimatePeakOnEveryStage) {
  models::Overrides o;
  o.layers = 4;
  Graph g = symtensor::testing::zoo_graph("llama2-70b-tiny", o, 16, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 4);
  for (const std::string knobs : {"tp=2,pp=2,mb=2,distopt=1", "tp=1,pp=2,vp=2,mb=1,recompute=selective"}) {
    Plan plan = megatron(g, c, knobs);
    const PlanAnalysis a = analyze_plan(g, c, plan);
    const StepEstimate e = estimate_step(a, plan, c);
    const auto stages = memory_breakdown(g, plan, a);
    ASSERT_EQ(stages.size(), e.stage_peak_memory.size());
    for (const auto& b : stages) {
      EXPECT_DOUBLE_EQ(b.peak, e.stage_peak_memory[b.stage]) << knobs << " stage " << b.stage;
      EXPECT_DOUBLE_EQ(b.parameters + b.gradients + b.optimizer + b.activations + b.transient + b.reserve, b.peak);
      const double classes = std::accumulate(b.activations_by_class.begin(), b.activations_by_class.end(), 0.0,
                                             [](double s, const auto& p) { return s + p.second; });
      EXPECT_NEAR(classes, b.activations_per_micro_batch, 1e-9 * b.activations_per_micro_batch) << knobs;
      EXPECT_GT(b.activations, 0);
      EXPECT_GT(b.optimizer, 0);
    }
  }
}

TEST(MemoryBreakdown, ZeroStagesShardTheirParts) {
  Graph g = symtensor::testing::zoo_graph("llama2-70b-tiny", {}, 16, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  Plan plan = make_plan("dp", g, c, StrategyOptions{});
  const auto zero0 = memory_breakdown(g, plan, analyze_plan(g, c, plan)).at(0);
  plan.zero_stage = 3;
  const auto zero3 = memory_breakdown(g, plan, analyze_plan(g, c, plan)).at(0);
  EXPECT_DOUBLE_EQ(zero3.parameters * 8, zero0.parameters);
  EXPECT_DOUBLE_EQ(zero3.gradients * 8, zero0.gradients);
  EXPECT_DOUBLE_EQ(zero3.optimizer * 8, zero0.optimizer);
  EXPECT_DOUBLE_EQ(zero0.optimizer, 6 * zero0.parameters);  // 12 B of fp32 states per 2 B weight
  EXPECT_NE(zero3.optimizer_detail.find("ZeRO-3"), std::string::npos);
  EXPECT_DOUBLE_EQ(zero3.activations, zero0.activations);
}

// One MLP layer (x[b,1024] -> MatMul w1[1024,4096] -> Relu -> MatMul w2[4096,1024]), data
// parallel over 8 A100s at batch 64: 8 rows per device, 16-bit activations. By hand:
// working buffers are the Relu's input and output, 2 x 8 x 4096 x 2 B = 131072 B (each
// MatMul holds 8 x (1024 + 4096) x 2 B = 81920 B); ZeRO's staging is set by w1 (and w2),
// 1024 x 4096 x 2 B = 8 MiB: one for the gradient from ZeRO-2, two more gathered under
// ZeRO-3; the reserve is the profile's 2 GB.
TEST(MemoryBreakdown, TransientBuffersAndReserveByHand) {
  Graph g = symtensor::testing::import_bound(symtensor::testing::mlp_model(1, 1024), "mlp", 64);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  ASSERT_EQ(c.device.memory_reserve_bytes, 2e9);
  Plan plan = make_plan("dp", g, c, StrategyOptions{});
  const double weight = 1024.0 * 4096 * 2;
  for (int zero : {0, 1, 2, 3}) {
    plan.zero_stage = zero;
    const PlanAnalysis a = analyze_plan(g, c, plan);
    const StageMemoryBreakdown b = memory_breakdown(g, plan, a).at(0);
    EXPECT_DOUBLE_EQ(b.working_buffers, 2.0 * 8 * 4096 * 2) << "zero " << zero;
    EXPECT_NE(b.working_buffers_detail.find("(Relu)"), std::string::npos) << b.working_buffers_detail;
    EXPECT_DOUBLE_EQ(b.collective_buffers, zero == 3 ? 3 * weight : zero == 2 ? weight : 0) << "zero " << zero;
    EXPECT_DOUBLE_EQ(b.reserve, 2e9);
    EXPECT_DOUBLE_EQ(b.peak, b.parameters + b.gradients + b.optimizer + b.activations + b.working_buffers +
                                 b.collective_buffers + b.reserve);
    EXPECT_DOUBLE_EQ(b.peak, estimate_step(a, plan, c).peak_memory);
  }
  plan.zero_stage = 0;
  plan.mode = ExecutionMode::infer;
  const StageMemoryBreakdown infer = memory_breakdown(g, plan, analyze_plan(g, c, plan)).at(0);
  EXPECT_DOUBLE_EQ(infer.working_buffers, 2.0 * 8 * 4096 * 2);
  EXPECT_DOUBLE_EQ(infer.collective_buffers, 0);
}

double activations_of_layers(int layers, int t) {
  models::Overrides o;
  o.layers = layers, o.hidden = 6144, o.heads = 64, o.vocab = 51200;
  const models::ModelConfig config = models::apply_overrides(models::preset_config("gpt"), o);
  ImportOptions io;
  io.bindings = {{"batch", 1.0}, {"seq", 2048.0}};
  io.warn_opaque = false;
  io.fusion.attention = AttentionMode::materialized;
  Graph g = import_onnx_model(models::build_model(config), "gpt-22b-layer", io);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, t);
  Plan plan = megatron(g, c, "tp=" + std::to_string(t) + ",pp=1,mb=1", hardware::Precision::fp16);
  const PlanAnalysis a = analyze_plan(g, c, plan);
  return memory_breakdown(g, plan, a).at(0).activations_per_micro_batch;
}

TEST(MemoryBreakdown, Korthikanti22BLayerWithoutDropout) {
  const double s = 2048, b = 1, h = 6144, a = 64;
  for (int t : {1, 8}) {
    const double layer = activations_of_layers(2, t) - activations_of_layers(1, t);
    EXPECT_DOUBLE_EQ(layer, s * b * h * (8 + 24.0 / t + 2 * a * s / (h * t))) << "t=" << t;
  }
}

// Activations by the layer's parts, never op types: in a LLaMA-like model the attention, the MLP
// and the norms each hold some. A decomposed RMSNorm holds its input (b x s x h 16-bit values)
// and at most two per-token scalars (the mean of squares and its reciprocal root, [b, s, 1]);
// there are 2L + 1 of them (two a layer and the final one; one device, one micro-batch). The
// parts still sum to the activations.
TEST(MemoryBreakdown, ActivationsByTheLayersParts) {
  models::Overrides o;
  o.layers = 3;
  Graph g = symtensor::testing::zoo_graph("llama2-70b-tiny", o, 4, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 1);
  const Plan plan = make_plan("dp", g, c, StrategyOptions{});
  const StageMemoryBreakdown b = memory_breakdown(g, plan, analyze_plan(g, c, plan)).at(0);
  const std::set<std::string> known = {"embedding", "attention", "MLP / experts", "norms", "head and loss", "other"};
  std::map<std::string, double> parts;
  for (const auto& [part, bytes] : b.activations_by_class) {
    EXPECT_TRUE(known.count(part)) << part;
    parts[part] += bytes;
  }
  EXPECT_GT(parts["attention"], 0);
  EXPECT_GT(parts["MLP / experts"], 0);
  const double hidden = 64;  // every -tiny preset's
  const double norms = 2 * 3 + 1, tokens = 4 * 32;
  EXPECT_GE(parts["norms"], norms * tokens * hidden * 2);
  EXPECT_LE(parts["norms"], norms * tokens * (hidden + 2) * 2);
  double sum = 0;
  for (const auto& [part, bytes] : parts) sum += bytes;
  EXPECT_NEAR(sum, b.activations_per_micro_batch, 1e-9 * sum);
}

}  // namespace
}  // namespace symtensor::compiler
