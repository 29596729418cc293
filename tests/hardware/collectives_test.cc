#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

#include "hardware/collectives.h"

namespace symtensor::hardware {
namespace {

// dgx-a100: NVSwitch alpha1 = 1 us, B1 = 300 GB/s; InfiniBand alpha2 = 5 us, B2 = 25 GB/s.
constexpr double a1 = 1e-6, B1 = 300e9, a2 = 5e-6, B2 = 25e9;
constexpr double GiB = 1073741824.0;

Cluster a100(int nodes = 4) { return scale_cluster(load_cluster("dgx-a100"), nodes, std::nullopt); }
GroupShape shape(int gpus, int nodes) { return GroupShape{{gpus, nodes}}; }

double seconds(const Cluster& c, Collective k, GroupShape g, double bytes, CollectiveAlgorithm a) {
  return collective_time(c, k, g, bytes, a).seconds;
}

TEST(Collectives, RingAllReduceBusBandwidthIsTheLinkBandwidth) {
  // nccl-tests: busbw = algbw * 2(n-1)/n; with alpha negligible a ring all-reduce's busbw is
  // the per-GPU link bandwidth.
  const double S = 1e13;  // 10 TB: alpha terms are < 1e-5 of the time
  double t = seconds(a100(), Collective::all_reduce, shape(8, 1), S, CollectiveAlgorithm::ring);
  double algbw = S / t;
  EXPECT_NEAR(algbw * 2.0 * 7 / 8, B1, B1 * 1e-5);
  EXPECT_NEAR(algbw * bus_bandwidth_factor(Collective::all_reduce, 8), B1, B1 * 1e-5);
  // One GPU per node: the GPU's own NIC.
  t = seconds(a100(), Collective::all_reduce, shape(1, 4), S, CollectiveAlgorithm::ring);
  EXPECT_NEAR(S / t * 2.0 * 3 / 4, B2, B2 * 1e-5);
  // All 32 GPUs: one ring per NIC rail, so the node's 8 NICs share the inter-node traffic:
  // busbw = min(300, 8 x 25) = 200 GB/s.
  t = seconds(a100(), Collective::all_reduce, shape(8, 4), S, CollectiveAlgorithm::ring);
  EXPECT_NEAR(S / t * 2.0 * 31 / 32, 8 * B2, 8 * B2 * 1e-5);
}

TEST(Collectives, HierarchicalAllReduceIsTheTwoLevelFormula) {
  // CALIBRATION.md: T = 2[(g-1)a1 + (g-1)/g N/B1] + 2(n-1)a2 + 2(n-1)/n (N/g)/B2, g=8, n=4.
  const double N = GiB;
  const double expected = 2 * (7 * a1 + 7.0 / 8 * N / B1) + 2 * 3 * a2 + 2 * 3.0 / 4 * (N / 8) / B2;
  // By hand: 2(7e-6 + 3.13174699e-3) + 30e-6 + 8.05306368e-3 = 1.436055766e-2 s.
  EXPECT_NEAR(expected, 1.436055766e-2, 1e-11);
  EXPECT_NEAR(seconds(a100(), Collective::all_reduce, shape(8, 4), N, CollectiveAlgorithm::hierarchical), expected,
              expected * 1e-12);
}

TEST(Collectives, AllGatherReduceScatterAllToAllFormulas) {
  const double N = GiB;
  Cluster c = a100();
  // Ring all-gather / reduce-scatter: (p-1)a + (p-1)/p N/B.
  double ring = 7 * a1 + 7.0 / 8 * N / B1;
  EXPECT_NEAR(seconds(c, Collective::all_gather, shape(8, 1), N, CollectiveAlgorithm::ring), ring, ring * 1e-12);
  EXPECT_NEAR(seconds(c, Collective::reduce_scatter, shape(8, 1), N, CollectiveAlgorithm::ring), ring, ring * 1e-12);
  // Recursive doubling on 6 ranks: ceil(log2 6) = 3 steps.
  double doubling = 3 * a1 + 5.0 / 6 * N / B1;
  EXPECT_NEAR(seconds(c, Collective::all_gather, shape(6, 1), N, CollectiveAlgorithm::tree), doubling, doubling * 1e-12);
  // Pairwise all-to-all across 4 nodes, one GPU each: (p-1)a2 + (p-1)/p N/B2.
  double pairwise = 3 * a2 + 3.0 / 4 * N / B2;
  EXPECT_NEAR(seconds(c, Collective::all_to_all, shape(1, 4), N, CollectiveAlgorithm::ring), pairwise, pairwise * 1e-12);
  // Across all 32 GPUs every rank's own bytes leave by its own NIC (no rail sharing).
  double pairwise32 = 31 * a2 + 31.0 / 32 * N / B2;
  EXPECT_NEAR(seconds(c, Collective::all_to_all, shape(8, 4), N, CollectiveAlgorithm::ring), pairwise32, pairwise32 * 1e-12);
  // Bruck on 8 ranks: 3 steps of half the buffer.
  double bruck = 3 * a1 + 3 * N / (2 * B1);
  EXPECT_NEAR(seconds(c, Collective::all_to_all, shape(8, 1), N, CollectiveAlgorithm::tree), bruck, bruck * 1e-12);
  // Two-phase all-to-all: inside the node, then across nodes.
  double two_phase = 7 * a1 + 7.0 / 8 * N / B1 + 3 * a2 + 3.0 / 4 * N / B2;
  EXPECT_NEAR(seconds(c, Collective::all_to_all, shape(8, 4), N, CollectiveAlgorithm::hierarchical), two_phase, two_phase * 1e-12);
  // Hierarchical all-gather: across nodes on N/8 first, then inside the node on N.
  double hier_ag = 3 * a2 + 3.0 / 4 * (N / 8) / B2 + 7 * a1 + 7.0 / 8 * N / B1;
  EXPECT_NEAR(seconds(c, Collective::all_gather, shape(8, 4), N, CollectiveAlgorithm::hierarchical), hier_ag, hier_ag * 1e-12);
}

TEST(Collectives, BroadcastReduceSendRecvAndTreeAllReduce) {
  const double N = 1e8;
  Cluster c = a100();
  double chain = 7 * a1 + N / B1;
  EXPECT_NEAR(seconds(c, Collective::broadcast, shape(8, 1), N, CollectiveAlgorithm::ring), chain, chain * 1e-12);
  EXPECT_NEAR(seconds(c, Collective::reduce, shape(8, 1), N, CollectiveAlgorithm::ring), chain, chain * 1e-12);
  double tree = 3 * a1 + N / B1;
  EXPECT_NEAR(seconds(c, Collective::broadcast, shape(8, 1), N, CollectiveAlgorithm::tree), tree, tree * 1e-12);
  // Double binary tree all-reduce: reduce then broadcast, 2 ceil(log2 p) a + 2 N/B.
  double tree_ar = 2 * 3 * a1 + 2 * N / B1;
  EXPECT_NEAR(seconds(c, Collective::all_reduce, shape(8, 1), N, CollectiveAlgorithm::tree), tree_ar, tree_ar * 1e-12);
  double p2p_node = a2 + N / B2, p2p_gpu = a1 + N / B1;
  for (auto alg : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
                   CollectiveAlgorithm::automatic}) {
    EXPECT_NEAR(seconds(c, Collective::send_recv, shape(1, 2), N, alg), p2p_node, p2p_node * 1e-12);
    EXPECT_NEAR(seconds(c, Collective::send_recv, shape(2, 1), N, alg), p2p_gpu, p2p_gpu * 1e-12);
  }
}

TEST(Collectives, AutomaticPicksTreeOrHierarchicalWhenSmallAndRingWhenLarge) {
  Cluster c = a100();
  // 1 KB in a node: ring 14 a1 = 14 us, tree 6 a1 = 6 us.
  EXPECT_EQ(collective_time(c, Collective::all_reduce, shape(8, 1), 1e3).algorithm, CollectiveAlgorithm::tree);
  EXPECT_EQ(collective_time(c, Collective::all_reduce, shape(8, 1), 1e9).algorithm, CollectiveAlgorithm::ring);
  // 1 KB on 32 GPUs: ring 62 a2 = 310 us, tree 10 a2 = 50 us, hierarchical 14 a1 + 6 a2 = 44 us.
  EXPECT_EQ(collective_time(c, Collective::all_reduce, shape(8, 4), 1e3).algorithm, CollectiveAlgorithm::hierarchical);
  EXPECT_EQ(collective_time(c, Collective::all_reduce, shape(8, 4), 1e9).algorithm, CollectiveAlgorithm::ring);
  for (Collective k : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                       Collective::broadcast, Collective::reduce, Collective::send_recv}) {
    for (double bytes = 1; bytes < 1e11; bytes *= 7.3) {
      CollectiveCost best = collective_time(c, k, shape(8, 4), bytes);
      double chosen = seconds(c, k, shape(8, 4), bytes, best.algorithm);
      EXPECT_EQ(best.seconds, chosen) << to_string(k);
      for (auto alg : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical}) {
        EXPECT_LE(best.seconds, seconds(c, k, shape(8, 4), bytes, alg)) << to_string(k) << " " << to_string(alg);
      }
    }
  }
}

