// The simulator on a mixed fleet (#32): each rank runs at its own group's device and links.
// Two hand-made groups with round numbers: "fast" (bf16 200 TFLOP/s, 80 GB, NIC 50 GB/s) and
// "slow" (100 TFLOP/s, 40 GB, NIC 25 GB/s); one node of 8 GPUs each.
#include <gtest/gtest.h>

#include "simulator/engine/simulator.h"
#include "simulator/program/task_factory.h"
#include "simulator/program/validate.h"
#include "sim_test_util.h"

namespace symtensor::sim {
namespace {

hardware::Cluster fleet_of_two(std::vector<hardware::GroupLink> links = {}) {
  hardware::Cluster fast = testing::test_cluster(1), slow = testing::test_cluster(1);
  fast.name = "fast", slow.name = "slow";
  fast.device.peak_flops[hardware::Precision::bf16] = 200e12;
  fast.levels[1].bandwidth = 50e9;
  slow.device.memory_bytes = 40e9;
  return hardware::make_fleet("fast+slow", {fast, slow}, links);
}

// Stage "f" on the fast node computes 10 GFLOP then sends 1 GB to stage "s" on the slow node,
// which receives it and computes 10 GFLOP.
Program two_stage_program() {
  Program p;
  p.mesh = {{"node", 2, 1, 8}, {"gpu", 8, 0, 1}};
  p.rank_classes.push_back(testing::make_class(
      "f", testing::iota_ranks(8), {compute_task("c", 10e9, 0, hardware::Precision::bf16), send_task("x", "p2p", "s", 1e9, {"c"})}));
  p.rank_classes.push_back(testing::make_class(
      "s", testing::iota_ranks(8, 8), {recv_task("x", "p2p", "f", 1e9), compute_task("c", 10e9, 0, hardware::Precision::bf16, {"x"})}));
  validate_program(p);
  return p;
}

TEST(FleetEngine, EachStageRunsAtItsGroupsPace) {
  // 10 GFLOP at 0.8 efficiency: fast 62.5 µs + 5 µs launch, slow 125 µs + 5 µs. The send
  // crosses the groups at the slower NIC (25 GB/s): 10 µs + 40 ms.
  const hardware::Cluster fleet = fleet_of_two();
  for (SimMode mode : {SimMode::symmetric, SimMode::full}) {
    const SimResult r = simulate(two_stage_program(), fleet, {mode});
    EXPECT_NEAR(r.classes[0].compute_busy_s, 67.5e-6, 1e-12);
    EXPECT_NEAR(r.classes[1].compute_busy_s, 130e-6, 1e-12);
    EXPECT_NEAR(r.step_time_s, 67.5e-6 + 10e-6 + 1e9 / 25e9 + 130e-6, 1e-9);
  }
}

TEST(FleetEngine, StatedLinkBoundsTheCrossing) {
  hardware::GroupLink link;
  link.a = 0, link.b = 1, link.bandwidth = 10e9, link.latency_s = 10e-6;
  const SimResult r = simulate(two_stage_program(), fleet_of_two({link}), {SimMode::symmetric});
  EXPECT_NEAR(r.step_time_s, 67.5e-6 + 10e-6 + 1e9 / 10e9 + 130e-6, 1e-9);
}

TEST(FleetEngine, ClassAcrossGroupsPlaysAtTheSlowestAndFitsTheLeastMemory) {
  Program p;
  p.mesh = {{"node", 2, 1, 8}, {"gpu", 8, 0, 1}};
  RankClass all = testing::make_class("all", testing::iota_ranks(16), {compute_task("c", 10e9, 0, hardware::Precision::bf16)});
  all.static_memory.params = 50e9;  // fits the fast GPUs' 80 GB, not the slow ones' 40 GB
  p.rank_classes.push_back(all);
  validate_program(p);
  const SimResult r = simulate(p, fleet_of_two(), {SimMode::symmetric});
  EXPECT_NEAR(r.step_time_s, 130e-6, 1e-12);
  EXPECT_TRUE(r.classes[0].out_of_memory);
  EXPECT_NEAR(r.classes[0].memory_overage_bytes, 10e9, 1);

  p.rank_classes[0].ranks = testing::iota_ranks(8);  // the fast node alone
  p.mesh = {{"node", 1, 1, 8}, {"gpu", 8, 0, 1}};
  const SimResult fast = simulate(p, fleet_of_two(), {SimMode::symmetric});
  EXPECT_NEAR(fast.step_time_s, 67.5e-6, 1e-12);
  EXPECT_FALSE(fast.classes[0].out_of_memory);
}

}  // namespace
}  // namespace symtensor::sim
