// Plans on a mixed fleet (#32): Megatron-best as the issue defines it, the search that places
// layers by speed, and the ceiling, on a two-type fleet whose numbers are checked by hand.
#include <numeric>

#include <gtest/gtest.h>

#include "compiler/cost/numeric_graph.h"
#include "compiler/lowering/lower_plan.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/search/fleet_estimate.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/recompute_layers.h"
#include "compiler/search/stage_sharding.h"
#include "compiler/strategies/megatron.h"
#include "compiler/analysis/transformer_structure.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

// LLaMA-2 7B's layer at 16 layers, 2k tokens: about a second a search.
Graph fleet_llama(double batch) {
  models::Overrides o;
  o.layers = 16;
  o.seq = 2048;
  return symtensor::testing::zoo_graph("llama2-7b", o, batch, 2048);
}

// tp=8 in three stages of 10, 4 and 2 layers (from Megatron's 6, 4, 6): an H100 stage, two A100 ones.
Plan ten_four_two(Graph& graph, const hardware::Cluster& fleet) {
  MegatronKnobs k;
  k.tp = 8, k.pp = 3, k.mb = 1, k.first = 6, k.last = 6;
  return restage_layers(graph, make_megatron_plan(graph, fleet, k, {}), {10, 4, 2});
}

TEST(FleetSearch, PlacesLayersBySpeedAndBeatsMegatronBest) {
  Graph graph = fleet_llama(96);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  // The pipeline shape alone (batch shares win on this fleet: fleet_batch_shares_test.cc).
  const FleetSearchResult r = fleet_search(graph, fleet, {}, false);
  // The ceiling by hand: 8 H100s at 989.5 x 0.67 x 1.10 TFLOP/s beside 16 A100s at 312 x 0.82
  // x 0.72 (the Megatron stack's GEMM factors), over the H100s alone (the fastest group a plan
  // fits): 1 + 2 x 184.20 / 729.26 = 1.51.
  ASSERT_EQ(r.megatron.subset_group, 0);
  EXPECT_NEAR(r.ceiling, 1 + 2 * 312 * 0.82 * 0.72 / (989.5 * 0.67 * 1.10), 1e-9);
  const FleetStep& megatron = r.megatron.best();
  ASSERT_TRUE(r.plan.fits);
  // 1.08x: the A100s add half the H100s' speed (the ceiling), of which 16 layers in whole
  // stages of 8 GPUs reach about a sixth.
  EXPECT_GT(megatron.step_time_s / r.plan.step_time_s, 1.05) << describe_fleet_result(r, fleet);
  ASSERT_TRUE(r.heterogeneous) << r.plan.label;
  // Every stage inside one group; an H100 stage carries more layers than an A100 stage.
  ASSERT_EQ(r.stage_groups, plan_stage_groups(r.plan.plan, fleet));
  EXPECT_EQ(std::accumulate(r.stage_layers.begin(), r.stage_layers.end(), 0), 16);
  int h100 = 0, a100 = 16;
  for (std::size_t s = 0; s < r.stage_groups.size(); ++s)
    (r.stage_groups[s] == 0 ? h100 = std::max(h100, r.stage_layers[s]) : a100 = std::min(a100, r.stage_layers[s]));
  EXPECT_GT(h100, a100);
  // The share of the ceiling reached: the subset's step over ours, over the ceiling.
  EXPECT_NEAR(r.ceiling_share, r.megatron.subset.step_time_s / r.plan.step_time_s / r.ceiling, 1e-12);
  EXPECT_GT(r.ceiling_share, 0.5);
  EXPECT_LE(r.ceiling_share, 1.0);
  // The plan simulates to the step the search reported.
  EXPECT_NEAR(simulate_plan(graph, r.plan.plan, fleet).report.step_time_s, r.plan.step_time_s, 1e-12);
  EXPECT_NE(describe_fleet_result(r, fleet).find("ceiling: "), std::string::npos);
}

