// The routing load a user states (Plan::moe_load_imbalance, --moe-load-imbalance; issue #31):
// under dropless routing the busiest expert rank's expert work, token exchanges and routed
// activations scale by F and nothing else moves; under capacity routing the work stays the
// capacity buffer's and the report states the tokens dropped. Checked by hand on a tiny
// Mixtral at ep=4 on one node.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "compiler/cost/moe_load.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace moe_load_test {

using testing::dgx;

constexpr double kMoeLoadBatch = 8, kMoeLoadSeq = 8;

Graph tiny_mixtral(double capacity_factor, models::ModelConfig* config_out = nullptr) {
  models::ModelConfig config = models::preset_config("mixtral-8x7b-tiny");
  config.capacity_factor = capacity_factor;
  if (config_out) *config_out = config;
  ImportOptions io;
  io.bindings = {{"batch", kMoeLoadBatch}, {"seq", kMoeLoadSeq}};
  io.warn_opaque = false;
  return import_onnx_model(models::build_model(config), "mixtral-8x7b-tiny", io);
}

double moe_load_all_to_all_bytes(const PlanAnalysis& a) {
  double bytes = 0;
  for (const OpWork& w : a.ops)
    for (const auto* comm : {&w.fwd_comm, &w.bwd_comm})
      for (const CommOp& c : *comm)
        if (c.kind == hardware::Collective::all_to_all) bytes += c.bytes;
  return bytes;
}

TEST(MoeLoad, DroplessScalesTheBusiestRanksExpertWorkByHand) {
  models::ModelConfig config;
  Graph g = tiny_mixtral(1.0, &config);
  const hardware::Cluster cluster = dgx(1, 4);
  const Plan balanced = make_megatron_plan(g, cluster, parse_megatron_knobs("ep=4"), {});
  StrategyOptions skewed_options;
  skewed_options.moe_load_imbalance = 1.5;
  const Plan skewed = make_megatron_plan(g, cluster, parse_megatron_knobs("ep=4"), skewed_options);
  ASSERT_EQ(skewed.moe_load_imbalance, 1.5);  // the strategy carries it
  const PlanAnalysis a = analyze_plan(g, cluster, balanced), b = analyze_plan(g, cluster, skewed);
  ASSERT_EQ(a.ops.size(), b.ops.size());

  // Capacity factor 1: C = ceil(k s / E) slots, the even share, read as dropless.
  EXPECT_EQ(a.moe_load.dropless_layers, config.layers);
  EXPECT_EQ(a.moe_load.capacity_layers, 0);
  EXPECT_EQ(b.moe_load.imbalance, 1.5);
  EXPECT_EQ(b.moe_load.dropped, 0);
  EXPECT_TRUE(b.moe_load.expert_parallel);

  // Each expert GEMM (gate and up "bech,ehi->beci", down "beci,eih->bech") at ep=4 over the 4 devices, per micro-batch
  // (mb=1 at dp=4: 8 / 4 = 2 micro-batches of 4 samples): each device holds E/4 experts and
  // every sample's C slots for them, 2·(b/m)·(E/4)·C·h·I FLOPs (4 experts, top-2, h 64, I 96:
  // C = ceil(2·8/4) = 4, 196,608 FLOPs).
  ASSERT_EQ(balanced.micro_batches, 2);
  const double slots = std::ceil(static_cast<double>(config.top_k) * kMoeLoadSeq / config.experts);
  const double expert_flops =
      2 * (kMoeLoadBatch / balanced.micro_batches) * (config.experts / 4.0) * slots * config.hidden * config.intermediate;
  NumericGraph ng(g);
  int expert_gemms = 0, by_hand = 0, scaled = 0, attention = 0, dense_gemms = 0;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const OpWork& x = a.ops[i];
    const OpWork& y = b.ops[i];
    const NumericNode& nn = ng.node(x.node);
    const std::string& name = g.node(x.node).name;
    if (nn.expert_gemm) {
      ++expert_gemms;
      if (std::abs(x.fwd_flops - expert_flops) < 1e-6 * expert_flops) ++by_hand;
      EXPECT_NEAR(y.fwd_flops, 1.5 * x.fwd_flops, 1e-9 * x.fwd_flops) << name;
      EXPECT_NEAR(y.bwd_flops, 1.5 * x.bwd_flops, 1e-9 * x.bwd_flops) << name;
      EXPECT_NEAR(y.fwd_seconds, 1.5 * x.fwd_seconds, 1e-12) << name;
      EXPECT_NEAR(y.bwd_seconds, 1.5 * x.bwd_seconds, 1e-12) << name;
      EXPECT_GT(y.fwd_bytes, x.fwd_bytes) << name;          // the tokens' bytes grow,
      EXPECT_LT(y.fwd_bytes, 1.5 * x.fwd_bytes) << name;    // the weights' do not
      EXPECT_GT(x.fwd_flops, 0) << name;
    }
    if (y.fwd_seconds != x.fwd_seconds) ++scaled;
    if (nn.kind == OpKind::attention || (nn.kind == OpKind::gemm && !nn.expert_gemm)) {
      ++(nn.kind == OpKind::attention ? attention : dense_gemms);
      EXPECT_EQ(y.fwd_flops, x.fwd_flops) << name;
      EXPECT_EQ(y.fwd_seconds, x.fwd_seconds) << name;
      EXPECT_EQ(y.bwd_seconds, x.bwd_seconds) << name;
      EXPECT_EQ(y.saved_bytes, x.saved_bytes) << name;
    }
  }
  EXPECT_EQ(expert_gemms, 3 * config.layers);
  EXPECT_EQ(by_hand, 3 * config.layers);
  EXPECT_GT(attention, 0);
  EXPECT_GT(dense_gemms, 0);
  // The expert GEMMs and the SwiGLU between them (Sigmoid, Mul, Mul), nothing else.
  EXPECT_EQ(scaled, 6 * config.layers);
  // The dispatch and combine all-to-alls: the busiest rank receives (sends back) 1.5x.
  const double exchanged = moe_load_all_to_all_bytes(a);
  ASSERT_GT(exchanged, 0);
  EXPECT_NEAR(moe_load_all_to_all_bytes(b) / exchanged, 1.5, 1e-12);
  // Its routed activations and so its peak memory and step time grow.
  EXPECT_GT(b.stage_memory[0].activations_per_micro_batch, a.stage_memory[0].activations_per_micro_batch);
  const StepEstimate sa = estimate_step(a, balanced, cluster), sb = estimate_step(b, skewed, cluster);
  EXPECT_GT(sb.step_time_s, sa.step_time_s);
  EXPECT_GT(sb.peak_memory, sa.peak_memory);
  // The analyzer's cached totals (what the searches read) price the same rank.
  PlanAnalyzer analyzer(g, cluster, ng);
  EXPECT_NEAR(estimate_step(analyzer.totals(skewed), skewed, cluster).step_time_s, sb.step_time_s, 1e-9 * sb.step_time_s);
  EXPECT_NEAR(estimate_step(analyzer.totals(balanced), balanced, cluster).step_time_s, sa.step_time_s, 1e-9 * sa.step_time_s);
  EXPECT_NE(describe_moe_load(b.moe_load).find("1.5x"), std::string::npos) << describe_moe_load(b.moe_load);
}

