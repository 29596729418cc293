// Redistribution plans: which collectives, on which axes, how many bytes (nccl-tests S),
// and what they cost; hand arithmetic in the comments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "compiler/sharding/redistribution.h"
#include "compiler/sharding/redistribution_cost.h"
#include "tests/compiler/sharding_test_util.h"

namespace symtensor::compiler {
namespace {

using hardware::Collective;
using hardware::CollectiveAlgorithm;
using Kind = RedistributionKind;

constexpr double kNvlinkB = 300e9, kNvlinkAlpha = 2e-6, kNetB = 25e9, kNetAlpha = 5e-6;

hardware::TopologyLevel level(const char* name, int size, double bandwidth, double latency) {
  hardware::TopologyLevel l;
  l.name = name;
  l.size = size;
  l.bandwidth = bandwidth;
  l.latency_s = latency;
  return l;
}

// One node of 8 GPUs on NVLink: mesh axis gpu (id 0, size 8).
hardware::Cluster node_of_8() {
  hardware::Cluster c;
  c.name = "test-1x8";
  c.levels = {level("gpu", 8, kNvlinkB, kNvlinkAlpha)};
  return c;
}

// 2 nodes x 4 GPUs: mesh axes node (id 0, size 2), gpu (id 1, size 4).
hardware::Cluster two_by_four() {
  hardware::Cluster c;
  c.name = "test-2x4";
  c.levels = {level("gpu", 4, kNvlinkB, kNvlinkAlpha), level("node", 2, kNetB, kNetAlpha)};
  return c;
}

using symtensor::testing::num;
std::vector<GiNaC::ex> shape(std::initializer_list<long> dims) {
  std::vector<GiNaC::ex> s;
  for (long d : dims) s.push_back(num(d));
  return s;
}

Redistribution plan(const char* from, const char* to, const std::vector<GiNaC::ex>& dims, long element_bytes,
                    const hardware::DeviceMesh& mesh) {
  return plan_redistribution(parse_sharding(from, mesh), parse_sharding(to, mesh), dims, num(element_bytes), mesh);
}

TEST(ShardingRedistribution, PartialToReplicatedIsOneAllReduceMatchingTheRingFormula) {
  const auto cluster = node_of_8();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // [b, s, h] = [8, 2048, 4096] bf16: S = 8*2048*4096*2 = 134,217,728 B, the whole local buffer.
  const auto r = plan("[{},{},{}] partial{gpu}", "[{},{},{}] partial{}", shape({8, 2048, 4096}), 2, mesh);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].kind, Kind::all_reduce);
  EXPECT_EQ(r.steps[0].collective(), Collective::all_reduce);
  EXPECT_EQ(r.steps[0].axes, (std::vector<int>{0}));
  EXPECT_EQ(r.steps[0].bytes, num(134217728));
  EXPECT_EQ(r.steps[0].group.ranks_per_level, (std::vector<int>{8}));
  const double t = redistribution_time(r, cluster);
  EXPECT_DOUBLE_EQ(t, hardware::collective_time(cluster, Collective::all_reduce, r.steps[0].group, 134217728).seconds);
  // Ring by hand, p = 8: 2(p-1)a + 2(p-1)/p S/B = 14*2e-6 + 1.75*134217728/300e9
  //   = 2.8e-5 + 7.82936747e-4 = 8.10936747e-4 s (tree: 6a + 2S/B = 9.07e-4, so ring wins).
  EXPECT_NEAR(t, 8.10936747e-4, 1e-12);
  EXPECT_NEAR(redistribution_time(r, cluster, {}, CollectiveAlgorithm::ring), 2 * 7 * kNvlinkAlpha + 1.75 * 134217728 / kNvlinkB,
              1e-15);
}