// At 4k tokens the pipelines search context parallelism as Megatron-best prices it (cp=2
// leaves each rank 2k tokens); on LLaMA-2 7B at 16 layers, batch 48, the pipeline takes it.
TEST(FleetSearch, PipelinesSearchContextParallelismFrom4kTokens) {
  models::Overrides o;
  o.layers = 16;
  o.seq = 4096;
  Graph graph = symtensor::testing::zoo_graph("llama2-7b", o, 48, 4096);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const FleetSearchResult r = fleet_search(graph, fleet, {}, false);
  ASSERT_TRUE(r.plan.fits);
  ASSERT_TRUE(r.heterogeneous) << r.plan.label;
  EXPECT_NE(r.plan.label.find("cp=2"), std::string::npos) << describe_fleet_result(r, fleet);
  EXPECT_NEAR(simulate_plan(graph, r.plan.plan, fleet).report.step_time_s, r.plan.step_time_s, 1e-12);
}

TEST(FleetSearch, UniformPlanRunsAtTheSlowestGroupsPace) {
  // Megatron-best (b): a plan giving every rank the same work, simulated on the fleet, takes
  // exactly the time it takes on the fleet's uniform view (every GPU an A100, every NIC the
  // slower one): no rank outruns its slowest peer.
  Graph graph = fleet_llama(48);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  MegatronKnobs k;
  k.tp = 8, k.pp = 1, k.mb = 1;
  const Plan plan = make_megatron_plan(graph, fleet, k, {});
  hardware::Cluster uniform = fleet;
  uniform.groups.clear();
  uniform.group_links.clear();
  const double on_fleet = simulate_plan(graph, plan, fleet).report.step_time_s;
  const double on_uniform = simulate_plan(graph, plan, uniform).report.step_time_s;
  EXPECT_NEAR(on_fleet, on_uniform, 1e-9 * on_uniform);
  // The same plan on A100s alone of the same count, for the record: the NICs match (both 25 GB/s).
  EXPECT_EQ(uniform.device.name, "A100-SXM4-80GB");
}

TEST(FleetSearch, RestagedLayersFollowTheCounts) {
  Graph graph = fleet_llama(48);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  MegatronKnobs k;
  k.tp = 8, k.pp = 3, k.mb = 1, k.first = 6, k.last = 6;  // 6, 4, 6 to start
  const Plan plan = restage_layers(graph, make_megatron_plan(graph, fleet, k, {}), {10, 4, 2});
  EXPECT_EQ(plan_stage_groups(plan, fleet), (std::vector<int>{0, 1, 1}));
  const TransformerStructure s = find_transformer_structure(graph, NumericGraph(graph).spaces());
  std::vector<int> per_stage(3, 0);
  for (NodeId anchor : s.layer_anchors) ++per_stage[plan.stage_of_node[anchor]];
  EXPECT_EQ(per_stage, (std::vector<int>{10, 4, 2}));
  EXPECT_THROW(restage_layers(graph, plan, {16, 0, 0}), std::runtime_error);
  EXPECT_THROW(restage_layers(graph, plan, {8, 8}), std::runtime_error);
}

// Multi-token prediction layers stay on the last stage, as Megatron-Core places them: the
// counts split the decoder's layers only.
TEST(FleetSearch, RestagedMultiTokenPredictionStaysOnTheLastStage) {
  models::Overrides o;
  o.layers = 16;
  o.seq = 2048;
  o.mtp_layers = 1;
  Graph graph = symtensor::testing::zoo_graph("llama2-7b", o, 48, 2048);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const Plan plan = ten_four_two(graph, fleet);
  const TransformerStructure s = find_transformer_structure(graph, NumericGraph(graph).spaces());
  ASSERT_EQ(s.prediction_layers(), 1);
  std::vector<int> per_stage(3, 0);
  for (NodeId anchor : s.layer_anchors) ++per_stage[plan.stage_of_node[anchor]];
  EXPECT_EQ(per_stage, (std::vector<int>{10, 4, 3}));
  EXPECT_EQ(plan.stage_of_node[s.prediction_anchors[0]], 2);
  EXPECT_THROW(restage_layers(graph, plan, {10, 4, 3}), std::runtime_error);  // 17: the MTP layer is not the stages' to place
}

