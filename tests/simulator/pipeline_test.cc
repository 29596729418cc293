#include <gtest/gtest.h>

#include "simulator/engine/simulator.h"
#include "simulator/program/synthetic.h"
#include "sim_test_util.h"

namespace symtensor::sim {
namespace {

// p = 4 stages, one GPU each on 4 nodes; forward 1 s and backward 2 s per micro-batch
// (one layer, halves of 0.5 s / 1 s), free pipeline transfers (0 bytes, no latency).
SyntheticConfig toy_pipeline(PipelineSchedule schedule, int micro_batches) {
  SyntheticConfig cfg;
  cfg.pp = 4;
  cfg.gpus_per_node = 1;
  cfg.layers = 4;  // one per stage
  cfg.micro_batches = micro_batches;
  cfg.schedule = schedule;
  cfg.layer_forward_seconds = 1.0;
  cfg.layer_activation_bytes = 1e9;
  cfg.static_memory = {2e9, 2e9, 4e9};
  return cfg;
}

class PipelineBubble : public ::testing::TestWithParam<std::tuple<PipelineSchedule, int>> {};

TEST_P(PipelineBubble, MatchesHandArithmetic) {
  auto [schedule, m] = GetParam();
  const int p = 4;
  const double tf = 1, tb = 2;
  auto cluster = testing::test_cluster(4, 0, 0);
  cluster.levels[0].size = 1;
  SimResult r = simulate(synthetic_pipeline_program(toy_pipeline(schedule, m)), cluster);
  // Both schedules: step = (m + p - 1)(tf + tb); every stage computes m(tf + tb) and idles
  // (p - 1)(tf + tb): bubble fraction (p - 1)/(m + p - 1).
  EXPECT_NEAR(r.step_time_s, (m + p - 1) * (tf + tb), 1e-9);
  for (const auto& c : r.classes) {
    EXPECT_NEAR(c.compute_busy_s, m * (tf + tb), 1e-9) << c.name;
    EXPECT_NEAR(c.bubble_s, (p - 1) * (tf + tb), 1e-9) << c.name;
    EXPECT_NEAR(c.bubble_s / r.step_time_s, double(p - 1) / (m + p - 1), 1e-9);
    EXPECT_NEAR(c.exposed_comm_s, 0, 1e-12);
  }
  // Activations in flight on stage 0: GPipe keeps all m, 1F1B at most p (1 GB each).
  double in_flight = schedule == PipelineSchedule::gpipe ? m : std::min(m, p);
  EXPECT_NEAR(r.classes[0].peak_memory_bytes, 8e9 + in_flight * 1e9, 1);
  // The last stage never holds more than one micro-batch under 1F1B.
  if (schedule == PipelineSchedule::one_f_one_b) {
    EXPECT_NEAR(r.classes[3].peak_memory_bytes, 9e9, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineBubble,
                         ::testing::Combine(::testing::Values(PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b),
                                            ::testing::Values(1, 4, 8)));

}  // namespace
}  // namespace symtensor::sim
