// What-if after a failure (#32): SymTensor's plan on the GPUs left beside Megatron-best on its
// largest valid grid, the GPU counts checked by hand, and the sweep as nodes are lost.
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "compiler/report/failure_report.h"
#include "compiler/search/failure_plans.h"
#include "hardware/cluster_loss.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

// LLaMA-2 7B's layer (32 heads) at 8 layers (or fewer), 2k tokens: a fraction of a second a search.
Graph failure_llama(double batch, int layers = 8) {
  models::Overrides o;
  o.layers = layers;
  o.seq = 2048;
  return symtensor::testing::zoo_graph("llama2-7b", o, batch, 2048);
}

hardware::Cluster four_h100_nodes() {
  return hardware::with_software(hardware::load_cluster("dgx-h100x4"), hardware::Software{});
}

// Whether Megatron-LM splits `layers` over `pp` stages as the search prices them: evenly, with
// the embedding and the loss counted as layers, or with the middle stages at ceil or floor of
// layers / pp and the first and last sharing what is left, at least one layer each and no stage
// above ceil(layers / pp).
bool megatron_splits(int layers, int pp) {
  if (layers % pp == 0 || ((layers + 2) % pp == 0 && (layers + 2) / pp >= 2)) return true;
  if (pp < 2 || pp > layers) return false;
  const int most = (layers + pp - 1) / pp;
  for (int middle : {most, layers / pp}) {
    const int rest = layers - middle * (pp - 2);
    if (rest >= 2 && (rest + 1) / 2 <= most) return true;
  }
  return false;
}

// The most GPUs a Megatron grid of whole 8-GPU nodes takes, by hand: tp divides 8 and the 32
// heads, pp splits the layers, cp = 1 (2k tokens are below context parallelism's 4k), and
// dp = GPUs / (tp x pp) divides the batch.
int megatron_grid_by_hand(int nodes, int batch, int layers = 8) {
  for (int n = nodes; n >= 1; --n)
    for (int tp : {1, 2, 4, 8})
      for (int pp = 1; pp <= layers; ++pp) {
        const int gpus = 8 * n;
        if (megatron_splits(layers, pp) && gpus % (tp * pp) == 0 && batch % (gpus / (tp * pp)) == 0) return gpus;
      }
  return 0;
}

TEST(FailurePlans, MegatronTakesEveryGpuLeftWithUnevenStagesWhereEvenOnesLeaveTheFactorThree) {
  // Batch 256 on 3 nodes: 24 = 3 x 8. With pp dividing the 8 layers, tp x pp is a power of two,
  // so dp carries the 3, which 256 lacks. Megatron-LM's uneven stages take it: pp=3 with 3/3/2
  // layers (--decoder-first/last-pipeline-num-layers), every GPU left busy.
  ASSERT_EQ(megatron_grid_by_hand(3, 256), 24);
  Graph graph = failure_llama(256);
  const hardware::Cluster left = hardware::without_nodes(four_h100_nodes(), 1);
  const FailurePlans p = plans_after_loss(graph, left, {});
  EXPECT_EQ(p.gpus_left, 24);
  ASSERT_TRUE(p.megatron.found) << p.megatron.note;
  EXPECT_EQ(p.megatron.gpus_used, 24);
  EXPECT_EQ(p.idle(p.megatron), 0);
  EXPECT_EQ(p.megatron.plan.pipeline_stages(), 3);
  ASSERT_TRUE(p.symtensor.found);
  EXPECT_EQ(p.symtensor.gpus_used, 24) << p.symtensor.note;
  ASSERT_TRUE(p.symtensor.fits);
  ASSERT_TRUE(p.megatron.fits);
  EXPECT_LE(p.symtensor.step_time_s, p.megatron.step_time_s);
  const std::string text = describe_after_loss(p, 1, 2048);
  EXPECT_NE(text.find("Megatron-best: uses 24 of 24 GPUs, idles 0"), std::string::npos) << text;
}

TEST(FailurePlans, MegatronIdlesANodeWhereNoGridTakesThemAll) {
  // 2 layers: no third stage to carry the factor 3, so Megatron relaunches on 2 nodes.
  ASSERT_EQ(megatron_grid_by_hand(3, 256, 2), 16);
  Graph graph = failure_llama(256, 2);
  const FailurePlans p = plans_after_loss(graph, hardware::without_nodes(four_h100_nodes(), 1), {});
  ASSERT_TRUE(p.megatron.found) << p.megatron.note;
  EXPECT_EQ(p.megatron.gpus_used, 16);
  EXPECT_EQ(p.idle(p.megatron), 8);
  EXPECT_NE(p.megatron.note.find("largest valid grid is 2 nodes"), std::string::npos) << p.megatron.note;
  ASSERT_TRUE(p.symtensor.found);
  EXPECT_LE(p.symtensor.step_time_s, p.megatron.step_time_s);
  const std::string text = describe_after_loss(p, 1, 2048);
  EXPECT_NE(text.find("uses 16 of 24 GPUs, idles 8"), std::string::npos) << text;
}