// The analytic estimate of a plan placing work by speed prices each stage on its own group's
// device, as the simulation plays it: the evaluators agree, where the uniform view (every rank
// at the A100s' pace) prices the H100 stage's 10 layers as the slowest.
TEST(FleetEstimate, EachStageOnItsGroupsDeviceAgreesWithTheSimulation) {
  Graph graph = fleet_llama(48);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const Plan plan = ten_four_two(graph, fleet);
  const StepEstimate e = fleet_step_estimate(graph, fleet, plan);
  const StepEstimate uniform = estimate_step(analyze_plan(graph, fleet, plan), plan, fleet);
  const hardware::Cluster on_h100 = hardware::fleet_on_group_device(fleet, 0);
  const StageTotals h100 = stage_totals(analyze_plan(graph, on_h100, plan), plan);
  const StageTotals a100 = stage_totals(analyze_plan(graph, fleet, plan), plan);
  // Stage 0 (H100): 10 layers at the H100's rate; stage 1 (A100): 4 layers at the A100's.
  EXPECT_LT(h100.fwd_compute[0] + h100.bwd_compute[0], a100.fwd_compute[0] + a100.bwd_compute[0]);
  const double bottleneck = std::max(h100.fwd_compute[0] + h100.bwd_compute[0], a100.fwd_compute[1] + a100.bwd_compute[1]);
  EXPECT_GE(e.compute_s, bottleneck * plan.micro_batches * (1 - 1e-9));
  EXPECT_LT(e.step_time_s, 0.8 * uniform.step_time_s);
  const double simulated = simulate_plan(graph, plan, fleet).report.step_time_s;
  // The estimate keeps its usual margins (a pipeline paced by its slowest stage throughout, the
  // tensor-parallel collectives exposed): 0.96 s against 0.81 s simulated, where the uniform view
  // said 1.31 s.
  EXPECT_NEAR(e.step_time_s / simulated, 1.0, 0.20) << e.step_time_s << " s estimated, " << simulated << " s simulated";
  EXPECT_LT(std::abs(e.step_time_s - simulated), 0.5 * std::abs(uniform.step_time_s - simulated));
  EXPECT_TRUE(e.fits);
  ASSERT_EQ(e.stage_memory_capacity.size(), 3u);  // each stage against its own group's devices
  EXPECT_DOUBLE_EQ(e.stage_memory_capacity[0], on_h100.device.usable_memory());
  EXPECT_DOUBLE_EQ(e.stage_memory_capacity[1], fleet.groups[1].device.usable_memory());
  EXPECT_DOUBLE_EQ(e.mfu, e.model_flops / (e.step_time_s * hardware::total_peak(fleet, plan.precision)));
}

