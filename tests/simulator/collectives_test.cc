#include <algorithm>
#include <gtest/gtest.h>

#include "simulator/collectives/phases.h"
#include "simulator/engine/simulator.h"
#include "simulator/program/task_factory.h"
#include "simulator/program/validate.h"
#include "sim_test_util.h"

namespace symtensor::sim {
namespace {

using hardware::Collective;
using hardware::CollectiveAlgorithm;
using testing::make_class;
using testing::test_cluster;

// One collective on a group given by `axes`, every rank in one class.
double collective_seconds(const MeshAxes& mesh, Collective kind, double bytes, std::vector<std::string> group,
                          CollectiveAlgorithm algorithm, int nodes, SimMode mode) {
  Program p;
  p.mesh = mesh;
  int n = 1;
  for (const auto& a : mesh) n *= a.size;
  p.rank_classes.push_back(
      make_class("all", testing::iota_ranks(n), {collective_task("c", "comm", kind, bytes, group, {}, algorithm)}));
  validate_program(p);
  return simulate(p, test_cluster(nodes), {mode}).step_time_s;
}

TEST(Collectives, RingAllReduceInOneNodeMatchesAlphaBeta) {
  // p = 8, alpha = 2 µs, B = 100 GB/s, S = 1 GB: 2(p-1)α + 2(p-1)/p·S/B = 28 µs + 17.5 ms.
  double expected = 2 * 7 * 2e-6 + 2.0 * 7 / 8 * 1e9 / 100e9;
  MeshAxes mesh{{"tp", 8, 0, 1}};
  for (SimMode mode : {SimMode::symmetric, SimMode::full})
    EXPECT_NEAR(collective_seconds(mesh, Collective::all_reduce, 1e9, {"tp"}, CollectiveAlgorithm::ring, 1, mode),
                expected, 1e-12);
}

TEST(Collectives, RingAllGatherAndReduceScatter) {
  // (p-1)α + (p-1)/p·S/B
  double expected = 7 * 2e-6 + 7.0 / 8 * 1e9 / 100e9;
  MeshAxes mesh{{"tp", 8, 0, 1}};
  EXPECT_NEAR(collective_seconds(mesh, Collective::all_gather, 1e9, {"tp"}, CollectiveAlgorithm::ring, 1, SimMode::full),
              expected, 1e-12);
  EXPECT_NEAR(collective_seconds(mesh, Collective::reduce_scatter, 1e9, {"tp"}, CollectiveAlgorithm::ring, 1,
                                 SimMode::symmetric),
              expected, 1e-12);
}

TEST(Collectives, RecursiveDoublingAllGather) {
  // ⌈log2 p⌉α + (p-1)/p·S/B with p = 8: 3 steps.
  double expected = 3 * 2e-6 + 7.0 / 8 * 1e9 / 100e9;
  MeshAxes mesh{{"tp", 8, 0, 1}};
  EXPECT_NEAR(collective_seconds(mesh, Collective::all_gather, 1e9, {"tp"}, CollectiveAlgorithm::tree, 1, SimMode::full),
              expected, 1e-12);
  // Rabenseifner all-reduce: 2 log2(p) α + 2(p-1)/p·S/B
  EXPECT_NEAR(collective_seconds(mesh, Collective::all_reduce, 1e9, {"tp"}, CollectiveAlgorithm::tree, 1, SimMode::full),
              6 * 2e-6 + 2.0 * 7 / 8 * 1e9 / 100e9, 1e-12);
}

TEST(Collectives, HierarchicalAllReduceMatchesTwoLevelFormula) {
  // g = 8 GPUs per node (α1 = 2 µs, B1 = 100 GB/s), n = 4 nodes (α2 = 10 µs, B2 = 25 GB/s):
  // 2[(g-1)α1 + (g-1)/g·S/B1] + 2(n-1)α2 + 2(n-1)/n·(S/g)/B2
  double S = 1e9;
  double expected = 2 * (7 * 2e-6 + 7.0 / 8 * S / 100e9) + 2 * 3 * 10e-6 + 2.0 * 3 / 4 * (S / 8) / 25e9;
  MeshAxes mesh{{"dp", 4, 1, 8}, {"tp", 8, 0, 1}};
  for (SimMode mode : {SimMode::symmetric, SimMode::full})
    EXPECT_NEAR(collective_seconds(mesh, Collective::all_reduce, S, {"dp", "tp"}, CollectiveAlgorithm::hierarchical, 4,
                                   mode),
                expected, 1e-12);
}

TEST(Collectives, FlatRingAcrossNodesRunsOneRingPerGpuAndIsPacedByTheNics) {
  // 16 ranks on 2 nodes, as NCCL runs it: 8 rings (channels) of S/8, each leaving a node
  // through a different GPU's NIC. In every step each GPU sends S/128 on each ring: one
  // transfer on its NIC (α2 = 10 us, B2 = 25 GB/s) and 7 on NVLink (α1 = 2 us, B1 = 100 GB/s,
  // shared by the 7): the step lasts max(α2 + S/128/B2, α1 + 7·S/128/B1), 30 steps.
  double S = 1.6e9;
  double expected = 30 * std::max(10e-6 + S / 128 / 25e9, 2e-6 + 7 * S / 128 / 100e9);
  MeshAxes mesh{{"dp", 2, 1, 8}, {"tp", 8, 0, 1}};
  for (SimMode mode : {SimMode::symmetric, SimMode::full})
    EXPECT_NEAR(collective_seconds(mesh, Collective::all_reduce, S, {"dp", "tp"}, CollectiveAlgorithm::ring, 2, mode),
                expected, 1e-12);
}

TEST(Collectives, PhasesMoveTheNcclBusBytes) {
  // Each member's bytes sent sum to busbw factor · S: 2(p-1)/p for all-reduce, (p-1)/p else.
  for (int p : {2, 3, 6, 8}) {
    for (auto [kind, factor] : {std::pair{Collective::all_reduce, 2.0 * (p - 1) / p},
                                std::pair{Collective::all_gather, 1.0 * (p - 1) / p},
                                std::pair{Collective::all_to_all, 1.0 * (p - 1) / p}}) {
      double sent = 0;
      for (const auto& phase : ring_phases(kind, p, 1.0))
        for (const auto& t : phase)
          if (t.src == 0) sent += t.bytes;
      EXPECT_NEAR(sent, factor, 1e-12) << "p=" << p;
    }
  }
}

// Rank 0 (node 0) sends to rank 8 (node 1), on one or two streams at once.
Program nic_program(int concurrent, double bytes) {
  Program p;
  p.mesh = {{"node", 2, 1, 8}, {"gpu", 8, 0, 1}};
  std::vector<Task> sends, recvs;
  for (int i = 0; i < concurrent; ++i) {
    sends.push_back(send_task("s" + std::to_string(i), "p2p" + std::to_string(i), "receiver", bytes));
    recvs.push_back(recv_task("r" + std::to_string(i), "p2p" + std::to_string(i), "sender", bytes));
  }
  p.rank_classes.push_back(make_class("sender", testing::iota_ranks(8), sends));
  p.rank_classes.push_back(make_class("receiver", testing::iota_ranks(8, 8), recvs));
  validate_program(p);
  return p;
}

TEST(Network, TwoConcurrentFlowsOnOneNicTakeTwiceAsLong) {
  auto c = test_cluster(2, 0, 0);  // no latency: time is bytes / share of 25 GB/s
  double one = 1e9 / 25e9;
  for (SimMode mode : {SimMode::symmetric, SimMode::full}) {
    EXPECT_NEAR(simulate(nic_program(1, 1e9), c, {mode}).step_time_s, one, 1e-12);
    EXPECT_NEAR(simulate(nic_program(2, 1e9), c, {mode}).step_time_s, 2 * one, 1e-12);
  }
}

TEST(Network, ShortFlowReleasesBandwidthToTheLongOne) {
  // 1 GB and 0.5 GB start together on one NIC: both at 12.5 GB/s until the short one ends
  // at 0.04 s; the long one has 0.5 GB left at 25 GB/s: ends at 0.06 s.
  Program p = nic_program(2, 1e9);
  p.rank_classes[0].tasks[1].bytes = 0.5e9;
  p.rank_classes[1].tasks[1].bytes = 0.5e9;
  SimResult r = simulate(p, test_cluster(2, 0, 0));
  EXPECT_NEAR(r.step_time_s, 0.06, 1e-12);
  EXPECT_NEAR(r.trace[0].slices[1].end_s, 0.04, 1e-12);
}

}  // namespace
}  // namespace symtensor::sim

