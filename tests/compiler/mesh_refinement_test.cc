// Per-stage tensor parallelism (#32): plans made on different factorizations of one cluster
// refined to a common mesh, and a plan whose stages each run as one of them.
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/plan/mesh_refinement.h"
#include "compiler/search/fleet_search.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

TEST(MeshRefinement, CommonRefinementSplitsEachLevelAtEveryFactorsBoundary) {
  EXPECT_EQ(common_mesh_refinement({{2}, {4, 2}}, {{2}, {2, 4}}), (MeshFactors{{2}, {2, 2, 2}}));
  EXPECT_EQ(common_mesh_refinement({{4}, {8}}, {{2, 2}, {2, 4}}), (MeshFactors{{2, 2}, {2, 4}}));
  EXPECT_EQ(common_mesh_refinement({{1}, {8}}, {{1}, {8}}), (MeshFactors{{1}, {8}}));
  // 6 GPUs as 3 x 2 and as 2 x 3: no factorization has both as runs.
  EXPECT_EQ(common_mesh_refinement({{6}}, {{3, 2}}), (MeshFactors{{3, 2}}));
  EXPECT_FALSE(common_mesh_refinement({{3, 2}}, {{2, 3}}).has_value());
  EXPECT_FALSE(common_mesh_refinement({{4}}, {{8}}).has_value());        // sizes differ
  EXPECT_FALSE(common_mesh_refinement({{4}, {2}}, {{8}}).has_value());   // levels differ
  EXPECT_EQ(common_mesh_refinement({{2}, {1, 8}}, {{2}, {8}}), (MeshFactors{{2}, {8}}));
}

TEST(MeshRefinement, AUnitFactorIsNoAxisOnTheFinerMesh) {
  // gpu [1, 8]: axis 1 holds one device, axis 2 all eight; on gpu [8] the cut names axis 1.
  Plan plan;
  plan.mesh_factors = {{2}, {1, 8}};
  plan.pipeline_axis = 0;
  plan.node_cuts.resize(1);
  plan.node_cuts[0].loop_axes = {{2}, {1}};
  const Plan refined = refine_plan_mesh(plan, {{2}, {8}});
  EXPECT_EQ(refined.pipeline_axis, 0);
  EXPECT_EQ(refined.node_cuts[0].loop_axes, (std::vector<std::vector<int>>{{1}, {}}));
}

struct TwoNodes {
  Graph graph;
  hardware::Cluster cluster;
  TwoNodes()
      : graph(symtensor::testing::zoo_graph("llama2-7b-tiny", layers(4), 16, 64)),
        cluster(symtensor::testing::cluster_of("dgx-h100", 2, 8)) {}
  static models::Overrides layers(int n) {
    models::Overrides o;
    o.layers = n;
    return o;
  }
  // Megatron's layout over the two nodes as a pipeline of two stages, 8 samples a micro-batch.
  Plan megatron(int tp) {
    return make_megatron_plan(graph, cluster, parse_megatron_knobs(fmt::format("tp={},pp=2,mb={},sp={}", tp, tp, tp > 1)),
                              StrategyOptions{});
  }
};