TEST(ShardingRedistribution, MegatronSequenceParallelPairMovesBshEachWay) {
  const auto cluster = node_of_8();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  GiNaC::possymbol b("b"), s("s"), h("h");
  // Row-parallel output (partial) -> split on seq: reduce-scatter of the full b*s*h buffer.
  const auto rs = plan("[{},{},{}] partial{gpu}", "[{},{gpu},{}] partial{}", {b, s, h}, 2, mesh);
  ASSERT_EQ(rs.steps.size(), 1u);
  EXPECT_EQ(rs.steps[0].kind, Kind::reduce_scatter);
  EXPECT_EQ(rs.steps[0].dim, 1);
  EXPECT_TRUE((rs.steps[0].bytes - 2 * b * s * h).is_zero());
  // Split on seq -> replicated (input of the column-parallel GEMM): all-gather, output b*s*h.
  const auto ag = plan("[{},{gpu},{}] partial{}", "[{},{},{}] partial{}", {b, s, h}, 2, mesh);
  ASSERT_EQ(ag.steps.size(), 1u);
  EXPECT_EQ(ag.steps[0].kind, Kind::all_gather);
  EXPECT_TRUE((ag.steps[0].bytes - 2 * b * s * h).is_zero());
  // Same volume, so with [4, 2048, 4096]: each is (p-1)a + (p-1)/p S/B, S = 67,108,864 B
  //   = 1.4e-5 + 0.875*67108864/300e9 = 1.4e-5 + 1.95734187e-4 = 2.09734187e-4 s;
  // together they cost what one all-reduce's ring does (Megatron-SP's claim).
  const GiNaC::exmap bound{{b, 4}, {s, 2048}, {h, 4096}};
  const double t_rs = redistribution_time(rs, cluster, bound, CollectiveAlgorithm::ring);
  const double t_ag = redistribution_time(ag, cluster, bound, CollectiveAlgorithm::ring);
  EXPECT_NEAR(t_rs, 2.09734187e-4, 1e-12);
  EXPECT_DOUBLE_EQ(t_rs, t_ag);
  const auto ar = plan("[{},{},{}] partial{gpu}", "[{},{},{}] partial{}", {b, s, h}, 2, mesh);
  EXPECT_NEAR(t_rs + t_ag, redistribution_time(ar, cluster, bound, CollectiveAlgorithm::ring), 1e-15);
}

TEST(ShardingRedistribution, SwitchingTheSplitDimIsAnAllToAll) {
  const auto cluster = node_of_8();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // [1024, 512] f32 split on dim 0 -> on dim 1: each rank's buffer is 1024*512*4/8 = 262,144 B.
  const auto r = plan("[{gpu},{}]", "[{},{gpu}]", shape({1024, 512}), 4, mesh);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].kind, Kind::all_to_all);
  EXPECT_EQ(r.steps[0].dim, 0);
  EXPECT_EQ(r.steps[0].to_dim, 1);
  EXPECT_EQ(r.steps[0].bytes, num(262144));
  // Ring (pairwise) all-to-all: 7a + 7/8 * 262144/300e9 = 1.4e-5 + 7.64587e-7 s.
  EXPECT_NEAR(redistribution_time(r, cluster, {}, CollectiveAlgorithm::ring), 1.4e-5 + 0.875 * 262144 / 300e9, 1e-15);
}

TEST(ShardingRedistribution, ReplicatedToShardedIsAFreeSlice) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  const auto r = plan("[{},{}]", "[{node},{gpu}]", shape({64, 64}), 4, mesh);
  ASSERT_FALSE(r.steps.empty());
  for (const auto& step : r.steps) {
    EXPECT_EQ(step.kind, Kind::slice);
    EXPECT_FALSE(step.collective().has_value());
    EXPECT_TRUE(step.bytes.is_zero());
  }
  EXPECT_EQ(r.steps.back().after, parse_sharding("[{node},{gpu}]", mesh));
  EXPECT_EQ(redistribution_time(r, cluster), 0.0);
  EXPECT_TRUE(plan("[{gpu},{}]", "[{gpu},{}]", shape({64, 64}), 4, mesh).steps.empty());
}