namespace symtensor::sim {
namespace {

// The simulator and the analytic model in hardware/collectives.h must agree on an
// uncontended collective (same α-β arithmetic, one on phases of flows, one in closed form).
TEST(Collectives, AgreesWithTheAnalyticModel) {
  auto c = test_cluster(4);
  MeshAxes node{{"tp", 8, 0, 1}};
  MeshAxes two_level{{"dp", 4, 1, 8}, {"tp", 8, 0, 1}};
  struct Case {
    const MeshAxes* mesh;
    std::vector<std::string> group;
    Collective kind;
    CollectiveAlgorithm algorithm;
  };
  std::vector<Case> cases{{&node, {"tp"}, Collective::all_reduce, CollectiveAlgorithm::ring},
                          {&node, {"tp"}, Collective::all_gather, CollectiveAlgorithm::ring},
                          {&node, {"tp"}, Collective::reduce_scatter, CollectiveAlgorithm::tree},
                          {&two_level, {"dp", "tp"}, Collective::all_reduce, CollectiveAlgorithm::hierarchical},
                          {&two_level, {"dp"}, Collective::all_reduce, CollectiveAlgorithm::ring}};
  for (const auto& k : cases) {
    std::vector<int> ids;
    for (const auto& g : k.group) ids.push_back(axis_index(*k.mesh, g));
    double analytic = hardware::collective_time(c, k.kind, group_shape(*k.mesh, ids, 2), 1e9, k.algorithm).seconds;
    double simulated = collective_seconds(*k.mesh, k.kind, 1e9, k.group, k.algorithm, 4, SimMode::full);
    EXPECT_NEAR(simulated, analytic, 0.01 * analytic)
        << hardware::to_string(k.kind) << " " << hardware::to_string(k.algorithm);
  }
}

}  // namespace
}  // namespace symtensor::sim

