// Local (per-device) shapes, the padding policy for uneven splits, replication factors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "compiler/sharding/local_shape.h"
#include "hardware/device_mesh.h"
#include "tests/compiler/sharding_test_util.h"

namespace symtensor::compiler {
namespace {

using symtensor::testing::mesh_2x4;
using symtensor::testing::num;

TEST(ShardingLocalShape, SymbolicDimsAreDividedByTheAxisProduct) {
  const auto mesh = mesh_2x4();
  GiNaC::possymbol b("b"), s("s"), h("h");
  const auto local = local_shape({b, s, h}, parse_sharding("[{node},{gpu},{}] partial{}", mesh), numeric_axis_sizes(mesh));
  ASSERT_EQ(local.extents.size(), 3u);
  EXPECT_TRUE((local.extents[0] - b / 2).is_zero());
  EXPECT_TRUE((local.extents[1] - s / 4).is_zero());
  EXPECT_TRUE((local.extents[2] - h).is_zero());
  // b/2 and s/4 hold only if 2 | b and 4 | s: recorded, not silently assumed.
  EXPECT_EQ(local.assumed_divisible, (std::vector<int>{0, 1}));
  EXPECT_FALSE(local.even());
  EXPECT_TRUE((local.elements() - b * s * h / 8).is_zero());
}

TEST(ShardingLocalShape, NumericEvenSplit) {
  const auto mesh = mesh_2x4();
  // [16, 1024, 4096] with dim 1 split node-major over node x gpu = 8: [16, 128, 4096].
  const auto local =
      local_shape({num(16), num(1024), num(4096)}, parse_sharding("[{},{node,gpu},{}]", mesh), numeric_axis_sizes(mesh));
  EXPECT_EQ(local.extents[0], num(16));
  EXPECT_EQ(local.extents[1], num(128));
  EXPECT_EQ(local.extents[2], num(4096));
  EXPECT_TRUE(local.even());
  EXPECT_EQ(local.elements(), num(16 * 128 * 4096));
}

TEST(ShardingLocalShape, UnevenSplitIsPadded) {
  const auto mesh = mesh_2x4();
  // 10 over gpu (4): ceil(10/4) = 3 per device, padded global 12 (2 elements of padding).
  // 7 over node x gpu (8): ceil(7/8) = 1, padded global 8.
  const auto local = local_shape({num(10), num(7)}, parse_sharding("[{gpu},{node}]", mesh), numeric_axis_sizes(mesh));
  EXPECT_EQ(local.extents[0], num(3));
  EXPECT_EQ(local.padded_global[0], num(12));
  EXPECT_EQ(local.extents[1], num(4));  // ceil(7/2) = 4
  EXPECT_EQ(local.padded_global[1], num(8));
  EXPECT_EQ(local.padded_dims, (std::vector<int>{0, 1}));
  EXPECT_TRUE(local.assumed_divisible.empty());
  const auto eight = local_shape({num(7)}, parse_sharding("[{node,gpu}]", mesh), numeric_axis_sizes(mesh));
  EXPECT_EQ(eight.extents[0], num(1));
  EXPECT_EQ(eight.padded_global[0], num(8));
}

TEST(ShardingLocalShape, CheckDivisibleAfterBinding) {
  const auto mesh = mesh_2x4();
  GiNaC::possymbol s("seq");
  const auto sharding = parse_sharding("[{node,gpu}]", mesh);
  check_divisible({s}, sharding, numeric_axis_sizes(mesh), {{s, 2048}});  // 2048 = 8 * 256
  try {
    check_divisible({s}, sharding, numeric_axis_sizes(mesh), {{s, 2047}});
    FAIL() << "2047 over 8 must be rejected";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("tensor dim 0 (seq = 2047) does not split evenly 8 ways"));
  }
  EXPECT_THROW(check_divisible({s}, sharding, numeric_axis_sizes(mesh), {}), std::runtime_error);
}

TEST(ShardingLocalShape, SymbolicMeshSizes) {
  const auto mesh = mesh_2x4();
  GiNaC::possymbol n("n_node"), g("n_gpu"), s("s");
  const AxisSizes sizes{n, g};
  const auto local = local_shape({s, num(64)}, parse_sharding("[{node,gpu},{}]", mesh), sizes);
  EXPECT_TRUE((local.extents[0] - s / (n * g)).is_zero());
  EXPECT_EQ(local.assumed_divisible, (std::vector<int>{0}));
  // A numeric extent over a symbolic size is also an assumption: 64 / n_gpu.
  const auto local2 = local_shape({s, num(64)}, parse_sharding("[{},{gpu}]", mesh), sizes);
  EXPECT_TRUE((local2.extents[1] - 64 / g).is_zero());
  EXPECT_EQ(local2.assumed_divisible, (std::vector<int>{1}));
}

TEST(ShardingLocalShape, RankMismatchThrows) {
  const auto mesh = mesh_2x4();
  EXPECT_THROW(local_shape({num(4)}, parse_sharding("[{},{}]", mesh), numeric_axis_sizes(mesh)), std::runtime_error);
}

TEST(ShardingReplication, FactorIsTheProductOfUnusedAxes) {
  const auto mesh = mesh_2x4();
  const auto sizes = numeric_axis_sizes(mesh);
  EXPECT_EQ(replication_factor(parse_sharding("[{},{}]", mesh), sizes), num(8));       // all 2*4 devices
  EXPECT_EQ(replication_factor(parse_sharding("[{gpu},{}]", mesh), sizes), num(2));    // node replicates
  EXPECT_EQ(replication_factor(parse_sharding("[{},{node}]", mesh), sizes), num(4));   // gpu replicates
  EXPECT_EQ(replication_factor(parse_sharding("[{gpu}] partial{node}", mesh), sizes), num(1));
  EXPECT_EQ(replication_factor(parse_sharding("[{}] partial{gpu}", mesh), sizes), num(2));
  GiNaC::possymbol n("n_node"), g("n_gpu");
  EXPECT_TRUE((replication_factor(parse_sharding("[{node}]", mesh), AxisSizes{n, g}) - g).is_zero());
}

}  // namespace
}  // namespace symtensor::compiler
