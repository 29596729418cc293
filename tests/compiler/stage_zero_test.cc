// ZeRO per pipeline stage (Plan::stage_zero_stages, issue #32) and ZeRO-2/3's gradient
// reduce-scatter of every micro-batch: each stage prices its model states, gathers and
// reduce-scatters as the uniform plan of its own ZeRO stage prices that stage; the plan file
// keeps the stages; the exports name the nearest uniform plan; and the search raises a stage's
// ZeRO stage only where that stage's memory needs it.
#include <gtest/gtest.h>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/recipe.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/report/step_formula.h"
#include "compiler/search/stage_sharding.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

Graph small_gpt(int hidden = 64) {
  models::Overrides o;
  o.layers = 4, o.hidden = hidden, o.heads = 2, o.vocab = 512, o.seq = 32;
  return symtensor::testing::zoo_graph("gpt-1.7b", o, 32, 32);
}

// Two stages of two layers, four data-parallel ranks each, eight micro-batches, the
// distributed optimizer (ZeRO-1) on both.
Plan two_stages(Graph& g, const hardware::Cluster& c) {
  MegatronKnobs k;
  k.tp = 1, k.pp = 2, k.mb = 1, k.distopt = true;
  return make_megatron_plan(g, c, k, {});
}

TEST(StageZero, EachStagePricesItsOwnZeroStage) {
  Graph g = small_gpt();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  const Plan one = two_stages(g, c);
  ASSERT_EQ(one.pipeline_stages(), 2);
  ASSERT_EQ(one.micro_batches, 8);
  Plan three = one;
  three.zero_stage = 3;
  Plan mixed = one;
  mixed.stage_zero_stages = {0, 3};  // with the distributed optimizer: ZeRO-1, then ZeRO-3
  EXPECT_EQ(mixed.effective_zero_stage_of(0), 1);
  EXPECT_EQ(mixed.effective_zero_stage_of(1), 3);
  EXPECT_EQ(describe_zero(mixed), "ZeRO 1/3 by stage");

  const PlanAnalysis a1 = analyze_plan(g, c, one), a3 = analyze_plan(g, c, three), am = analyze_plan(g, c, mixed);
  auto states = [](const StageMemory& m) { return std::vector<double>{m.parameters, m.gradients, m.optimizer, m.collective_buffers}; };
  EXPECT_EQ(states(am.stage_memory[0]), states(a1.stage_memory[0]));
  EXPECT_EQ(states(am.stage_memory[1]), states(a3.stage_memory[1]));
  // ZeRO-3 shards the 16-bit weights over the 4 data-parallel ranks where ZeRO-1 keeps them whole.
  EXPECT_NEAR(am.stage_memory[1].parameters * 4, a1.stage_memory[1].parameters, 1e-6 * a1.stage_memory[1].parameters);

  // The totals, through the reusing analyzer, in any order: the same as a fresh analysis.
  const NumericGraph ng(g);
  PlanAnalyzer reuse(g, c, ng);
  const StageTotals t1 = reuse.totals(one), tm = reuse.totals(mixed), t3 = reuse.totals(three), tm_again = reuse.totals(mixed);
  const StageTotals fresh = stage_totals(am, mixed);
  for (const StageTotals* t : {&tm, &tm_again}) {
    EXPECT_EQ(t->gather, fresh.gather);
    EXPECT_EQ(t->grad_sync, fresh.grad_sync);
    EXPECT_EQ(t->micro_batch_grad_sync, fresh.micro_batch_grad_sync);
    EXPECT_EQ(t->peak_memory, fresh.peak_memory);
  }
  // Stage 0 gathers nothing and reduces its gradients once a step; stage 1 gathers its weights
  // each pass and reduce-scatters its gradients each micro-batch, as ZeRO-3 does.
  EXPECT_EQ(tm.gather[0], 0);
  EXPECT_EQ(tm.micro_batch_grad_sync[0], 0);
  EXPECT_EQ(tm.grad_sync[0], t1.grad_sync[0]);
  EXPECT_GT(t1.grad_sync[0], 0);
  EXPECT_EQ(tm.gather[1], t3.gather[1]);
  EXPECT_GT(tm.gather[1], 0);
  EXPECT_EQ(tm.micro_batch_grad_sync[1], t3.micro_batch_grad_sync[1]);
  EXPECT_GT(tm.micro_batch_grad_sync[1], 0);
  EXPECT_EQ(tm.grad_sync[1], 0);  // no replicas (HSDP): nothing left for the step's end
  // Another per-stage plan after it, then the first again: each as a fresh analysis prices it.
  Plan other = one;
  other.stage_zero_stages = {3, 0};
  const StageTotals to = reuse.totals(other);
  const StageTotals fresh_other = stage_totals(analyze_plan(g, c, other), other);
  EXPECT_EQ(to.gather, fresh_other.gather);
  EXPECT_EQ(to.micro_batch_grad_sync, fresh_other.micro_batch_grad_sync);
  EXPECT_EQ(to.peak_memory, fresh_other.peak_memory);
  EXPECT_GT(to.gather[0], 0);
  EXPECT_EQ(reuse.totals(mixed).peak_memory, fresh.peak_memory);
}