TEST(Collectives, TrivialGroupsAndErrors) {
  Cluster c = a100();
  EXPECT_EQ(seconds(c, Collective::all_reduce, shape(1, 1), 1e9, CollectiveAlgorithm::automatic), 0.0);
  EXPECT_THROW(collective_time(c, Collective::all_reduce, GroupShape{{8}}, 1e6), std::runtime_error);
  EXPECT_THROW(collective_time(c, Collective::all_reduce, shape(9, 1), 1e6), std::runtime_error);
  EXPECT_THROW(collective_time(c, Collective::all_reduce, shape(0, 1), 1e6), std::runtime_error);
  EXPECT_THROW(collective_time(c, Collective::all_reduce, shape(8, 1), -1), std::runtime_error);
  EXPECT_THROW(collective_time(c, Collective::all_reduce, shape(8, 1), std::nan("")), std::runtime_error);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_to_all, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 4), 1.0);
  EXPECT_THROW(bus_bandwidth_factor(Collective::all_reduce, 0), std::runtime_error);
  EXPECT_EQ(to_string(Collective::reduce_scatter), "reduce_scatter");
  EXPECT_EQ(to_string(CollectiveAlgorithm::hierarchical), "hierarchical");
}

}  // namespace
}  // namespace symtensor::hardware
