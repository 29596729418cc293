// Batch shares by group speed on a mixed fleet (#32, Plan::group_micro_batches): each group's
// data-parallel replicas run their own count of micro-batches, the gradient reduction spans
// them all. Checked by hand against one-micro-batch simulations, through plan.yaml, and the
// lean lowering against the text one.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "compiler/lowering/simulate_plan.h"
#include "compiler/plan/batch_shares.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/report/plan_label.h"
#include "compiler/search/fleet_estimate.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/fleet_shares.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/search_test_util.h"
#include "tests/compiler/sim_result_compare.h"

namespace symtensor::compiler {
namespace {

// LLaMA-2 7B's layer, 4 layers at 2k tokens: small enough for tp=1 on either GPU.
Graph shares_llama(double batch) {
  models::Overrides o;
  o.layers = 4;
  o.seq = 2048;
  return symtensor::testing::zoo_graph("llama2-7b", o, batch, 2048);
}

// tp=1, pp=1: 24 replicas (8 H100, 16 A100), micro-batch size 1; a batch of 192 is 8
// micro-batches per replica when the shares are equal.
Plan shares_plan(Graph& graph, const hardware::Cluster& fleet, std::vector<int> counts) {
  MegatronKnobs k;
  k.tp = 1, k.pp = 1, k.mb = 1, k.distopt = true, k.recompute = RecomputePolicy::selective;
  Plan plan = make_megatron_plan(graph, fleet, k, {});
  plan.group_micro_batches = std::move(counts);
  return plan;
}

// The class of group `profile` in a simulation's report.
const StageReport& shares_class(const SimulationReport& r, const std::string& profile) {
  const auto it = std::find_if(r.stages.begin(), r.stages.end(), [&](const StageReport& s) { return s.name == "stage0." + profile; });
  if (it == r.stages.end()) throw std::runtime_error("no class for " + profile);
  return *it;
}

TEST(FleetBatchShares, StepIsTheSlowestGroupsMicroBatchesPlusTheReduction) {
  Graph graph = shares_llama(192);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  // One micro-batch per replica (a batch of 24 samples): each group's compute per micro-batch
  // and the step's tail after it (the exposed gradient reduction across the groups, the optimizer).
  Plan one = shares_plan(graph, fleet, {1, 1});
  one.global_batch = 24, one.micro_batches = 1;
  const SimulationReport r1 = simulate_plan(graph, one, fleet).report;
  const double h100 = shares_class(r1, "dgx-h100").compute_s, a100 = shares_class(r1, "dgx-a100").compute_s;
  ASSERT_GT(h100, 0);
  EXPECT_GT(a100, 2 * h100);  // an A100 takes over twice an H100's time per micro-batch
  // Each class names the group its ranks lie in (what the search's rebalancing reads), in the
  // lean simulation too.
  EXPECT_EQ(shares_class(r1, "dgx-h100").group, 0);
  EXPECT_EQ(shares_class(r1, "dgx-a100").group, 1);
  const SimulationReport lean = simulate_plan_lean(graph, one, fleet).report;
  EXPECT_EQ(shares_class(lean, "dgx-h100").group, 0);
  EXPECT_EQ(shares_class(lean, "dgx-a100").group, 1);
  // By hand: the step of shares (m_h, m_a) is the slowest group's m_g micro-batches, then the
  // tail, which the one-micro-batch step shows after its slowest group's micro-batch:
  // max_g m_g x t_g + (step(1, 1) - max_g t_g).
  const double tail = r1.step_time_s - std::max(h100, a100);
  EXPECT_GT(tail, 0);
  for (const std::vector<int>& counts : {std::vector<int>{8, 8}, {12, 6}, {16, 4}}) {
    const Plan plan = shares_plan(graph, fleet, counts);
    ASSERT_EQ(batch_shares_problem(plan, fleet), "");
    const SimulationReport r = simulate_plan(graph, plan, fleet).report;
    const double by_hand = std::max(counts[0] * h100, counts[1] * a100) + tail;
    // Within 3% where the A100s finish last, as in the one-micro-batch step; where the H100s
    // do (16/4), within 7%: the reduction then hides behind an H100's shorter last backward,
    // so more of it is exposed than the A100s' tail shows (measured: 6% longer).
    const double tolerance = counts[0] * h100 < counts[1] * a100 ? 0.03 : 0.07;
    EXPECT_NEAR(r.step_time_s, by_hand, tolerance * by_hand) << counts[0] << "/" << counts[1];
    EXPECT_GE(r.step_time_s, std::max(counts[0] * h100, counts[1] * a100));
    // Each group's class computed its own count of micro-batches.
    EXPECT_NEAR(shares_class(r, "dgx-h100").compute_s, counts[0] * h100, 1e-6 * counts[0] * h100);
    EXPECT_NEAR(shares_class(r, "dgx-a100").compute_s, counts[1] * a100, 1e-6 * counts[1] * a100);
    // Every class waits for the reduction across the groups: they end together.
    EXPECT_DOUBLE_EQ(shares_class(r, "dgx-h100").finish_s, shares_class(r, "dgx-a100").finish_s);
  }
  // The faster group taking more micro-batches shortens the step against equal shares.
  const double equal = simulate_plan(graph, shares_plan(graph, fleet, {8, 8}), fleet).report.step_time_s;
  const double by_speed = simulate_plan(graph, shares_plan(graph, fleet, {12, 6}), fleet).report.step_time_s;
  EXPECT_LT(by_speed, 0.9 * equal);
  // The analytic estimate prices the shares too: the slowest group's, within 15% of the simulation.
  const StepEstimate e = fleet_step_estimate(graph, fleet, shares_plan(graph, fleet, {12, 6}));
  EXPECT_TRUE(e.fits);
  EXPECT_NEAR(e.step_time_s, by_speed, 0.15 * by_speed);
  EXPECT_LT(e.step_time_s, fleet_step_estimate(graph, fleet, shares_plan(graph, fleet, {8, 8})).step_time_s);
}

TEST(FleetBatchShares, ShareCountsBalanceTheGroupsTimes) {
  // 8 replicas at 1 s a micro-batch beside 16 at 3 s, 192 micro-batches: equal times at
  // 14.4 and 4.8; whole counts with 8 m_h + 16 m_a = 192: (14, 5) takes max(14, 15) = 15 s,
  // (16, 4) 16 s, (12, 6) 18 s.
  EXPECT_EQ(share_counts({8, 16}, {1, 3}, 192), (std::vector<int>{14, 5}));
  EXPECT_EQ(share_counts({1, 1}, {1, 1}, 10), (std::vector<int>{5, 5}));
  EXPECT_EQ(share_counts({2, 2}, {1, 1}, 7), std::vector<int>{});  // no whole counts add up
  EXPECT_EQ(share_counts({4, 4, 8}, {1, 2, 4}, 64), (std::vector<int>{8, 4, 2}));
}

TEST(FleetBatchShares, PlanYamlRoundTripAndBadValues) {
  Graph graph = shares_llama(192);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const Plan plan = shares_plan(graph, fleet, {12, 6});
  const std::string text = plan_to_yaml(plan, graph, fleet);
  const std::string shares = "group_micro_batches: [12, 6]";
  ASSERT_NE(text.find(shares), std::string::npos);
  EXPECT_EQ(plan_from_yaml(text, "plan.yaml", graph, fleet).group_micro_batches, (std::vector<int>{12, 6}));
  // Without shares, the key is not written.
  EXPECT_EQ(plan_to_yaml(shares_plan(graph, fleet, {}), graph, fleet).find("group_micro_batches:"), std::string::npos);
  // The label every report and `simulate` print names the counts, not their average.
  const std::string label = plan_label_or("symtensor", graph, plan, fleet, "");
  EXPECT_NE(label.find(", 12 / 6 micro-batches per replica by group of "), std::string::npos) << label;
  EXPECT_EQ(plan_label_or("symtensor", graph, shares_plan(graph, fleet, {}), fleet, "").find("by group"), std::string::npos);
  for (const std::string bad : {"group_micro_batches: [12]", "group_micro_batches: [12, 0]", "group_micro_batches: [12, 5]",
                                "group_micro_batches: [12, x]", "group_micro_batches: 12"}) {
    std::string edited = text;
    edited.replace(edited.find(shares), shares.size(), bad);
    try {
      plan_from_yaml(edited, "plan.yaml", graph, fleet);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("key 'batch.group_micro_batches'"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  // A cluster of one type has no groups to share over.
  const hardware::Cluster h100 = hardware::load_cluster("dgx-h100x3");
  EXPECT_NE(batch_shares_problem(plan, h100), "");
}

TEST(FleetBatchShares, LeanLoweringAgreesWithTheTextProgram) {
  Graph graph = shares_llama(192);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const Plan plan = shares_plan(graph, fleet, {16, 4});
  const PlanSimulation text = simulate_plan(graph, plan, fleet);
  const PlanSimulation lean = simulate_plan_lean(graph, plan, fleet);
  symtensor::testing::expect_identical_results(text.result, lean.result, "batch shares 16/4");
  ASSERT_EQ(text.result.classes.size(), 2u);
}

TEST(FleetBatchShares, FleetSearchPicksSharesWhereTheyWinAndExportsTheNearestHomogeneousPlan) {
  Graph graph = shares_llama(192);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const FleetSearchResult pipelines = fleet_search(graph, fleet, {}, false);
  const FleetSearchResult r = fleet_search(graph, fleet, {});
  ASSERT_TRUE(r.plan.fits);
  EXPECT_LE(r.plan.step_time_s, pipelines.plan.step_time_s);  // never slower than without the shape
  ASSERT_TRUE(r.batch_shares) << describe_fleet_result(r, fleet);
  EXPECT_FALSE(r.heterogeneous);
  const std::vector<int>& counts = r.plan.plan.group_micro_batches;
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[0], counts[1]);  // the H100s' replicas take more micro-batches
  EXPECT_EQ(batch_shares_problem(r.plan.plan, fleet), "");
  // The step is the plan's simulation; the description states the shares.
  EXPECT_NEAR(simulate_plan(graph, r.plan.plan, fleet).report.step_time_s, r.plan.step_time_s, 1e-12);
  const std::string text = describe_fleet_result(r, fleet);
  EXPECT_NE(text.find("batch shares: dgx-h100: "), std::string::npos) << text;
  EXPECT_NE(text.find(" samples per replica, dgx-a100: "), std::string::npos) << text;
  // Megatron-LM gives every replica the same share: the export writes Megatron-best and says why.
  const ExportResult e = export_fleet_plan(ExportTarget::megatron, graph, fleet, r);
  ASSERT_FALSE(e.not_expressible.empty());
  EXPECT_NE(e.not_expressible.front().find("batch shares by GPU speed"), std::string::npos) << e.not_expressible.front();
  EXPECT_NEAR(e.original_step_s, r.plan.step_time_s, 1e-12);
  EXPECT_NEAR(e.nearest_step_s, r.megatron.best().step_time_s, 1e-12);
}

// Micro-batches of 4 samples: LLaMA-2 7B at 16 layers, batch 96 on 8 H100 + 16 A100. At 1-2
// samples the H100s run many small micro-batches; at 4 (tp=2: 12 replicas, 4 H100 replicas of
// 4 micro-batches, 8 A100 replicas of 1, 4:1 by speed) each kernel is larger. The candidates
// hold such a grid; the analytic estimate ranks a 2-sample grid first (0.67 s against 0.72 s),
// the simulation the 4-sample one (0.733 s against 0.748 s), and the search, which simulates
// the leading candidates, takes it.
TEST(FleetBatchShares, LargerMicroBatchesAreSearched) {
  models::Overrides o;
  o.layers = 16, o.seq = 2048;
  Graph graph = symtensor::testing::zoo_graph("llama2-7b", o, 96, 2048);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const NumericGraph ng(graph);
  const std::vector<SharesCandidate> candidates =
      batch_share_candidates(graph, fleet, {}, ng, std::numeric_limits<double>::infinity());
  int larger = 0;
  for (const SharesCandidate& c : candidates) {
    EXPECT_EQ(std::fmod(96.0, c.knobs.dp * c.knobs.mb), 0) << to_string(c.knobs);
    larger += c.knobs.mb > 2;
    // Each grid's layout is built once for every size and recomputation policy: the plan is
    // Megatron's at the candidate's own knobs.
    const Plan made = make_megatron_plan(graph, fleet, c.knobs, StrategyOptions{});
    EXPECT_TRUE(made.node_cuts == c.plan.node_cuts) << to_string(c.knobs);
    EXPECT_EQ(made.stage_of_node, c.plan.stage_of_node) << to_string(c.knobs);
    EXPECT_EQ(made.micro_batches, c.plan.micro_batches) << to_string(c.knobs);
    EXPECT_EQ(made.recompute, c.plan.recompute) << to_string(c.knobs);
    EXPECT_EQ(c.plan.cuts_stamp, 0u) << to_string(c.knobs);
  }
  EXPECT_GT(larger, 0) << "no candidate of more than 2 samples";
  const FleetSearchResult r = fleet_search(graph, fleet, {});
  ASSERT_TRUE(r.batch_shares) << describe_fleet_result(r, fleet);
  EXPECT_EQ(r.plan.plan.cuts_stamp, 0u) << "a search returns its plan unstamped (Plan::cuts_stamp)";
  // The label names the grid: "...; tp=2 pp=1 dp=12 mb=4 recompute=none)".
  const std::size_t at = r.plan.label.find(" mb=");
  ASSERT_NE(at, std::string::npos) << r.plan.label;
  EXPECT_GT(std::stoi(r.plan.label.substr(at + 4)), 2) << r.plan.label;
}

TEST(FleetBatchShares, SharesOnSomeGroupsAreDescribedPerGroupOfTheFleet) {
  // A plan on the H100s and A100s of a three-type fleet (the L4s idle): each group's line says
  // its count, the unused group says so, and the shares name the plan's groups.
  Graph graph = shares_llama(192);
  const hardware::Cluster three =
      hardware::with_software(hardware::load_cluster("dgx-h100x1+dgx-a100x2+pcie-l4x1"), hardware::Software{});
  const hardware::Cluster two = hardware::sub_fleet(three, {0, 1});
  FleetSearchResult r;
  r.plan.plan = shares_plan(graph, two, {12, 6});
  r.plan.found = r.plan.fits = true;
  r.plan.step_time_s = 1;
  r.batch_shares = true;
  r.shares_dp = 24;  // tp=1: 8 + 16 replicas
  r.share_groups = {0, 1};
  ASSERT_EQ(cluster_of_plan(three, r.plan.plan).name, two.name);
  const std::string text = describe_fleet_result(r, three);
  EXPECT_NE(text.find("x8 (1 nodes), pace 729 TFLOP/s per GPU: 12 micro-batch(es) per replica"), std::string::npos) << text;
  EXPECT_NE(text.find(": 6 micro-batch(es) per replica"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 nodes), pace 85 TFLOP/s per GPU: not used"), std::string::npos) << text;
  // 192 samples in micro-batches of 192 / 8 / 24 = 1: an H100 replica takes 12, an A100 one 6.
  EXPECT_NE(text.find("batch shares: dgx-h100: 12 samples per replica, dgx-a100: 6"), std::string::npos) << text;

  // Its plan.yaml reads back against the whole fleet (simulate --cluster as compile was given
  // it), on the part it names; a part the fleet does not have is refused naming the mesh.
  const std::string yaml = plan_to_yaml(r.plan.plan, graph, two);
  const Plan back = plan_from_yaml(yaml, "plan.yaml", graph, three);
  EXPECT_EQ(back.cluster, two.name);
  EXPECT_EQ(back.group_micro_batches, (std::vector<int>{12, 6}));
  EXPECT_EQ(back.mesh_factors, r.plan.plan.mesh_factors);
  EXPECT_FALSE(hardware::fleet_part_named(three, "dgx-h100x1+pcie-l4x2").has_value());
  EXPECT_EQ(hardware::fleet_part_named(three, "dgx-a100x2")->num_devices(), 16);
  EXPECT_FALSE(hardware::fleet_part_named(three, three.name).has_value());
}

TEST(FleetBatchShares, PerMicroBatchCollectivesAcrossGroupsAreRefused) {
  // ZeRO-3 gathers the weights over the data-parallel group at every micro-batch: with
  // different counts per group, the groups could never meet.
  Graph graph = shares_llama(192);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  MegatronKnobs k;
  k.tp = 1, k.pp = 1, k.mb = 1, k.fsdp = 3;
  Plan plan = make_megatron_plan(graph, fleet, k, {});
  plan.group_micro_batches = {12, 6};
  EXPECT_THROW(simulate_plan_lean(graph, plan, fleet), std::runtime_error);
}

// A vision-language model's batch shares: CLIP expands its class token to the batch that a
// Shape reads off the patch embeddings. Propagation once priced that read as a gather of the
// whole tensor and kept the patch convolution whole on every rank; its gradient was then
// all-gathered every micro-batch, which groups running different counts cannot share, and the
// lowering refused the plan. A Shape reads dims only: the convolution is cut with the batch.
TEST(FleetBatchShares, AVisionLanguageModelsPatchConvolutionIsCutWithTheBatch) {
  models::Overrides o;
  o.image_tiles = 1;
  o.layers = 2;
  Graph graph = symtensor::testing::zoo_graph("llava-1.5-7b", o, 48, 1024);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  Plan plan = shares_plan(graph, fleet, {4, 1});  // 8 x 4 + 16 x 1 = 24 replicas x 2
  ASSERT_EQ(plan.micro_batches, 2);
  const hardware::DeviceMesh mesh = plan_mesh(plan, fleet);
  int convolutions = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes().size()); ++n) {
    if (graph.node(n).op_type != "Conv") continue;
    ++convolutions;
    EXPECT_EQ(cut_ways(plan.node_cuts[n], mesh), 24) << graph.node(n).name;  // one image a replica
  }
  EXPECT_EQ(convolutions, 1);
  const SimulationReport r = simulate_plan_lean(graph, plan, fleet).report;
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_GT(shares_class(r, "dgx-h100").compute_s, 0);  // four micro-batches on each H100
  EXPECT_GT(shares_class(r, "dgx-a100").compute_s, 0);  // one on each A100
}

}  // namespace
}  // namespace symtensor::compiler