// The step formula (the closed form `compile` prints) prices ZeRO-3's reduce-scatter of each
// micro-batch as the estimate does, on a pipeline whose stages expose it (two L4 nodes: the
// data-parallel ranks of a stage reach each other over 100 GbE).
TEST(StageZero, StepFormulaAgreesWithTheEstimateUnderZeroThree) {
  Graph g = small_gpt(1024);
  const hardware::Cluster c = symtensor::testing::cluster_of("pcie-l4", 2, 8);
  Plan plan = two_stages(g, c);
  plan.zero_stage = 3;
  const PlanAnalysis a = analyze_plan(g, c, plan);
  const StageTotals t = stage_totals(a, plan);
  double exposed = 0;
  for (int s = 0; s < 2; ++s)
    exposed += exposed_scatter_seconds(t.micro_batch_grad_sync[s], t.gather[s], t.first_gather[s], t.fwd_compute[s] + t.bwd_compute[s]);
  ASSERT_GT(exposed, 0);
  const StepEstimate e = estimate_step(a, plan, c);
  const StepFormula f = build_step_formula(NumericGraph(g), a, plan, c);
  EXPECT_NEAR(f.at(plan.global_batch), e.step_time_s, 1e-9 * e.step_time_s);
}

// By hand, one stage of 4 micro-batches under ZeRO-3: forward 1.5 s and backward 3 s of
// compute; a pass's gathers 2 s (the first 0.1 s); the gradients' reduce-scatter 1.5 s each
// micro-batch. The gathers alone expose their first unit per pass (2 x 1.9 - 4.5 < 0);
// with the reduce-scatter the links carry 3.8 + 1.5 s against 4.5 s of compute: 0.8 s more
// a micro-batch. Reduced once a step instead, as before, the same 1.5 s cost 2.8 s less.
TEST(StageZero, ZeroThreeReduceScattersEveryMicroBatch) {
  EXPECT_DOUBLE_EQ(exposed_scatter_seconds(1.5, 2.0, 0.1, 4.5), 0.8);
  EXPECT_DOUBLE_EQ(exposed_scatter_seconds(0.3, 0.0, 0.0, 0.2), 0.3 - 0.2);  // ZeRO-2: no gathers
  EXPECT_DOUBLE_EQ(exposed_scatter_seconds(0.3, 0.7, 0.1, 1.0), 0.3);        // the links already full
  EXPECT_DOUBLE_EQ(exposed_scatter_seconds(0.0, 0.7, 0.1, 1.0), 0.0);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  Plan plan;
  plan.mesh_factors = {{1}, {8}};
  plan.micro_batches = 4;
  plan.global_batch = 32;
  plan.zero_stage = 3;
  StageTotals t;
  t.fwd_compute = {1.5}, t.bwd_compute = {3.0}, t.fwd_comm = {0}, t.bwd_comm = {0};
  t.grad_sync = {0}, t.micro_batch_grad_sync = {1.5}, t.gather = {2.0}, t.first_gather = {0.1};
  t.p2p_bytes = {};
  t.peak_memory = {1e9};
  t.device_memory = 80e9;
  const StepEstimate each = estimate_step(t, plan, c);
  EXPECT_DOUBLE_EQ(exposed_parameter_seconds(t, 0), 2 * 0.1 + 0.8);
  EXPECT_DOUBLE_EQ(each.dp_exposed_s, 0);  // the last backward: 1.5 + 2 - 3 = 0.5 s, less the 0.9 s counted
  EXPECT_DOUBLE_EQ(each.step_time_s, 4 * (4.5 + 0.2 + 0.8));
  t.grad_sync = {1.5}, t.micro_batch_grad_sync = {0};
  const StepEstimate once = estimate_step(t, plan, c);
  EXPECT_DOUBLE_EQ(once.step_time_s, 4 * (4.5 + 0.2) + (1.5 + 2.0 - 3.0 - 0.1));
  EXPECT_NEAR(each.step_time_s - once.step_time_s, 2.8, 1e-12);
}

