#include <gtest/gtest.h>

#include "simulator/engine/simulator.h"
#include "simulator/program/synthetic.h"
#include "simulator/program/task_factory.h"
#include "sim_test_util.h"

namespace symtensor::sim {
namespace {

SyntheticConfig transformer(int tp, int pp, int dp) {
  SyntheticConfig cfg;
  cfg.tp = tp;
  cfg.pp = pp;
  cfg.dp = dp;
  cfg.micro_batches = 8;
  cfg.layers = 8;
  cfg.layer_forward_flops = 2e12;
  cfg.tp_allreduce_bytes = 32e6;
  cfg.p2p_bytes = 16e6;
  cfg.layer_grad_bytes = 200e6;
  cfg.layer_activation_bytes = 0.5e9;
  cfg.optimizer_seconds = 2e-3;
  cfg.static_memory = {4e9, 4e9, 16e9};
  return cfg;
}

void expect_symmetric_equals_full(const SyntheticConfig& cfg, int nodes) {
  Program p = synthetic_pipeline_program(cfg);
  auto cluster = testing::test_cluster(nodes);
  SimResult sym = simulate(p, cluster, {SimMode::symmetric});
  SimResult full = simulate(p, cluster, {SimMode::full});
  EXPECT_EQ(sym.simulated_ranks, cfg.pp);
  EXPECT_EQ(full.simulated_ranks, cfg.tp * cfg.pp * cfg.dp);
  EXPECT_GT(sym.step_time_s, 0);
  EXPECT_NEAR(sym.step_time_s, full.step_time_s, 0.01 * full.step_time_s);
  ASSERT_EQ(sym.classes.size(), full.classes.size());
  for (size_t c = 0; c < sym.classes.size(); ++c) {
    const auto& s = sym.classes[c];
    const auto& f = full.classes[c];
    EXPECT_NEAR(s.compute_busy_s, f.compute_busy_s, 0.01 * f.compute_busy_s) << s.name;
    EXPECT_NEAR(s.exposed_comm_s, f.exposed_comm_s, 0.01 * full.step_time_s) << s.name;
    EXPECT_NEAR(s.bubble_s, f.bubble_s, 0.01 * full.step_time_s) << s.name;
    EXPECT_DOUBLE_EQ(s.peak_memory_bytes, f.peak_memory_bytes) << s.name;
  }
}

TEST(Symmetry, SixteenGpusTensorPipelineData) {
  // tp 4 and dp 2 fill a node; 2 pipeline stages on 2 nodes.
  expect_symmetric_equals_full(transformer(4, 2, 2), 2);
}

TEST(Symmetry, SixtyFourGpusTensorPipelineData) {
  // tp 8 per node; 4 stages x 2 data-parallel replicas across 8 nodes.
  expect_symmetric_equals_full(transformer(8, 4, 2), 8);
}

TEST(Symmetry, SixtyFourGpusDataParallelAcrossLevels) {
  // tp 2, dp 8 split 4 in a node x 2 across nodes, pp 4 across nodes.
  expect_symmetric_equals_full(transformer(2, 4, 8), 8);
}

TEST(Symmetry, CollectiveAcrossRankClasses) {
  // A tied-embedding style all-reduce over the pipeline axis: its group holds one rank of
  // every stage, so it waits for all classes and its ring crosses class boundaries.
  Program p = synthetic_pipeline_program(transformer(8, 4, 2));
  for (auto& rc : p.rank_classes)
    rc.tasks.push_back(collective_task("embedding", "comm_dp", hardware::Collective::all_reduce, 4e8, {"pp"},
                                       {"optimizer"}, hardware::CollectiveAlgorithm::ring));
  auto cluster = testing::test_cluster(8);
  SimResult sym = simulate(p, cluster, {SimMode::symmetric});
  SimResult full = simulate(p, cluster, {SimMode::full});
  EXPECT_NEAR(sym.step_time_s, full.step_time_s, 0.01 * full.step_time_s);
  // It ends together on every stage: the last stage's optimizer ends earlier, so it waits.
  for (const auto& c : sym.classes) EXPECT_DOUBLE_EQ(c.finish_s, sym.step_time_s) << c.name;
}

TEST(Symmetry, AsymmetricProgramIsRefusedInSymmetricMode) {
  // Rank 0 and rank 8 form class "a" but rank 0's node group {0..7} is all "a" while
  // rank 8's holds "a" and "b": symmetric mode must refuse.
  Program p;
  p.mesh = {{"node", 2, 1, 8}, {"gpu", 8, 0, 1}};
  std::vector<Task> t{collective_task("x", "comm", hardware::Collective::all_reduce, 1e6, {"gpu"})};
  std::vector<int> a = testing::iota_ranks(9), b = testing::iota_ranks(7, 9);
  p.rank_classes.push_back(testing::make_class("a", a, t));
  p.rank_classes.push_back(testing::make_class("b", b, t));
  EXPECT_THROW(simulate(p, testing::test_cluster(2)), std::runtime_error);
  EXPECT_NO_THROW(simulate(p, testing::test_cluster(2), {SimMode::full}));
}

}  // namespace
}  // namespace symtensor::sim