TEST(ShardingRedistribution, MultiAxisAllReduceSpansBothLevels) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // [64, 1024] f32 = 262,144 B partial over all 8 devices: one all-reduce over {node, gpu}.
  const auto r = plan("[{},{}] partial{node,gpu}", "[{},{}]", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].kind, Kind::all_reduce);
  EXPECT_EQ(r.steps[0].axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.steps[0].group.ranks_per_level, (std::vector<int>{4, 2}));  // 4 GPUs x 2 nodes
  EXPECT_EQ(r.steps[0].bytes, num(262144));
  // Hierarchical by hand (CALIBRATION.md two-level all-reduce, g = 4, n = 2):
  //   2[3*2e-6 + 3/4*262144/300e9] + 2[1*5e-6 + 1/2*(262144/4)/25e9]
  //   = 2[6e-6 + 6.5536e-7] + 2[5e-6 + 1.31072e-6] = 1.331072e-5 + 1.262144e-5 = 2.593216e-5 s.
  EXPECT_NEAR(redistribution_time(r, cluster, {}, CollectiveAlgorithm::hierarchical), 2.593216e-5, 1e-13);
}

TEST(ShardingRedistribution, PartialToShardedOnOneAxisAndReplicatedOnTheOther) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // [64, 1024] f32 = 262,144 B partial over node and gpu -> split over gpu on dim 0:
  // reduce-scatter over gpu first (input 262,144 B), then all-reduce over node on the
  // quarter left (65,536 B) -- cheaper than the reverse order on the slow axis.
  const auto r = plan("[{},{}] partial{node,gpu}", "[{gpu},{}] partial{}", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].kind, Kind::reduce_scatter);
  EXPECT_EQ(r.steps[0].axes, (std::vector<int>{1}));
  EXPECT_EQ(r.steps[0].bytes, num(262144));
  EXPECT_EQ(r.steps[0].group.ranks_per_level, (std::vector<int>{4, 1}));
  EXPECT_EQ(r.steps[1].kind, Kind::all_reduce);
  EXPECT_EQ(r.steps[1].axes, (std::vector<int>{0}));
  EXPECT_EQ(r.steps[1].bytes, num(65536));
  EXPECT_EQ(r.steps[1].group.ranks_per_level, (std::vector<int>{1, 2}));
  EXPECT_EQ(r.total_bytes(), num(262144 + 65536));
  // Cost = sum of the two collectives.
  const double expected = hardware::collective_time(cluster, Collective::reduce_scatter, r.steps[0].group, 262144).seconds +
                          hardware::collective_time(cluster, Collective::all_reduce, r.steps[1].group, 65536).seconds;
  EXPECT_DOUBLE_EQ(redistribution_time(r, cluster), expected);
}

