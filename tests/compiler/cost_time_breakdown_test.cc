// `simulate --ops`: where a stage's time goes by operator class. Its classes sum to the stage
// totals the step estimate reads (kernels forward, backward with the recomputed forward, and
// the collectives each operator exposes), and its slowest operators come slowest first.
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/time_breakdown.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

TEST(TimeBreakdown, ClassesSumToTheStageTotals) {
  models::Overrides o;
  o.layers = 4, o.hidden = 256, o.heads = 4, o.kv_heads = 2, o.intermediate = 512, o.vocab = 1024, o.seq = 128;
  Graph graph = symtensor::testing::zoo_graph("llama2-7b", o, 16, 128);
  const hardware::Cluster cluster = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  const Plan plan = make_megatron_plan(graph, cluster, parse_megatron_knobs("tp=2,pp=2,mb=1,recompute=full"), StrategyOptions{});
  const PlanAnalysis analysis = analyze_plan(graph, cluster, plan);
  const StageTotals totals = stage_totals(analysis, plan);
  const std::vector<StageTimeBreakdown> stages = time_breakdown(graph, plan, analysis, 5);
  ASSERT_EQ(stages.size(), 2u);
  for (const StageTimeBreakdown& st : stages) {
    double forward = 0, backward = 0, comm = 0, recompute = 0;
    for (const OpClassTime& c : st.classes) forward += c.forward_s, backward += c.backward_s + c.recompute_s, comm += c.exposed_comm_s, recompute += c.recompute_s;
    EXPECT_NEAR(forward + st.offload_s, totals.fwd_compute[st.stage] + totals.bwd_compute[st.stage] - backward, 1e-12);
    EXPECT_NEAR(backward, totals.bwd_compute[st.stage], 1e-12);
    EXPECT_NEAR(comm, totals.fwd_comm[st.stage] + totals.bwd_comm[st.stage], 1e-12);
    EXPECT_GT(recompute, 0);  // full recomputation redoes the layers' forward
    EXPECT_GT(comm, 0);       // tensor parallelism's collectives
    ASSERT_EQ(st.slowest.size(), 5u);
    for (std::size_t i = 1; i < st.slowest.size(); ++i)
      EXPECT_GE(st.slowest[i - 1].kernel_s + st.slowest[i - 1].exposed_comm_s, st.slowest[i].kernel_s + st.slowest[i].exposed_comm_s);
    for (std::size_t i = 1; i < st.classes.size(); ++i) EXPECT_GE(st.classes[i - 1].total_s(), st.classes[i].total_s());
  }
  const std::string text = time_breakdown_text(stages);
  EXPECT_NE(text.find("stage1"), std::string::npos);
  EXPECT_NE(text.find("MatMul"), std::string::npos);
  EXPECT_NE(text.find("slowest operators"), std::string::npos);
}

// Inference: forward kernels only, and its slowest operators listed too.
TEST(TimeBreakdown, InferenceListsForwardKernelsAndTheSlowest) {
  models::Overrides o;
  o.layers = 2, o.hidden = 256, o.heads = 4, o.kv_heads = 2, o.intermediate = 512, o.vocab = 1024, o.seq = 128;
  Graph graph = symtensor::testing::zoo_graph("llama2-7b", o, 16, 128);
  const hardware::Cluster cluster = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  StrategyOptions so;
  so.mode = ExecutionMode::infer;
  const Plan plan = make_megatron_plan(graph, cluster, parse_megatron_knobs("tp=2,mb=1"), so);
  const PlanAnalysis analysis = analyze_plan(graph, cluster, plan);
  const std::vector<StageTimeBreakdown> stages = time_breakdown(graph, plan, analysis, 3);
  ASSERT_EQ(stages.size(), 1u);
  double forward = 0;
  for (const OpClassTime& c : stages[0].classes) {
    forward += c.forward_s;
    EXPECT_EQ(c.backward_s + c.recompute_s, 0) << c.op_class;
  }
  EXPECT_NEAR(forward, stage_totals(analysis, plan).fwd_compute[0], 1e-12);
  ASSERT_EQ(stages[0].slowest.size(), 3u);
  EXPECT_GT(stages[0].slowest[0].kernel_s, 0);
}

}  // namespace
}  // namespace symtensor::compiler