TEST(FailurePlans, MegatronTakesEveryGpuLeftWhereTheBatchDivides) {
  // Batch 96 = 3 x 32: tp=8, pp=1, dp=3 is a valid grid of 24 GPUs.
  ASSERT_EQ(megatron_grid_by_hand(3, 96), 24);
  Graph graph = failure_llama(96);
  const FailurePlans p = plans_after_loss(graph, hardware::without_nodes(four_h100_nodes(), 1), {});
  ASSERT_TRUE(p.megatron.found);
  EXPECT_EQ(p.megatron.gpus_used, 24);
  EXPECT_TRUE(p.megatron.note.empty()) << p.megatron.note;
  EXPECT_EQ(p.symtensor.gpus_used, 24);
  EXPECT_LE(p.symtensor.step_time_s, p.megatron.step_time_s);
}

TEST(FailurePlans, SweepThroughputFallsAsNodesAreLost) {
  Graph graph = failure_llama(256);
  const FailureSweep s = run_failure_sweep(graph, four_h100_nodes(), 0, 2, "", {}, {});
  ASSERT_EQ(s.rows.size(), 3u);
  const int left[] = {32, 24, 16};
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const FailureRow& r = s.rows[i];
    EXPECT_EQ(r.lost, static_cast<int>(i));
    EXPECT_EQ(r.plans.gpus_left, left[i]);
    ASSERT_TRUE(r.plans.symtensor.found && r.plans.megatron.found);
    EXPECT_EQ(r.plans.megatron.gpus_used, megatron_grid_by_hand(4 - static_cast<int>(i), 256));
    EXPECT_EQ(r.plans.symtensor.gpus_used, left[i]);
    // Throughput is the batch's tokens over the step.
    EXPECT_NEAR(plan_throughput(r.plans.symtensor, 2048), 256.0 * 2048 / r.plans.symtensor.step_time_s, 1e-6);
    EXPECT_GE(plan_throughput(r.plans.symtensor, 2048), plan_throughput(r.plans.megatron, 2048) * (1 - 1e-12));
    if (i == 0) continue;
    const FailurePlans& before = s.rows[i - 1].plans;
    EXPECT_LE(plan_throughput(r.plans.symtensor, 2048), plan_throughput(before.symtensor, 2048) * (1 + 1e-12)) << i;
    EXPECT_LE(plan_throughput(r.plans.megatron, 2048), plan_throughput(before.megatron, 2048) * (1 + 1e-12)) << i;
  }
  // Losing 1 node of 4 leaves Megatron 24 GPUs (3 uneven stages), losing 2 leaves 16: slower.
  EXPECT_LT(s.rows[1].plans.megatron.step_time_s, s.rows[2].plans.megatron.step_time_s);
  const auto files = failure_sweep_files(s);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[1].first, "results.csv");
  EXPECT_NE(files[1].second.find("\n1,dgx-h100,24,24,"), std::string::npos) << files[1].second;
}

TEST(FailurePlans, FailNodesRangeIsReadAndABackwardRangeNamesTheFlag) {
  EXPECT_EQ(parse_fail_nodes("0..2"), std::make_pair(0, 2));
  EXPECT_EQ(parse_fail_nodes("1"), std::make_pair(1, 1));
  for (const char* bad : {"3..1", "x", "1..", "-1..2"}) {
    try {
      parse_fail_nodes(bad);
      ADD_FAILURE() << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("--fail-nodes ") + bad + ":", 0), 0u) << e.what();
    }
  }
}

TEST(FailurePlans, AFleetLosingANodeIsPlannedByTheFleetSearch) {
  models::Overrides o;
  o.layers = 16;
  o.seq = 2048;
  Graph graph = symtensor::testing::zoo_graph("llama2-7b", o, 96, 2048);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const hardware::Cluster left = hardware::without_nodes(fleet, 1);  // an A100 node: 8 + 8 GPUs
  ASSERT_EQ(left.num_devices(), 16);
  const FailurePlans p = plans_after_loss(graph, left, {});
  EXPECT_EQ(p.gpus_left, 16);
  ASSERT_TRUE(p.symtensor.found && p.megatron.found) << p.megatron.note;
  EXPECT_TRUE(p.symtensor.simulated);
  EXPECT_LE(p.symtensor.gpus_used, 16);
  EXPECT_LE(p.symtensor.step_time_s, p.megatron.step_time_s);
}

}  // namespace
}  // namespace symtensor::compiler