// A plan on a fleet is lowered once, each stage's compute and optimizer durations taken from
// the analysis on its own group's device (LoweringOptions::stage_timing): the same durations as
// lowering the whole plan on that device, everything else as the fleet's own lowering.
TEST(FleetLowering, EachStageTimedByItsGroupsDevice) {
  Graph graph = fleet_llama(48);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const Plan plan = ten_four_two(graph, fleet);
  ASSERT_EQ(plan_stage_groups(plan, fleet), (std::vector<int>{0, 1, 1}));
  const hardware::Cluster on_h100 = hardware::fleet_on_group_device(fleet, 0);
  const PlanAnalysis fleet_analysis = analyze_plan(graph, fleet, plan), h100_analysis = analyze_plan(graph, on_h100, plan);
  LoweringOptions plain;
  plain.graph = &graph;
  LoweringOptions timed = plain;
  timed.stage_timing = {&h100_analysis, nullptr, nullptr};
  const sim::Program base = lower_plan(fleet_analysis, plan, fleet, plan_mesh(plan, fleet), plain);
  const sim::Program on_device = lower_plan(h100_analysis, plan, on_h100, plan_mesh(plan, on_h100), plain);
  const sim::Program lowered = lower_plan(fleet_analysis, plan, fleet, plan_mesh(plan, fleet), timed);
  ASSERT_EQ(lowered.rank_classes.size(), 3u);
  int faster_on_h100 = 0;
  for (std::size_t c = 0; c < 3; ++c) {
    const auto& tasks = lowered.rank_classes[c].tasks;
    ASSERT_EQ(tasks.size(), base.rank_classes[c].tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const bool timed_kind = tasks[i].kind == sim::TaskKind::compute || tasks[i].kind == sim::TaskKind::optimizer;
      const sim::Task& expected = c == 0 && timed_kind ? on_device.rank_classes[c].tasks[i] : base.rank_classes[c].tasks[i];
      EXPECT_EQ(tasks[i].id, base.rank_classes[c].tasks[i].id);
      EXPECT_EQ(tasks[i].duration_s, expected.duration_s) << "class " << c << " task " << tasks[i].id;
      faster_on_h100 += c == 0 && timed_kind && tasks[i].duration_s < base.rank_classes[c].tasks[i].duration_s;
    }
  }
  EXPECT_GT(faster_on_h100, 0);  // the H100 stage's kernels are shorter than the A100 view's
  // simulate_plan lowers with these timings (each stage lies in one group: both A100 stages on
  // the A100's analysis, which is the fleet view's own device).
  const sim::Program simulated = simulate_plan(graph, plan, fleet).program;
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t i = 0; i < lowered.rank_classes[c].tasks.size(); ++i)
      EXPECT_EQ(simulated.rank_classes[c].tasks.at(i).duration_s, lowered.rank_classes[c].tasks[i].duration_s) << c << " " << i;
}

// LLaMA-2 7B (32 layers) at 4k tokens, batch 64, on one DGX H100 beside two nodes of 8 L4.
Graph llama_at_4k() {
  models::Overrides o;
  o.layers = 32;
  o.seq = 4096;
  return symtensor::testing::zoo_graph("llama2-7b", o, 64, 4096);
}

hardware::Cluster h100_l4_fleet() {
  return hardware::with_software(hardware::load_cluster("dgx-h100x1+pcie-l4x2"), hardware::Software{});
}

// LLaMA-2 7B (32 layers, 4k tokens) on one H100 node beside two L4 nodes (24 GB), tp=1 in
// three stages of 16, 8 and 8 layers: the middle stage, an L4 one holding two micro-batches in
// flight, is 0.2 GB over its memory without recomputation; the H100 stage has 28 GB to spare.
Plan h100_l4_pipeline(Graph& graph, const hardware::Cluster& fleet) {
  MegatronKnobs k;
  k.tp = 1, k.pp = 3, k.mb = 1, k.first = 11, k.last = 11, k.distopt = true, k.recompute = RecomputePolicy::full;
  return restage_layers(graph, make_megatron_plan(graph, fleet, k, {}), {16, 8, 8});
}