TEST(MoeLoad, WithoutExpertParallelismTheSkewMovesNoWork) {
  // ep=1: every rank runs all 4 experts on its own tokens, k of them per token whatever the skew.
  Graph g = tiny_mixtral(1.0);
  const hardware::Cluster cluster = dgx(1, 4);
  const Plan balanced = make_megatron_plan(g, cluster, parse_megatron_knobs("ep=1"), {});
  Plan skewed = balanced;
  skewed.moe_load_imbalance = 1.5;
  const PlanAnalysis a = analyze_plan(g, cluster, balanced), b = analyze_plan(g, cluster, skewed);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(b.ops[i].fwd_seconds, a.ops[i].fwd_seconds);
    EXPECT_EQ(b.ops[i].bwd_seconds, a.ops[i].bwd_seconds);
  }
  EXPECT_FALSE(b.moe_load.expert_parallel);
  EXPECT_NE(describe_moe_load(b.moe_load).find("no expert parallelism"), std::string::npos);
}

TEST(MoeLoad, CapacityRoutingKeepsTheBufferAndReportsTheTokensDropped) {
  // Capacity factor 1.25: C = ceil(1.25 k s / E) slots; the busiest rank at 1.5x the mean
  // keeps 1.25x and drops 1 - 1.25/1.5 = 1/6 = 16.7 % of its routed tokens.
  models::ModelConfig config;
  Graph g = tiny_mixtral(1.25, &config);
  const hardware::Cluster cluster = dgx(1, 4);
  const Plan balanced = make_megatron_plan(g, cluster, parse_megatron_knobs("ep=4"), {});
  Plan skewed = balanced;
  skewed.moe_load_imbalance = 1.5;
  const PlanAnalysis a = analyze_plan(g, cluster, balanced), b = analyze_plan(g, cluster, skewed);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(b.ops[i].fwd_flops, a.ops[i].fwd_flops);
    EXPECT_EQ(b.ops[i].fwd_seconds, a.ops[i].fwd_seconds);
    EXPECT_EQ(b.ops[i].bwd_seconds, a.ops[i].bwd_seconds);
  }
  EXPECT_EQ(moe_load_all_to_all_bytes(b), moe_load_all_to_all_bytes(a));
  EXPECT_EQ(b.stage_memory[0].activations_per_micro_batch, a.stage_memory[0].activations_per_micro_batch);
  EXPECT_EQ(b.moe_load.capacity_layers, config.layers);
  EXPECT_EQ(b.moe_load.dropless_layers, 0);
  EXPECT_DOUBLE_EQ(b.moe_load.capacity_factor, 1.25);
  EXPECT_NEAR(b.moe_load.dropped, 1.0 / 6.0, 1e-12);
  EXPECT_EQ(a.moe_load.dropped, 0);
  const std::string text = describe_moe_load(b.moe_load);
  EXPECT_NE(text.find("16.7 %"), std::string::npos) << text;
  EXPECT_EQ(moe_load_json(b.moe_load)["routing"], "capacity");
  // Below the capacity factor nothing is dropped.
  EXPECT_EQ(dropped_share(1.2, 1.25), 0);
  EXPECT_EQ(dropped_share(3, 0), 0);  // dropless drops nothing
}

