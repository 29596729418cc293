#include <algorithm>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "hardware/device_mesh.h"

namespace symtensor::hardware {
namespace {

Cluster a100_nodes(int nodes) { return scale_cluster(load_cluster("dgx-a100"), nodes, std::nullopt); }

TEST(DeviceMesh, FromClusterHasOneAxisPerLevelOutermostFirst) {
  DeviceMesh mesh = DeviceMesh::from_cluster(a100_nodes(4));
  ASSERT_EQ(mesh.axes().size(), 2u);
  EXPECT_EQ(mesh.axes()[0].name, "node");
  EXPECT_EQ(mesh.axes()[0].size, 4);
  EXPECT_EQ(mesh.axes()[0].level, 1);
  EXPECT_EQ(mesh.axes()[0].stride, 8);
  EXPECT_EQ(mesh.axes()[1].name, "gpu");
  EXPECT_EQ(mesh.axes()[1].stride, 1);  // ranks inside a node are contiguous
  EXPECT_EQ(mesh.num_devices(), 32);
  EXPECT_EQ(mesh.axis_index("gpu"), 1);
  EXPECT_EQ(mesh.axis_index("pod"), -1);
  // Rank 13 is GPU 5 of node 1: its node group is GPUs 8..15, its cross-node group 5,13,21,29.
  std::vector<int> gpu_axis{1}, node_axis{0};
  EXPECT_EQ(mesh.group_of(13, gpu_axis), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(mesh.group_of(13, node_axis), (std::vector<int>{5, 13, 21, 29}));
  EXPECT_EQ(mesh.group_shape(node_axis).ranks_per_level, (std::vector<int>{1, 4}));
}

TEST(DeviceMesh, SixtyFourFactoredAsTwoTwoTwoByTwoFour) {
  DeviceMesh mesh = DeviceMesh::factored(a100_nodes(8), {{2, 2, 2}, {2, 4}});
  ASSERT_EQ(mesh.axes().size(), 5u);
  std::vector<std::string> names;
  std::vector<int> strides;
  for (const MeshAxis& a : mesh.axes()) {
    names.push_back(a.name);
    strides.push_back(a.stride);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"node0", "node1", "node2", "gpu0", "gpu1"}));
  EXPECT_EQ(strides, (std::vector<int>{32, 16, 8, 4, 1}));
  EXPECT_EQ(mesh.num_devices(), 64);
  std::vector<int> node1_gpu0{1, 3};
  GroupShape shape = mesh.group_shape(node1_gpu0);
  EXPECT_EQ(shape.ranks_per_level, (std::vector<int>{2, 2}));
  EXPECT_EQ(shape.size(), 4);
  EXPECT_EQ(shape.outermost_level(), 1);
  // Rank 45 = node 5 (node0=1,node1=0,node2=1), GPU 5 (gpu0=1, gpu1=1):
  // varying node1 (stride 16) and gpu0 (stride 4) gives 41, 45, 57, 61.
  EXPECT_EQ(mesh.group_of(45, node1_gpu0), (std::vector<int>{41, 45, 57, 61}));
}

// Independent check of group_of: decompose ranks into mixed-radix coordinates by hand.
TEST(DeviceMesh, GroupOfMatchesCoordinateDefinitionForEveryRankAndAxisSubset) {
  DeviceMesh mesh = DeviceMesh::factored(a100_nodes(8), {{2, 2, 2}, {2, 4}});
  const std::vector<int> radix{2, 2, 2, 2, 4};  // outermost first
  auto coords = [&](int rank) {
    std::vector<int> c(radix.size());
    for (int i = static_cast<int>(radix.size()) - 1; i >= 0; --i) {
      c[i] = rank % radix[i];
      rank /= radix[i];
    }
    return c;
  };
  for (int subset = 0; subset < 32; ++subset) {
    std::vector<int> axes;
    for (int a = 0; a < 5; ++a) {
      if (subset & (1 << a)) axes.push_back(a);
    }
    for (int rank = 0; rank < 64; ++rank) {
      std::vector<int> expected;
      for (int other = 0; other < 64; ++other) {
        std::vector<int> a = coords(rank), b = coords(other);
        bool same_elsewhere = true;
        for (int i = 0; i < 5; ++i) {
          bool in_group = std::find(axes.begin(), axes.end(), i) != axes.end();
          if (!in_group && a[i] != b[i]) same_elsewhere = false;
        }
        if (same_elsewhere) expected.push_back(other);
      }
      ASSERT_EQ(mesh.group_of(rank, axes), expected) << "rank " << rank << " subset " << subset;
      ASSERT_EQ(static_cast<int>(expected.size()), mesh.group_shape(axes).size());
    }
  }
}

TEST(DeviceMesh, SixGpusOfOneNode) {
  DeviceMesh mesh = DeviceMesh::from_cluster(scale_cluster(load_cluster("dgx-a100"), std::nullopt, 6));
  EXPECT_EQ(mesh.num_devices(), 6);
  std::vector<int> gpu{mesh.axis_index("gpu")};
  EXPECT_EQ(mesh.group_of(4, gpu), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(mesh.group_shape(gpu).ranks_per_level, (std::vector<int>{6, 1}));
  DeviceMesh split = DeviceMesh::factored(scale_cluster(load_cluster("dgx-a100"), std::nullopt, 6), {{1}, {3, 2}});
  std::vector<int> inner{2};
  EXPECT_EQ(split.group_of(3, inner), (std::vector<int>{2, 3}));
}

TEST(DeviceMesh, NinetySixIsTwelveNodesOfEight) {
  DeviceMesh mesh = DeviceMesh::from_cluster(a100_nodes(12));
  EXPECT_EQ(mesh.num_devices(), 96);
  std::vector<int> node{0};
  std::vector<int> expected;
  for (int n = 0; n < 12; ++n) expected.push_back(n * 8 + 2);
  EXPECT_EQ(mesh.group_of(50, node), expected);  // rank 50 = node 6, GPU 2
  DeviceMesh factored = DeviceMesh::factored(a100_nodes(12), {{3, 4}, {8}});
  std::vector<int> node1{1};
  EXPECT_EQ(factored.group_of(50, node1), (std::vector<int>{34, 42, 50, 58}));  // nodes 4..7, GPU 2
}

TEST(DeviceMesh, RejectsBadFactorsAxesAndRanks) {
  Cluster c = a100_nodes(8);
  EXPECT_THROW(DeviceMesh::factored(c, {{2, 2}, {2, 4}}), std::runtime_error);  // 4 != 8 nodes
  EXPECT_THROW(DeviceMesh::factored(c, {{8}}), std::runtime_error);             // missing a level
  EXPECT_THROW(DeviceMesh::factored(c, {{8}, {}}), std::runtime_error);
  EXPECT_THROW(DeviceMesh::factored(c, {{8}, {0, 8}}), std::runtime_error);
  DeviceMesh mesh = DeviceMesh::from_cluster(c);
  std::vector<int> twice{0, 0}, outside{2};
  std::vector<int> gpu{1};
  EXPECT_THROW(mesh.group_shape(twice), std::runtime_error);
  EXPECT_THROW(mesh.group_shape(outside), std::runtime_error);
  EXPECT_THROW(mesh.group_of(64, gpu), std::runtime_error);
  EXPECT_THROW(mesh.group_of(-1, gpu), std::runtime_error);
  EXPECT_EQ(mesh.group_of(7, std::vector<int>{}), (std::vector<int>{7}));
  EXPECT_EQ(mesh.group_shape(std::vector<int>{}).outermost_level(), 0);
}

}  // namespace
}  // namespace symtensor::hardware