TEST(StageZero, PlanFileKeepsTheStagesAndRefusesBadOnes) {
  Graph g = small_gpt();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  Plan plan = two_stages(g, c);
  plan.stage_zero_stages = {0, 3};
  const std::string yaml = plan_to_yaml(plan, g, c);
  EXPECT_NE(yaml.find("stage_zero_stages: [0, 3]"), std::string::npos) << yaml;
  const Plan back = plan_from_yaml(yaml, "plan.yaml", g, c);
  EXPECT_EQ(back.stage_zero_stages, plan.stage_zero_stages);
  EXPECT_EQ(back.zero_stage, 0);
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string text = yaml;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    try {
      plan_from_yaml(text, "plan.yaml", g, c);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("stage_zero_stages: [0, 3]", "stage_zero_stages: [0, 3, 3]").find("3 ZeRO stages for 2 pipeline stages"),
            std::string::npos);
  EXPECT_NE(refused("stage_zero_stages: [0, 3]", "stage_zero_stages: [0, 4]").find("expected a ZeRO stage 0..3"),
            std::string::npos);
  EXPECT_NE(refused("stage_zero_stages: [0, 3]", "stage_zero_stages: [2, 3]").find("stage_zero_stages' least is 2"),
            std::string::npos);
  // A plan analysed with the wrong count is refused in one line too.
  plan.stage_zero_stages = {1};
  EXPECT_THROW(analyze_plan(g, c, plan), std::runtime_error);
}

TEST(StageZero, ExportsNameTheNearestUniformPlan) {
  Graph g = small_gpt();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  Plan plan = two_stages(g, c);
  plan.stage_zero_stages = {0, 3};
  const ParallelRecipe r = recover_recipe(g, c, plan);
  EXPECT_EQ(r.zero_stage, 3);
  bool named = false;
  for (const std::string& item : r.not_expressible) named |= item.find("ZeRO stages 0/3 per pipeline stage") != std::string::npos;
  EXPECT_TRUE(named);
  plan.stage_zero_stages = {3, 3};
  plan.zero_stage = 3;
  const ParallelRecipe same = recover_recipe(g, c, plan);
  EXPECT_EQ(same.zero_stage, 3);
  for (const std::string& item : same.not_expressible) EXPECT_EQ(item.find("ZeRO stages"), std::string::npos) << item;
}

// A memory model written here: a stage's peak falls 10 GB per ZeRO stage (as it runs) from its
// own base, against 50 GB of memory.
auto memory_model(std::vector<double> base, int* evaluations) {
  return [base, evaluations](const Plan& p) {
    ++*evaluations;
    Evaluation e;
    e.valid = true;
    e.estimate.memory_capacity = 50;
    e.estimate.fits = true;
    for (std::size_t s = 0; s < base.size(); ++s) {
      e.estimate.stage_peak_memory.push_back(base[s] - 10 * p.effective_zero_stage_of(static_cast<int>(s)));
      e.estimate.fits = e.estimate.fits && e.estimate.stage_peak_memory.back() <= 50;
    }
    return e;
  };
}

Plan three_stages(bool distributed_optimizer) {
  Plan plan;
  plan.mesh_factors = {{3}, {1}};
  plan.pipeline_axis = 0;
  plan.distributed_optimizer = distributed_optimizer;
  return plan;
}

// From ZeRO-1 (the distributed optimizer): stage 0 (60 GB) and stage 1 (52) raise to ZeRO-2
// (50 and 42: they fit), stage 2 (30) keeps ZeRO-1.
TEST(StageZero, RaisesOnlyTheStagesOverTheirMemory) {
  int evaluations = 0;
  const auto evaluate = memory_model({70, 62, 40}, &evaluations);
  Plan plan = three_stages(true);
  const Evaluation e = shard_stages_as_needed(plan, evaluate(plan), evaluate);
  EXPECT_TRUE(e.estimate.fits);
  EXPECT_EQ(plan.stage_zero_stages, (std::vector<int>{2, 2, 0}));
  EXPECT_EQ(plan.zero_stage, 0);
  EXPECT_EQ(evaluations, 2);
  // A stage that does not fit even at ZeRO-3 leaves the plan not fitting.
  const auto heavy = memory_model({100, 30, 30}, &evaluations);
  Plan hopeless = three_stages(false);
  EXPECT_FALSE(shard_stages_as_needed(hopeless, heavy(hopeless), heavy).estimate.fits);
  EXPECT_EQ(hopeless.stage_zero_stages, (std::vector<int>{3, 0, 0}));
}

}  // namespace
}  // namespace symtensor::compiler