TEST(MoeLoad, BadValuesAreRefusedInOneLineAndThePlanFileKeepsIt) {
  for (double bad : {0.5, 0.0, -2.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    try {
      check_moe_load_imbalance(bad, "--moe-load-imbalance");
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--moe-load-imbalance: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(check_moe_load_imbalance(1, "x"), 1);
  Graph g = tiny_mixtral(1.0);
  const hardware::Cluster cluster = dgx(1, 4);
  Plan plan = make_megatron_plan(g, cluster, parse_megatron_knobs("ep=4"), {});
  EXPECT_EQ(plan_to_yaml(plan, g, cluster).find("\nmoe_load_imbalance:"), std::string::npos);  // the default unwritten
  plan.moe_load_imbalance = 1.5;
  const std::string yaml = plan_to_yaml(plan, g, cluster);
  EXPECT_EQ(plan_from_yaml(yaml, "plan.yaml", g, cluster).moe_load_imbalance, 1.5);
  std::string bad = yaml;
  bad.replace(bad.find("moe_load_imbalance: 1.5"), 23, "moe_load_imbalance: 0.9");
  try {
    plan_from_yaml(bad, "plan.yaml", g, cluster);
    ADD_FAILURE() << "moe_load_imbalance 0.9 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("moe_load_imbalance"), std::string::npos) << e.what();
  }
  // A plan built in code with a bad value is refused by the cost model.
  plan.moe_load_imbalance = 0.5;
  EXPECT_THROW(analyze_plan(g, cluster, plan), std::runtime_error);
}

TEST(MoeLoad, TheCostModelAndTheExportsReadBuffersAlike) {
  // k 2 of E 8 over s 100: the even share is ceil(25) = 25 slots.
  EXPECT_EQ(routing_of_buffers(100, 8, 25, 2), kDroplessRouting);
  EXPECT_FLOAT_EQ(routing_of_buffers(100, 8, 32, 2), 1.28f);  // 32 * 8 / 200
  EXPECT_EQ(routing_of_buffers(0, 8, 25, 2), kDroplessRouting);  // sizes unknown
  // Capacity routing, and the Megatron flag of the same graph is its factor (export_readback_test).
  Graph g = tiny_mixtral(1.25);
  const hardware::Cluster cluster = dgx(1, 4);
  const PlanAnalysis a = analyze_plan(g, cluster, make_megatron_plan(g, cluster, parse_megatron_knobs("ep=4"), {}));
  EXPECT_EQ(a.moe_load.dropless_layers, 0);
  EXPECT_GT(a.moe_load.capacity_layers, 0);
  EXPECT_DOUBLE_EQ(a.moe_load.capacity_factor, 1.25);
}

TEST(MoeLoad, ALoadStatedForADenseModelIsToldToChangeNothing) {
  Graph g = testing::zoo_graph("llama2-7b-tiny", 8, 8);
  const hardware::Cluster cluster = dgx(1, 4);
  StrategyOptions skewed;
  skewed.moe_load_imbalance = 1.5;
  const Plan pa = make_megatron_plan(g, cluster, parse_megatron_knobs("tp=2"), {});
  const Plan pb = make_megatron_plan(g, cluster, parse_megatron_knobs("tp=2"), skewed);
  const PlanAnalysis a = analyze_plan(g, cluster, pa), b = analyze_plan(g, cluster, pb);
  EXPECT_FALSE(a.moe_load.told());
  EXPECT_EQ(describe_moe_load(a.moe_load), "");
  ASSERT_TRUE(b.moe_load.told());
  EXPECT_NE(describe_moe_load(b.moe_load).find("no experts"), std::string::npos) << describe_moe_load(b.moe_load);
  EXPECT_EQ(estimate_step(a, pa, cluster).step_time_s, estimate_step(b, pb, cluster).step_time_s);
}

}  // namespace moe_load_test
}  // namespace symtensor::compiler
