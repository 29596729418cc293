// kind: mesh (AMD Infinity Fabric): one point-to-point link per GPU pair, so a group of k of
// the n GPUs of a mesh level gets k-1 of the n-1 links: egress (k-1)/(n-1). Expectations are
// written out by hand; the symbolic model must agree with the numeric one.
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "hardware/collective_expr.h"
#include "hardware/collectives.h"

namespace symtensor::hardware {
// Named: the tests build as one unity file, where anonymous namespaces are shared.
namespace mesh_collectives_test {
namespace {

// mi300x: Infinity Fabric egress 448 GB/s over 7 links (64 GB/s each), alpha 1.5 us;
// one 400 Gb/s NIC per GPU (50 GB/s), alpha 5 us.
constexpr double kAlpha = 1.5e-6, kEgress = 448e9, kLink = 64e9, kAlphaNode = 5e-6, kNic = 50e9;
constexpr double S = 1e9;

GroupShape shape(int gpus, int nodes) { return GroupShape{{gpus, nodes}}; }
double seconds(const Cluster& c, Collective k, GroupShape g, double bytes, CollectiveAlgorithm a) {
  return collective_time(c, k, g, bytes, a).seconds;
}

TEST(MeshCollectives, LoaderReadsMeshAndItsLinks) {
  const Cluster mi = load_cluster("mi300x");
  EXPECT_EQ(mi.levels[0].kind, LinkKind::mesh);
  EXPECT_EQ(to_string(LinkKind::mesh), "mesh");
  EXPECT_EQ(mi.levels[0].mesh_links(), 7);
  EXPECT_EQ(mi.levels[1].mesh_links(), 0);  // fat tree
  EXPECT_DOUBLE_EQ(mi.levels[0].peer_bandwidth(), kLink);  // 448 / 7
  EXPECT_DOUBLE_EQ(mi.levels[0].group_bandwidth(8), kEgress);
  EXPECT_DOUBLE_EQ(mi.levels[0].group_bandwidth(4), 3 * kLink);
  EXPECT_DOUBLE_EQ(mi.levels[1].group_bandwidth(3), kNic);  // not a mesh: the whole NIC
  EXPECT_DOUBLE_EQ(load_cluster("mi355x").levels[0].peer_bandwidth(), 76.8e9);  // 537.6 / 7
}

TEST(MeshCollectives, AllGatherOverTwoGpusUsesOneLinkAndOverAllEightTheEgress) {
  const Cluster mi = load_cluster("mi300x");
  // Two GPUs of a node: alpha + (1/2) S / 64 GB/s, whatever the algorithm.
  const double two = kAlpha + 0.5 * S / kLink;
  for (auto alg : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::automatic}) {
    EXPECT_NEAR(seconds(mi, Collective::all_gather, shape(2, 1), S, alg), two, two * 1e-12) << to_string(alg);
  }
  // All eight: 7 alpha + (7/8) S / 448 GB/s; its bus bandwidth is the whole egress.
  const double eight = 7 * kAlpha + 7.0 / 8 * S / kEgress;
  EXPECT_NEAR(seconds(mi, Collective::all_gather, shape(8, 1), S, CollectiveAlgorithm::ring), eight, eight * 1e-12);
  const double huge = 1e13;
  const double t = seconds(mi, Collective::all_gather, shape(8, 1), huge, CollectiveAlgorithm::ring);
  EXPECT_NEAR(huge / t * bus_bandwidth_factor(Collective::all_gather, 8), kEgress, kEgress * 1e-5);
  // A switch gives two GPUs the whole bandwidth: dgx-h100, 450 GB/s.
  const double h100_two = 1e-6 + 0.5 * S / 450e9;
  EXPECT_NEAR(seconds(load_cluster("dgx-h100"), Collective::all_gather, shape(2, 1), S, CollectiveAlgorithm::ring),
              h100_two, h100_two * 1e-12);
}

TEST(MeshCollectives, KOfNGpusGetKMinusOneLinks) {
  const Cluster mi = load_cluster("mi300x");
  // Four GPUs: 3 of the 7 links, 192 GB/s.
  const double b4 = 3 * kLink;
  const double ring_ar = 2 * 3 * kAlpha + 2 * 3.0 / 4 * S / b4;
  EXPECT_NEAR(seconds(mi, Collective::all_reduce, shape(4, 1), S, CollectiveAlgorithm::ring), ring_ar, ring_ar * 1e-12);
  const double rs = 3 * kAlpha + 3.0 / 4 * S / b4;
  EXPECT_NEAR(seconds(mi, Collective::reduce_scatter, shape(4, 1), S, CollectiveAlgorithm::ring), rs, rs * 1e-12);
  // Pairwise all-to-all: each peer's quarter on its own 64 GB/s link.
  const double a2a = 3 * kAlpha + 3.0 / 4 * S / b4;
  EXPECT_NEAR(seconds(mi, Collective::all_to_all, shape(4, 1), S, CollectiveAlgorithm::ring), a2a, a2a * 1e-12);
  EXPECT_NEAR(3.0 / 4 * S / b4, S / 4 / kLink, 1e-15);
  // Broadcast chain over 6 GPUs: 5 of the 7 links.
  const double chain = 5 * kAlpha + S / (5 * kLink);
  EXPECT_NEAR(seconds(mi, Collective::broadcast, shape(6, 1), S, CollectiveAlgorithm::ring), chain, chain * 1e-12);
}

TEST(MeshCollectives, SendRecvAndTreeStepsUseOneLink) {
  const Cluster mi = load_cluster("mi300x");
  const double p2p = kAlpha + S / kLink;
  for (auto alg : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
                   CollectiveAlgorithm::automatic}) {
    EXPECT_NEAR(seconds(mi, Collective::send_recv, shape(2, 1), S, alg), p2p, p2p * 1e-12) << to_string(alg);
  }
  // Recursive doubling over 8: 3 steps, each with one partner on one link.
  const double doubling = 3 * kAlpha + 7.0 / 8 * S / kLink;
  EXPECT_NEAR(seconds(mi, Collective::all_gather, shape(8, 1), S, CollectiveAlgorithm::tree), doubling, doubling * 1e-12);
  const double tree_ar = 2 * 3 * kAlpha + 2 * S / kLink;
  EXPECT_NEAR(seconds(mi, Collective::all_reduce, shape(8, 1), S, CollectiveAlgorithm::tree), tree_ar, tree_ar * 1e-12);
  // Large all-reduces over the node pick the ring, which uses all seven links.
  EXPECT_EQ(collective_time(mi, Collective::all_reduce, shape(8, 1), S).algorithm, CollectiveAlgorithm::ring);
}

TEST(MeshCollectives, GroupsAcrossNodes) {
  const Cluster mi = load_cluster("mi300x");
  // Two GPUs per node on four nodes, one ring per NIC rail: min(1 link x 1, 50 GB/s x 2).
  const double flat = 7 * kAlphaNode + 7.0 / 8 * S / kLink;
  EXPECT_NEAR(seconds(mi, Collective::all_gather, shape(2, 4), S, CollectiveAlgorithm::ring), flat, flat * 1e-12);
  // Eight per node: min(448, 8 x 50) = 400 GB/s, the NICs.
  const double full = 31 * kAlphaNode + 31.0 / 32 * S / (8 * kNic);
  EXPECT_NEAR(seconds(mi, Collective::all_gather, shape(8, 4), S, CollectiveAlgorithm::ring), full, full * 1e-12);
  // Hierarchical all-gather, four per node: across nodes on S/4, then 3 links inside.
  const double hier = 3 * kAlphaNode + 3.0 / 4 * (S / 4) / kNic + 3 * kAlpha + 3.0 / 4 * S / (3 * kLink);
  EXPECT_NEAR(seconds(mi, Collective::all_gather, shape(4, 4), S, CollectiveAlgorithm::hierarchical), hier, hier * 1e-12);
}

TEST(MeshCollectives, PartOfANodeKeepsTheLinkSpeed) {
  const Cluster mi = load_cluster("mi300x");
  const Cluster four = scale_cluster(mi, std::nullopt, 4);
  EXPECT_DOUBLE_EQ(four.levels[0].bandwidth, 3 * kLink);  // the egress toward 3 peers
  EXPECT_DOUBLE_EQ(four.levels[0].peer_bandwidth(), kLink);
  EXPECT_EQ(seconds(four, Collective::all_gather, shape(4, 1), S, CollectiveAlgorithm::ring),
            seconds(mi, Collective::all_gather, shape(4, 1), S, CollectiveAlgorithm::ring));
  EXPECT_EQ(seconds(four, Collective::all_gather, shape(2, 1), S, CollectiveAlgorithm::ring),
            seconds(mi, Collective::all_gather, shape(2, 1), S, CollectiveAlgorithm::ring));
  const Cluster one = scale_cluster(mi, 2, 1);
  EXPECT_DOUBLE_EQ(one.levels[0].bandwidth, kLink);  // a mesh of one holds one link's speed
  EXPECT_DOUBLE_EQ(scale_cluster(mi, 16, std::nullopt).levels[0].bandwidth, kEgress);  // --nodes: the node level only
  // Switches are untouched by --gpus.
  EXPECT_DOUBLE_EQ(scale_cluster(load_cluster("dgx-h100"), std::nullopt, 2).levels[0].bandwidth, 450e9);
}

const Collective kAll[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                           Collective::broadcast,  Collective::reduce,     Collective::send_recv};
const CollectiveAlgorithm kAlgorithms[] = {CollectiveAlgorithm::automatic, CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                           CollectiveAlgorithm::hierarchical};

TEST(MeshCollectives, SymbolicFormAgreesWithNumericOnEveryMeshGroup) {
  for (const Cluster& cluster : {load_cluster("mi300x"), load_cluster("mi355x"), scale_cluster(load_cluster("mi325x"), 3, 5)}) {
    const std::vector<LevelSymbols> symbols = make_level_symbols(cluster);
    ASSERT_EQ(symbols[0].mesh_links, GiNaC::ex(cluster.levels[0].size - 1)) << cluster.name;
    GiNaC::symbol n("N");
    for (int gpus = 1; gpus <= cluster.levels[0].size; ++gpus) {
      for (int nodes = 1; nodes <= cluster.levels[1].size; ++nodes) {
        const GroupShape group = shape(gpus, nodes);
        const GiNaC::exmap values = level_values(cluster, symbols, group);
        for (Collective kind : kAll) {
          for (CollectiveAlgorithm algorithm : kAlgorithms) {
            const GiNaC::ex formula = collective_time_expr(kind, algorithm, spanned_levels(symbols, group), n);
            for (double bytes : {8.0, 65536.0, 3e7, 1e10}) {
              GiNaC::exmap with_bytes = values;
              with_bytes[n] = bytes;
              const double numeric = collective_time(cluster, kind, group, bytes, algorithm).seconds;
              ASSERT_NEAR(evaluate_seconds(formula, with_bytes), numeric, 1e-12 * numeric + 1e-18)
                  << cluster.name << " " << to_string(kind) << " " << to_string(algorithm) << " " << gpus << "x" << nodes
                  << " " << bytes << " bytes: " << formula;
            }
          }
        }
      }
    }
  }
}

TEST(MeshCollectives, SymbolicRingOnAMeshIsTheLinkFormula) {
  // Ring all-gather on p of a mesh's 8 GPUs: (p-1) alpha + (p-1)/p N / (B (p-1)/7) = (p-1) alpha + 7N/(p B).
  GiNaC::symbol p("p"), b("B"), a("a"), N("N");
  const GiNaC::ex ring = collective_time_expr(Collective::all_gather, CollectiveAlgorithm::ring, {{p, b, a, 7}}, N);
  EXPECT_TRUE((ring - ((p - 1) * a + 7 * N / (p * b))).normal().is_zero()) << ring;
  const GiNaC::ex send = collective_time_expr(Collective::send_recv, CollectiveAlgorithm::ring, {{2, b, a, 7}}, N);
  EXPECT_TRUE((send - (a + 7 * N / b)).normal().is_zero()) << send;
  // Without mesh links the formula is the switch's, unchanged.
  const GiNaC::ex sw = collective_time_expr(Collective::all_gather, CollectiveAlgorithm::ring, {{p, b, a}}, N);
  EXPECT_TRUE((sw - ((p - 1) * a + (p - 1) / p * N / b)).normal().is_zero()) << sw;
  // Printed with the profile's symbols.
  std::ostringstream text;
  const Cluster mi = load_cluster("mi300x");
  text << collective_time_expr(Collective::all_reduce, CollectiveAlgorithm::ring,
                               spanned_levels(make_level_symbols(mi), shape(8, 1)), N);
  EXPECT_NE(text.str().find("B_gpu"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("p_gpu"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace mesh_collectives_test
}  // namespace symtensor::hardware