namespace symtensor::sim {
// Named, not anonymous: the test sources are compiled as unity batches.
namespace mesh_flow_caps_test {

// MI300X's Infinity Fabric: a full mesh of 8 GPUs, each with 7 links of 64 GB/s (448 GB/s of
// egress), alpha 1.5 us. A group of k of the 8 gets k - 1 links (a tree step and a send one).
constexpr double kMeshLink = 448e9 / 7, kMeshAlpha = 1.5e-6;

hardware::Cluster mi300x_node() { return hardware::scale_cluster(hardware::load_cluster("mi300x"), 1, std::nullopt); }

// One node's 8 GPUs as `group` x (8 / group), the group's axis innermost.
MeshAxes mesh_of_groups(int group) { return {{"rest", 8 / group, 0, group}, {"group", group, 0, 1}}; }

double mesh_collective_seconds(int group, Collective kind, CollectiveAlgorithm algorithm, SimMode mode) {
  Program p;
  p.mesh = mesh_of_groups(group);
  p.rank_classes.push_back(
      make_class("all", testing::iota_ranks(8), {collective_task("c", "comm", kind, 1e9, {"group"}, {}, algorithm)}));
  validate_program(p);
  return simulate(p, mi300x_node(), {mode}).step_time_s;
}

TEST(MeshCollectives, TwoGpuAllGatherRunsOnOneLinkAsTheAnalyticModelSays) {
  const hardware::Cluster c = mi300x_node();
  const std::vector<int> group{axis_index(mesh_of_groups(2), "group")};
  const double analytic = hardware::collective_time(c, Collective::all_gather, group_shape(mesh_of_groups(2), group, 2),
                                                    1e9, CollectiveAlgorithm::automatic)
                              .seconds;
  EXPECT_NEAR(analytic, kMeshAlpha + 0.5e9 / kMeshLink, 1e-12);  // 64 GB/s, not 448
  for (SimMode mode : {SimMode::symmetric, SimMode::full})
    EXPECT_NEAR(mesh_collective_seconds(2, Collective::all_gather, CollectiveAlgorithm::automatic, mode), analytic,
                0.05 * analytic);
}

TEST(MeshCollectives, GroupsOfTheMeshAgreeWithTheAnalyticModel) {
  const hardware::Cluster c = mi300x_node();
  for (int k : {2, 4, 8})
    for (Collective kind : {Collective::all_gather, Collective::all_reduce, Collective::all_to_all})
      for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree}) {
        // All-to-all runs pairwise whatever the algorithm; a tree all-reduce is Rabenseifner's
        // here and NCCL's double binary tree in the analytic model.
        if (kind != Collective::all_gather && algorithm == CollectiveAlgorithm::tree) continue;
        const std::vector<int> group{axis_index(mesh_of_groups(k), "group")};
        const double analytic =
            hardware::collective_time(c, kind, group_shape(mesh_of_groups(k), group, 2), 1e9, algorithm).seconds;
        for (SimMode mode : {SimMode::symmetric, SimMode::full})
          EXPECT_NEAR(mesh_collective_seconds(k, kind, algorithm, mode), analytic, 0.01 * analytic)
              << "k=" << k << " " << hardware::to_string(kind) << " " << hardware::to_string(algorithm);
      }
}

TEST(MeshCollectives, ASendInsideANodeGetsOneLink) {
  Program p;
  p.mesh = {{"pp", 2, 0, 4}, {"gpu", 4, 0, 1}};
  p.rank_classes.push_back(make_class("sender", testing::iota_ranks(4), {send_task("s", "p2p", "receiver", 1e9)}));
  p.rank_classes.push_back(make_class("receiver", testing::iota_ranks(4, 4), {recv_task("r", "p2p", "sender", 1e9)}));
  validate_program(p);
  for (SimMode mode : {SimMode::symmetric, SimMode::full})
    EXPECT_NEAR(simulate(p, mi300x_node(), {mode}).step_time_s, kMeshAlpha + 1e9 / kMeshLink, 1e-12);
}

}  // namespace mesh_flow_caps_test
}  // namespace symtensor::sim