TEST(MeshRefinement, ARefinedPlanIsTheSamePlan) {
  TwoNodes t;
  const Plan plan = t.megatron(2);
  ASSERT_EQ(plan.mesh_factors, (MeshFactors{{2}, {4, 2}}));
  const Plan refined = refine_plan_mesh(plan, {{2}, {2, 2, 2}});
  EXPECT_EQ(refined.pipeline_stages(), 2);
  // Every cut on the 4-way data axis (gpu0) now names gpu0 and gpu1, the tp axis (gpu1) gpu2.
  int cut_on_both = 0;
  for (std::size_t id = 0; id < plan.node_cuts.size(); ++id)
    for (std::size_t l = 0; l < plan.node_cuts[id].loop_axes.size(); ++l) {
      std::vector<int> expected;
      for (int a : plan.node_cuts[id].loop_axes[l]) {
        if (a == 1) expected.insert(expected.end(), {1, 2});
        else expected.push_back(a == 2 ? 3 : a);
      }
      EXPECT_EQ(refined.node_cuts[id].loop_axes[l], expected);
      cut_on_both += expected.size() >= 2;
    }
  EXPECT_GT(cut_on_both, 0);
  // The same devices do the same work: the analysis is the same, stage by stage.
  const StageTotals a = stage_totals(analyze_plan(t.graph, t.cluster, plan), plan);
  const StageTotals b = stage_totals(analyze_plan(t.graph, t.cluster, refined), refined);
  EXPECT_EQ(a.fwd_compute, b.fwd_compute);
  EXPECT_EQ(a.bwd_compute, b.bwd_compute);
  EXPECT_EQ(a.grad_sync, b.grad_sync);
  EXPECT_EQ(a.peak_memory, b.peak_memory);
  EXPECT_THROW(refine_plan_mesh(plan, {{2}, {2, 4}}), std::runtime_error);  // 4 x 2 is not runs of 2 x 4
  EXPECT_THROW(refine_plan_mesh(plan, {{2}, {8}}), std::runtime_error);  // coarser, not finer
  EXPECT_EQ(refine_plan_mesh(plan, {{1, 2}, {4, 2}}).pipeline_axis, 1);  // a unit axis added before it
}

TEST(MeshRefinement, EachStageRunsAsItsOwnPlan) {
  TwoNodes t;
  const Plan tp2 = t.megatron(2), tp4 = t.megatron(4);
  ASSERT_EQ(tp2.micro_batches, tp4.micro_batches);
  const std::vector<Plan> refined = refine_to_common_mesh({tp2, tp4});
  Plan both = refined[0];
  take_stage_cuts(both, refined, {0, 1});
  EXPECT_EQ(both.mesh_factors, (MeshFactors{{2}, {2, 2, 2}}));
  auto totals = [&](const Plan& p) { return stage_totals(analyze_plan(t.graph, t.cluster, p), p); };
  // Stage 0 computes as the tp=2 plan's stage 0 and stage 1 as the tp=4 plan's stage 1 (their
  // kernels; what crosses the boundary is redistributed between the two layouts), at the
  // layouts' split (2/2) and after the layers move (1/3, as the fleet search balances stages:
  // each operator then takes its new stage's cuts).
  for (const std::vector<int>& split : {std::vector<int>{2, 2}, std::vector<int>{1, 3}}) {
    SCOPED_TRACE(split[0]);
    Plan moved = restage_layers(t.graph, both, split);
    take_stage_cuts(moved, refined, {0, 1});
    const StageTotals a = totals(restage_layers(t.graph, tp2, split)), b = totals(restage_layers(t.graph, tp4, split));
    const StageTotals c = totals(moved);
    EXPECT_DOUBLE_EQ(c.fwd_compute[0], a.fwd_compute[0]);
    EXPECT_DOUBLE_EQ(c.bwd_compute[0], a.bwd_compute[0]);
    EXPECT_DOUBLE_EQ(c.fwd_compute[1], b.fwd_compute[1]);
    EXPECT_DOUBLE_EQ(c.bwd_compute[1], b.bwd_compute[1]);
    EXPECT_DOUBLE_EQ(c.grad_sync[0], a.grad_sync[0]);
    EXPECT_DOUBLE_EQ(c.grad_sync[1], b.grad_sync[1]);
    EXPECT_NE(a.fwd_compute[1], b.fwd_compute[1]);  // the stages' layouts do differ
  }
  const PlanSimulation s = simulate_plan(t.graph, both, t.cluster);
  EXPECT_GT(s.report.step_time_s, 0);
  EXPECT_THROW(take_stage_cuts(both, refined, {0}), std::runtime_error);
  EXPECT_THROW(take_stage_cuts(both, refined, {0, 2}), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