TEST(ShardingRedistribution, MultiAxisGatherAndScatter) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // Split 8 ways node-major -> replicated: one all-gather over {node, gpu}, S = 64*1024*4.
  const auto ag = plan("[{node,gpu},{}]", "[{},{}]", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(ag.steps.size(), 1u);
  EXPECT_EQ(ag.steps[0].kind, Kind::all_gather);
  EXPECT_EQ(ag.steps[0].axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(ag.steps[0].bytes, num(262144));
  // Only the minor axis leaves: gather over gpu, output the node-shard 262,144/2 = 131,072 B.
  const auto minor = plan("[{node,gpu},{}]", "[{node},{}]", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(minor.steps.size(), 1u);
  EXPECT_EQ(minor.steps[0].axes, (std::vector<int>{1}));
  EXPECT_EQ(minor.steps[0].bytes, num(131072));
  // Partial over node, split on gpu -> split node-minor too: reduce-scatter over node whose
  // input is the gpu shard 262,144/4 = 65,536 B.
  const auto rs = plan("[{gpu},{}] partial{node}", "[{gpu,node},{}]", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(rs.steps.size(), 1u);
  EXPECT_EQ(rs.steps[0].kind, Kind::reduce_scatter);
  EXPECT_EQ(rs.steps[0].axes, (std::vector<int>{0}));
  EXPECT_EQ(rs.steps[0].bytes, num(65536));
}

TEST(ShardingRedistribution, MultiAxisAllToAllAndCrossedAxes) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // Both axes move from dim 0 to dim 1 together: one all-to-all over 8 ranks, buffer
  // 64*1024*4/8 = 32,768 B.
  const auto a2a = plan("[{node,gpu},{}]", "[{},{node,gpu}]", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(a2a.steps.size(), 1u);
  EXPECT_EQ(a2a.steps[0].kind, Kind::all_to_all);
  EXPECT_EQ(a2a.steps[0].axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(a2a.steps[0].bytes, num(32768));
  // Crossed: [{node},{gpu}] -> [{gpu},{node}]. Neither dim is free to receive, so node is
  // gathered (output 64*1024*4/4 = 65,536 B), gpu moves by all-to-all (buffer 65,536 B),
  // then node is sliced onto dim 1 for free.
  const auto crossed = plan("[{node},{gpu}]", "[{gpu},{node}]", shape({64, 1024}), 4, mesh);
  ASSERT_EQ(crossed.steps.size(), 3u);
  EXPECT_EQ(crossed.steps[0].kind, Kind::all_gather);
  EXPECT_EQ(crossed.steps[0].axes, (std::vector<int>{0}));
  EXPECT_EQ(crossed.steps[0].bytes, num(65536));
  EXPECT_EQ(crossed.steps[1].kind, Kind::all_to_all);
  EXPECT_EQ(crossed.steps[1].axes, (std::vector<int>{1}));
  EXPECT_EQ(crossed.steps[1].bytes, num(65536));
  EXPECT_EQ(crossed.steps[2].kind, Kind::slice);
  EXPECT_EQ(crossed.steps[2].after, parse_sharding("[{gpu},{node}]", mesh));
  EXPECT_EQ(to_string(crossed, mesh),
            "all_gather {node} dim 0: [{node},{gpu}] partial{} -> [{},{gpu}] partial{}, 65536 B\n"
            "all_to_all {gpu} dim 1->0: [{},{gpu}] partial{} -> [{gpu},{}] partial{}, 65536 B\n"
            "slice {node} dim 1: [{gpu},{}] partial{} -> [{gpu},{node}] partial{}, 0 B\n");
  // Reordering the axes of one dim (major <-> minor) needs a gather of the misplaced tail.
  const auto reorder = plan("[{node,gpu}]", "[{gpu,node}]", shape({64}), 4, mesh);
  ASSERT_FALSE(reorder.steps.empty());
  EXPECT_EQ(reorder.steps.back().after, parse_sharding("[{gpu,node}]", mesh));
  for (std::size_t i = 1; i < reorder.steps.size(); ++i) EXPECT_EQ(reorder.steps[i].before, reorder.steps[i - 1].after);
}

TEST(ShardingRedistribution, UnevenSplitsMovePaddedBytes) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  // [10, 16] f32 split over gpu (4): each rank holds ceil(10/4) = 3 rows, so the gathered
  // output is 4*3*16*4 = 768 B, not 10*16*4 = 640 B.
  const auto ag = plan("[{gpu},{}]", "[{},{}]", shape({10, 16}), 4, mesh);
  ASSERT_EQ(ag.steps.size(), 1u);
  EXPECT_EQ(ag.steps[0].bytes, num(768));
  // Reduce-scatter onto the same split reads the padded 768 B input.
  const auto rs = plan("[{},{}] partial{gpu}", "[{gpu},{}]", shape({10, 16}), 4, mesh);
  EXPECT_EQ(rs.steps[0].bytes, num(768));
  // All-to-all [10, 6] f32 dim 0 -> dim 1 over gpu: before 3*6 = 18, after 10*2 = 20
  // elements per rank; the buffer holds the larger, 20*4 = 80 B.
  const auto a2a = plan("[{gpu},{}]", "[{},{gpu}]", shape({10, 6}), 4, mesh);
  EXPECT_EQ(a2a.steps[0].bytes, num(80));
}

TEST(ShardingRedistribution, SymbolicBytesAndCost) {
  const auto cluster = node_of_8();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  GiNaC::possymbol b("b"), s("s"), h("h"), p("p");
  // Mesh size p kept free: reduce-scatter S = p * (b*s/p*h) * 2 = 2bsh, independent of p.
  const auto r = plan_redistribution(parse_sharding("[{},{},{}] partial{gpu}", mesh),
                                     parse_sharding("[{},{gpu},{}]", mesh), {b, s, h}, num(2), mesh, AxisSizes{p});
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_TRUE((r.steps[0].bytes - 2 * b * s * h).is_zero());
  // Ring cost with symbolic B and alpha: (p-1)alpha + (p-1)/p * 2bsh/B.
  const auto symbols = hardware::make_level_symbols(cluster);
  const GiNaC::ex t = redistribution_time_expr(r, mesh, symbols, CollectiveAlgorithm::ring);
  const GiNaC::ex& B = symbols[0].bandwidth;
  const GiNaC::ex& alpha = symbols[0].latency;
  EXPECT_TRUE((t - ((p - 1) * alpha + (p - 1) / p * 2 * b * s * h / B)).normal().is_zero()) << t;
  // With numbers everywhere the formula (automatic: min over algorithms) gives the numeric cost.
  const GiNaC::exmap values{{b, 4}, {s, 2048}, {h, 4096}, {p, 8}, {B, kNvlinkB}, {alpha, kNvlinkAlpha}};
  const GiNaC::exmap dims{{b, 4}, {s, 2048}, {h, 4096}};
  const double numeric = redistribution_time(r, cluster, dims);
  EXPECT_NEAR(hardware::evaluate_seconds(redistribution_time_expr(r, mesh, symbols), values), numeric, 1e-15);
  EXPECT_NEAR(hardware::evaluate_seconds(redistribution_time_expr(r, mesh, numeric_levels(cluster)), values), numeric,
              1e-15);
}

// MI300X's Infinity Fabric: 7 links of 64 GB/s per GPU, 1.5 us. A reduce-scatter of 2 MB over
// 2 of a node's 8 GPUs gets one link, alpha + S/2 / 64 GB/s, numerically and in the
// expression of numeric_levels.
TEST(ShardingRedistribution, OverPartOfAnInfinityFabricMeshItUsesItsLinks) {
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("mi300x"), 1, 8);
  const auto mesh = hardware::DeviceMesh::factored(c, {{1}, {2, 4}});
  const Redistribution r = plan_redistribution(parse_sharding("[{},{}] partial{gpu0}", mesh),
                                               parse_sharding("[{gpu0},{}]", mesh), {num(1024), num(1024)}, num(2), mesh);
  ASSERT_EQ(r.steps.size(), 1u);
  const double expected = 1.5e-6 + 0.5 * 1024 * 1024 * 2 / (448e9 / 7);
  EXPECT_NEAR(redistribution_time(r, c), expected, 1e-15);
  EXPECT_NEAR(hardware::evaluate_seconds(redistribution_time_expr(r, mesh, numeric_levels(c)), {}), expected, 1e-15);
}

TEST(ShardingRedistribution, ErrorsAreOneLine) {
  const auto cluster = two_by_four();
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster);
  try {
    plan("[{gpu},{}]", "[{},{}] partial{gpu}", shape({8, 8}), 4, mesh);
    FAIL() << "replicated -> partial must be rejected";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("redistribution [{gpu},{}] partial{} -> [{},{}] partial{gpu}"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cannot make a partial sum over mesh axis 'gpu'"));
  }
  EXPECT_THROW(plan("[{gpu},{}]", "[{},{}]", shape({8}), 4, mesh), std::runtime_error);  // rank mismatch
  GiNaC::possymbol s("s");
  const auto r = plan_redistribution(parse_sharding("[{gpu}]", mesh), parse_sharding("[{}]", mesh), {s}, num(4), mesh);
  EXPECT_THROW(redistribution_time(r, cluster), std::runtime_error);  // bytes still symbolic
}

}  // namespace
}  // namespace symtensor::compiler
