// Backward (dual) redistributions: all-gather <-> reduce-scatter, all-reduce <-> nothing,
// slice <-> all-gather, all-to-all <-> all-to-all, with the forward's bytes.
#include <gtest/gtest.h>

#include "compiler/sharding/redistribution.h"
#include "tests/compiler/sharding_test_util.h"

namespace symtensor::compiler {
namespace {

using Kind = RedistributionKind;

using symtensor::testing::mesh_2x4;  // axes: node (0), gpu (1)

struct Pair {
  Redistribution forward, backward;
};

struct Dims {
  GiNaC::possymbol b{"b"}, s{"s"}, h{"h"};
};
const Dims& dims() {
  static const Dims d;
  return d;
}

// [b, s, h] bf16 with b, s, h symbolic.
Pair forward_and_dual(const char* from, const char* to) {
  const auto& [b, s, h] = dims();
  const auto mesh = mesh_2x4();
  Pair p;
  p.forward = plan_redistribution(parse_sharding(from, mesh), parse_sharding(to, mesh), {b, s, h}, 2, mesh);
  p.backward = plan_dual(p.forward, mesh);
  return p;
}

std::string text(const TensorSharding& s) { return to_string(s, mesh_2x4()); }

TEST(ShardingDual, AllGatherBecomesReduceScatterOfTheSameBytes) {
  // Megatron-SP: gather the seq-split activation; its gradient arrives partial.
  const auto p = forward_and_dual("[{},{gpu},{}]", "[{},{},{}]");
  ASSERT_EQ(p.forward.steps.size(), 1u);
  ASSERT_EQ(p.backward.steps.size(), 1u);
  EXPECT_EQ(p.forward.steps[0].kind, Kind::all_gather);
  EXPECT_EQ(p.backward.steps[0].kind, Kind::reduce_scatter);
  EXPECT_EQ(text(p.backward.from), "[{},{},{}] partial{gpu}");
  EXPECT_EQ(text(p.backward.to), "[{},{gpu},{}] partial{}");
  EXPECT_EQ(p.backward.steps[0].axes, p.forward.steps[0].axes);
  EXPECT_TRUE((p.backward.steps[0].bytes - p.forward.steps[0].bytes).is_zero());
}

TEST(ShardingDual, ReduceScatterBecomesAllGather) {
  const auto p = forward_and_dual("[{},{},{}] partial{gpu}", "[{},{gpu},{}]");
  ASSERT_EQ(p.backward.steps.size(), 1u);
  EXPECT_EQ(p.backward.steps[0].kind, Kind::all_gather);
  EXPECT_EQ(text(p.backward.to), "[{},{},{}] partial{}");  // a partial value's gradient is replicated
  EXPECT_TRUE((p.backward.steps[0].bytes - p.forward.steps[0].bytes).is_zero());
}

TEST(ShardingDual, AllReduceBecomesNothing) {
  // Megatron's g: all-reduce forward, identity backward.
  const auto p = forward_and_dual("[{},{},{}] partial{gpu}", "[{},{},{}]");
  ASSERT_EQ(p.forward.steps.size(), 1u);
  EXPECT_EQ(p.forward.steps[0].kind, Kind::all_reduce);
  EXPECT_TRUE(p.backward.steps.empty());
  EXPECT_EQ(text(p.backward.from), "[{},{},{}] partial{}");
}

TEST(ShardingDual, SliceBecomesAllGather) {
  // Forward slice is free; its gradient (split) must be gathered back to the replicated producer.
  const auto p = forward_and_dual("[{},{},{}]", "[{gpu},{},{}]");
  ASSERT_EQ(p.forward.steps.size(), 1u);
  EXPECT_EQ(p.forward.steps[0].kind, Kind::slice);
  ASSERT_EQ(p.backward.steps.size(), 1u);
  EXPECT_EQ(p.backward.steps[0].kind, Kind::all_gather);
  EXPECT_EQ(p.backward.steps[0].dim, 0);
  // The gathered gradient is the whole tensor: b*s*h*2 bytes.
  EXPECT_TRUE((p.backward.steps[0].bytes - 2 * dims().b * dims().s * dims().h).is_zero()) << p.backward.steps[0].bytes;
  EXPECT_EQ(text(p.backward.to), "[{},{},{}] partial{}");
}

TEST(ShardingDual, AllToAllBecomesTheReverseAllToAll) {
  const auto p = forward_and_dual("[{},{gpu},{}]", "[{},{},{gpu}]");
  ASSERT_EQ(p.backward.steps.size(), 1u);
  EXPECT_EQ(p.backward.steps[0].kind, Kind::all_to_all);
  EXPECT_EQ(p.backward.steps[0].dim, 2);
  EXPECT_EQ(p.backward.steps[0].to_dim, 1);
  EXPECT_TRUE((p.backward.steps[0].bytes - p.forward.steps[0].bytes).is_zero());
}

TEST(ShardingDual, MultiAxisPlanReversesStepByStep) {
  // Forward: reduce-scatter over gpu onto seq, then all-reduce over node.
  // Backward: all-gather over gpu only (the all-reduce's dual is nothing), same S.
  const auto p = forward_and_dual("[{},{},{}] partial{node,gpu}", "[{},{gpu},{}]");
  ASSERT_EQ(p.forward.steps.size(), 2u);
  ASSERT_EQ(p.backward.steps.size(), 1u);
  EXPECT_EQ(p.backward.steps[0].kind, Kind::all_gather);
  EXPECT_EQ(p.backward.steps[0].axes, (std::vector<int>{1}));
  EXPECT_TRUE((p.backward.steps[0].bytes - p.forward.steps[0].bytes).is_zero());
}

TEST(ShardingDual, GradientShardingsPerAxis) {
  const auto mesh = mesh_2x4();
  // node: split -> replicated by all-gather => partial gradient at the `to` end.
  // gpu: partial -> replicated by all-reduce => replicated gradient at both ends.
  const auto [grad_to, grad_from] =
      gradient_shardings(parse_sharding("[{node},{}] partial{gpu}", mesh), parse_sharding("[{},{}]", mesh));
  EXPECT_EQ(to_string(grad_to, mesh), "[{},{}] partial{node}");
  EXPECT_EQ(to_string(grad_from, mesh), "[{node},{}] partial{}");
}

}  // namespace
}  // namespace symtensor::compiler
