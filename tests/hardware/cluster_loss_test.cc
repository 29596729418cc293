// What is left of a cluster after nodes fail (#32, --without / --fail-nodes).
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "hardware/cluster.h"
#include "hardware/cluster_loss.h"

namespace symtensor::hardware {
namespace {

std::string loss_error_of(const Cluster& c, int lost, const std::string& group = "") {
  try {
    without_nodes(c, lost, group);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterLoss, FourNodesOfEightLessOneAreTwentyFourGpus) {
  const Cluster c = load_cluster("dgx-h100x4");
  ASSERT_EQ(node_count(c), 4);
  const Cluster left = without_nodes(c, 1);
  EXPECT_EQ(node_count(left), 3);
  EXPECT_EQ(left.num_devices(), 3 * 8);
  EXPECT_EQ(left.devices_per_node(), 8);
  // The node's links keep their speed.
  EXPECT_DOUBLE_EQ(left.levels.back().bandwidth, c.levels.back().bandwidth);
  EXPECT_EQ(without_nodes(c, 0).num_devices(), 32);
  EXPECT_EQ(without_nodes(c, 3).num_devices(), 8);
}

TEST(ClusterLoss, OneNodeMustRemainAndTheErrorSaysHowMany) {
  const Cluster c = load_cluster("dgx-h100x4");
  const std::string e = loss_error_of(c, 5);
  EXPECT_NE(e.find("has 4 nodes"), std::string::npos) << e;
  EXPECT_NE(e.find("at most 3"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_NE(loss_error_of(c, 4), "");
  EXPECT_NE(loss_error_of(c, -1), "");
  EXPECT_NE(loss_error_of(c, 1, "dgx-a100").find("not a mixed fleet"), std::string::npos);
}

TEST(ClusterLoss, AFleetLosesFromItsLargestGroupOrTheOneNamed) {
  const Cluster f = load_cluster("dgx-h100x2+dgx-a100x4");
  ASSERT_EQ(node_count(f), 6);
  ASSERT_EQ(group_losing_nodes(f), 1);  // 4 A100 nodes beside 2 H100 nodes
  const Cluster a = without_nodes(f, 1);
  ASSERT_TRUE(a.mixed());
  EXPECT_EQ(a.name, "dgx-h100x2+dgx-a100x3");
  EXPECT_EQ(a.groups[0].nodes, 2);
  EXPECT_EQ(a.groups[1].nodes, 3);
  EXPECT_EQ(a.groups[1].first_rank, 16);
  EXPECT_EQ(a.num_devices(), 16 + 24);
  const Cluster h = without_nodes(f, 1, "DGX-H100");  // any case
  EXPECT_EQ(h.name, "dgx-h100x1+dgx-a100x4");
  EXPECT_EQ(h.num_devices(), 8 + 32);
  // A group losing all its nodes is dropped; one group left is a cluster of one type.
  const Cluster rest = without_nodes(f, 2, "dgx-h100");
  EXPECT_FALSE(rest.mixed());
  EXPECT_EQ(rest.num_devices(), 32);
  EXPECT_EQ(rest.device.name, "A100-SXM4-80GB");
  EXPECT_NE(loss_error_of(f, 3, "dgx-h100").find("has 2 nodes"), std::string::npos);
  EXPECT_NE(loss_error_of(f, 1, "dgx-l4").find("no group 'dgx-l4'"), std::string::npos);
}

}  // namespace
}  // namespace symtensor::hardware
