// step_time_lower_bound: below every plan's estimate, above the published GEMM FLOP count
// at the device's best efficiency, and inversely proportional to the device count.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_bound.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr double kBoundBatch = 64, kBoundSeq = 1024;
constexpr std::int64_t kBoundLayers = 2, kBoundHidden = 4096, kBoundVocab = 51200;

Graph bound_gpt() {
  models::Overrides o;
  o.layers = kBoundLayers;
  o.hidden = kBoundHidden;
  o.heads = 32;
  o.vocab = kBoundVocab;
  return symtensor::testing::zoo_graph("gpt-1.7b", o, kBoundBatch, kBoundSeq);
}

double estimated_step(Graph& g, const hardware::Cluster& c, const Plan& plan) {
  return estimate_step(analyze_plan(g, c, plan), plan, c).step_time_s;
}

TEST(StepBound, BelowEveryStrategysEstimate) {
  Graph g = bound_gpt();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 8);
  const double bound = step_time_lower_bound(g, c, StrategyOptions{});
  ASSERT_GT(bound, 0);
  for (const char* strategy : {"dp", "zero3"}) {
    const Plan plan = make_plan(strategy, g, c, StrategyOptions{});
    EXPECT_LT(bound, estimated_step(g, c, plan)) << strategy;
  }
  for (const char* knobs : {"tp=2,mb=2", "tp=8,pp=2,mb=1", "tp=4,pp=2,mb=1,recompute=full"}) {
    StrategyOptions o;
    o.megatron = knobs;
    const Plan plan = make_plan("megatron", g, c, o);
    EXPECT_LT(bound, estimated_step(g, c, plan)) << knobs;
  }
  const SearchResult s = symtensor_search(g, c, StrategyOptions{});
  EXPECT_LT(bound, s.estimate.step_time_s) << s.summary;
  // Not vacuous: the best plan of a model this small gets within a factor of two of it.
  EXPECT_GT(bound, 0.5 * s.estimate.step_time_s) << s.summary;
}

TEST(StepBound, AtLeastThePublishedGemmFlopsAtTheBestEfficiency) {
  Graph g = bound_gpt();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 8);
  // Narayanan et al. (SC'21): 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) FLOPs per training step
  // without recomputation; the attention term is left out (causal kernels may count less).
  const double B = kBoundBatch, s = kBoundSeq, l = kBoundLayers, h = kBoundHidden, V = kBoundVocab;
  const double gemm_flops = 72 * B * s * l * h * h * (1 + V / (12 * l * h));
  double best = 0;
  for (const auto& p : c.device.efficiency) best = std::max(best, p.efficiency);
  for (const auto& p : c.device.attention_efficiency) best = std::max({best, p.forward, p.backward});
  const double peak = c.device.peak(hardware::Precision::bf16);
  const double floor = gemm_flops / (c.num_devices() * peak * best);
  const double bound = step_time_lower_bound(g, c, StrategyOptions{});
  EXPECT_GE(bound, floor);
  // The GEMMs dominate at this width: the element-wise ops and the optimizer add less than half.
  EXPECT_LT(bound, 1.5 * floor);
}

TEST(StepBound, SpreadsOverTheDevices) {
  Graph g = bound_gpt();
  const double two = step_time_lower_bound(g, symtensor::testing::cluster_of("dgx-a100", 2, 8), StrategyOptions{});
  const double four = step_time_lower_bound(g, symtensor::testing::cluster_of("dgx-a100", 4, 8), StrategyOptions{});
  EXPECT_NEAR(four, two / 2, 1e-12 * two);
}

TEST(StepBound, NeedsTheBatchBound) {
  ImportOptions io;
  io.warn_opaque = false;
  Graph g = import_onnx_model(symtensor::testing::mlp_model(1, 64), "mlp", io);
  EXPECT_THROW(step_time_lower_bound(g, symtensor::testing::cluster_of("dgx-a100", 1, 8), StrategyOptions{}),
               std::runtime_error);
}

// The pipeline's compute bound by hand: stages of (forward, backward) 1+2, 3+4, 1+1 seconds,
// 4 micro-batches. Chained (1F1B): stage 1 waits for stage 0's forward and follows it with
// stage 0's backward: 1 + 4 x 7 + 2 = 31; stage 2 waits 1 + 3 and drains 2 + 4: 10 + 8 = 18;
// stage 0 alone: 12. Interleaved, no fill and drain: the busiest stage's 28.
TEST(StepBound, PipelineComputeBoundByHand) {
  const std::vector<double> fwd{1, 3, 1}, bwd{2, 4, 1};
  EXPECT_DOUBLE_EQ(pipeline_compute_bound(fwd, bwd, 4, true), 31);
  EXPECT_DOUBLE_EQ(pipeline_compute_bound(fwd, bwd, 4, false), 28);
  EXPECT_DOUBLE_EQ(pipeline_compute_bound({5}, {7}, 3, true), 36);
}

}  // namespace
}  // namespace symtensor::compiler
