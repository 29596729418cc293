// Low precision as Transformer Engine runs it: only the linear layers' GEMMs at the FP8/FP4
// rate, attention and element-wise work in bf16, quantization passes priced; memory keeps the
// bf16 weights plus the quantized copies, and the linear layers' inputs in FP8.
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct Priced {
  double step_s = 0, parameters = 0, activations = 0;
};

Priced price(Graph& g, const hardware::Cluster& c, const std::string& knobs, hardware::Precision p, bool simulate) {
  StrategyOptions so;
  so.precision = p;
  const Plan plan = make_megatron_plan(g, c, parse_megatron_knobs(knobs), so);
  const PlanAnalysis a = analyze_plan(g, c, plan);
  Priced r;
  r.parameters = a.stage_memory.at(0).parameters;
  r.activations = a.stage_memory.at(0).activations_per_micro_batch;
  if (simulate) {
    sim::SimOptions options;
    options.record_trace = false;
    r.step_s = simulate_plan(g, plan, c, {}, options).report.step_time_s;
  } else {
    r.step_s = estimate_step(a, plan, c).step_time_s;
  }
  return r;
}

// GPT-3 175B on 512 H100 at NeMo's layout (TP4 PP8, interleaved), Megatron-Core with TE:
// published end-to-end FP8 gains are 1.3-1.5x over bf16 (CALIBRATION.md section 5), not the
// 2x of the peaks.
TEST(LowPrecision, Gpt3Fp8OverBf16IsWhatTheStacksReach) {
  models::Overrides o;
  o.vocab = 51200;
  Graph g = symtensor::testing::zoo_graph("gpt3-175b", o, 2048, 2048);
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 64, 8), {"nemo"});
  const std::string knobs = "tp=4,pp=8,vp=12,mb=2,sp=1,distopt=1";
  const Priced bf16 = price(g, c, knobs, hardware::Precision::bf16, true);
  const Priced fp8 = price(g, c, knobs, hardware::Precision::fp8, true);
  const double ratio = bf16.step_s / fp8.step_s;
  std::printf("GPT-3 175B / 512 H100: bf16 %.2f s, fp8 %.2f s, %.2fx\n", bf16.step_s, fp8.step_s, ratio);
  EXPECT_GE(ratio, 1.3);
  EXPECT_LE(ratio, 1.5);
}

// By hand on one small LLaMA (no tensor parallelism, one GPU): the linear weights keep their
// bf16 copy and gain a rowwise and a columnwise FP8 copy (2 bytes per element); the LM head
// is Megatron's own module and stays bf16. The linear layers keep their inputs in FP8
// (1 byte), so activations fall, but by less than half: norms, attention and the SwiGLU keep
// theirs in bf16. Never less memory than TE keeps for the weights.
TEST(LowPrecision, Fp8MemoryKeepsWhatTransformerEngineKeeps) {
  models::Overrides o;
  o.layers = 2;
  Graph g = symtensor::testing::zoo_graph("llama2-7b-tiny", o, 4, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 1);
  const Priced bf16 = price(g, c, "tp=1", hardware::Precision::bf16, false);
  const Priced fp8 = price(g, c, "tp=1", hardware::Precision::fp8, false);
  // llama2-7b-tiny: hidden 64, 4 heads and 4 KV heads, MLP 96; per layer q, k, v and o 64x64,
  // gate and up 64x96, down 96x64.
  const double linear_per_layer = 4 * 64.0 * 64 + 3 * 64 * 96;
  EXPECT_DOUBLE_EQ(fp8.parameters - bf16.parameters, 2 * 2 * linear_per_layer);  // 2 layers, 2 bytes
  EXPECT_LT(fp8.activations, bf16.activations);
  EXPECT_GT(fp8.activations, 0.5 * bf16.activations);
}

// Megatron splits 126 layers over 8 x 8 virtual stages by counting the embedding and the loss
// as a layer each (Llama 3.1 405B's published layout): the first and last stages hold one
// layer fewer. first=/last= set them as --decoder-first/last-pipeline-num-layers do.
TEST(LowPrecision, UnevenPipelineStagesAsMegatronSplitsThem) {
  MegatronKnobs k = parse_megatron_knobs("pp=8,vp=8");
  EXPECT_EQ(megatron_stage_layers(k, 126), (std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15}));
  EXPECT_EQ(megatron_stage_layers(k, 128), std::vector<int>(8, 16));
  k = parse_megatron_knobs("pp=12");
  EXPECT_EQ(megatron_stage_layers(k, 70), (std::vector<int>{5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5}));
  k = parse_megatron_knobs("pp=4,first=3,last=3");
  EXPECT_EQ(megatron_stage_layers(k, 10), (std::vector<int>{3, 2, 2, 3}));
  try {
    megatron_stage_layers(parse_megatron_knobs("pp=4"), 9);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "megatron: pp=4 does not divide the 9 layers, nor 11 with the embedding and the loss counted as layers; "
                 "give first=N,last=M");
  }
  // A plan: 6 layers on 4 stages, the first and the last with one.
  models::Overrides o;
  o.layers = 6;
  Graph g = symtensor::testing::zoo_graph("llama2-7b-tiny", o, 8, 16);
  const Plan plan =
      make_megatron_plan(g, symtensor::testing::cluster_of("dgx-a100", 1, 4), parse_megatron_knobs("pp=4"), StrategyOptions{});
  std::vector<int> counts;
  stage_layer_ordinals(NumericGraph(g), plan, &counts);
  EXPECT_EQ(counts, (std::vector<int>{1, 2, 2, 1}));
}

}  // namespace
}  // namespace symtensor::compiler