// Full recomputation of only as many layers as each stage's own devices need
// (recompute_fewest_layers under the fleet's estimate): each stage's count is the least that
// fits its group's memory (one fewer does not), so the stages differ, and the step lies between
// recomputing nothing (which does not fit) and recomputing every layer.
TEST(FleetSearch, StagesRecomputeOnlyWhatTheirOwnDevicesMemoryNeeds) {
  Graph graph = llama_at_4k();
  const hardware::Cluster fleet = h100_l4_fleet();
  const NumericGraph ng(graph);
  const Plan all = h100_l4_pipeline(graph, fleet);
  ASSERT_EQ(plan_stage_groups(all, fleet), (std::vector<int>{0, 1, 1}));
  auto estimate = [&](const Plan& p) { return fleet_step_estimate(graph, fleet, p, ng); };
  Plan fewer = all;
  const Evaluation e = recompute_fewest_layers(fewer, ng, [&](const Plan& p) {
    Evaluation x;
    x.estimate = estimate(p);
    x.valid = true;
    return x;
  });
  ASSERT_TRUE(e.valid && e.estimate.fits);
  const std::vector<int> layers{16, 8, 8};
  ASSERT_EQ(fewer.recompute_layers.size(), 3u);
  for (std::size_t s = 0; s < 3; ++s) {
    const int count = fewer.recompute_layers[s];
    EXPECT_LE(count, layers[s]);
    if (count == 0) continue;
    Plan one_fewer = fewer;
    --one_fewer.recompute_layers[s];
    const StepEstimate over = estimate(one_fewer);
    EXPECT_GT(over.stage_peak_memory[s], over.stage_memory_capacity[s]) << "stage " << s << " fits with " << count - 1;
  }
  EXPECT_EQ(fewer.recompute_layers[0], 0);  // 80 GB of H100: nothing to recompute
  EXPECT_GT(fewer.recompute_layers[1], 0);  // 24 GB of L4 with two micro-batches in flight
  Plan none = all;
  none.recompute = RecomputePolicy::none;
  const StepEstimate with_none = estimate(none), with_all = estimate(all);
  EXPECT_FALSE(with_none.fits);
  EXPECT_TRUE(with_all.fits);
  EXPECT_LT(e.estimate.step_time_s, 0.9 * with_all.step_time_s);
  EXPECT_GE(e.estimate.step_time_s, with_none.step_time_s);
  EXPECT_EQ(describe_recompute(fewer), "full (layers 0/" + std::to_string(fewer.recompute_layers[1]) + "/" +
                                           std::to_string(fewer.recompute_layers[2]) + ")");
}

// Without recomputation the same pipeline does not fit the L4s; sharding the model states of
// the stages over their memory further (ZeRO per stage, shard_stages_as_needed) makes it fit
// with the H100 stage left at the distributed optimizer's ZeRO-1, and each raised stage needs
// its ZeRO stage (one lower does not fit its L4s).
TEST(FleetSearch, StagesShardOnlyWhatTheirOwnDevicesMemoryNeeds) {
  Graph graph = llama_at_4k();
  const hardware::Cluster fleet = h100_l4_fleet();
  const NumericGraph ng(graph);
  Plan plan = h100_l4_pipeline(graph, fleet);
  plan.recompute = RecomputePolicy::none;
  auto evaluate = [&](const Plan& p) {
    Evaluation x;
    x.estimate = fleet_step_estimate(graph, fleet, p, ng);
    x.valid = true;
    return x;
  };
  const Evaluation none = evaluate(plan);
  ASSERT_FALSE(none.estimate.fits);
  const Evaluation e = shard_stages_as_needed(plan, none, evaluate);
  ASSERT_TRUE(e.estimate.fits) << describe_zero(plan);
  ASSERT_EQ(plan.stage_zero_stages.size(), 3u);
  EXPECT_EQ(plan.effective_zero_stage_of(0), 1);  // 80 GB of H100
  EXPECT_GT(plan.effective_zero_stage_of(1), 1);  // 24 GB of L4 with two micro-batches in flight
  for (int s = 1; s < 3; ++s) {
    if (plan.effective_zero_stage_of(s) == 1) continue;
    Plan lower = plan;
    lower.stage_zero_stages[s] = plan.effective_zero_stage_of(s) - 1;
    const StepEstimate over = evaluate(lower).estimate;
    EXPECT_GT(over.stage_peak_memory[s], over.stage_memory_capacity[s]) << "stage " << s;
  }
  // The simulation plays each stage's own sharding, and it fits there too.
  const PlanSimulation sim = simulate_plan(graph, plan, fleet);
  EXPECT_TRUE(sim.report.fits);
}

}  // namespace
}  // namespace symtensor::compiler
