#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;
using B = std::vector<bool>;
using Ints = std::vector<std::int64_t>;

TEST(OpsReduce, ReduceSumAttributeAtOpset11InputAtOpset13) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto a = h.run("ReduceSum", {h.tensor({b, s, 64})}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}, 11);
  EXPECT_TRUE(same_shape(a.outputs[0]->shape, {b, 64}));
  EXPECT_EQ(reductions(a.space), (B{false, true, false}));
  EXPECT_EQ(a.space.output_dims[0], (V{0, 2}));
  EXPECT_TRUE(same(a.space.flops, b * s * 64));
  auto i = h.run("ReduceSum", {h.tensor({b, s, 64}), h.ints({-1})}, {}, 13);
  EXPECT_TRUE(same_shape(i.outputs[0]->shape, {b, s, 1}));
  EXPECT_EQ(i.space.output_dims[0], (V{0, 1, -1}));
  // No axes: all dims, unless noop_with_empty_axes.
  auto all = h.run("ReduceSum", {h.tensor({b, s})}, {{"keepdims", std::int64_t{0}}}, 13);
  EXPECT_TRUE(all.outputs[0]->shape.empty());
  auto noop = h.run("ReduceSum", {h.tensor({b, s})}, {{"noop_with_empty_axes", std::int64_t{1}}}, 13);
  EXPECT_TRUE(same_shape(noop.outputs[0]->shape, {b, s}));
  // ReduceMean keeps the attribute at opset 13 (input only from 18).
  auto mean = h.run("ReduceMean", {h.tensor({b, s, 64})}, {{"axes", Ints{-1}}}, 13);
  EXPECT_TRUE(same_shape(mean.outputs[0]->shape, {b, s, 1}));
  auto mean18 = h.run("ReduceMean", {h.tensor({b, s, 64}), h.ints({-1})}, {}, 18);
  EXPECT_TRUE(same_shape(mean18.outputs[0]->shape, {b, s, 1}));
  // ReduceProd of a shape value folds.
  auto prod = h.infer("ReduceProd", {h.tensor({2}, ElementType::i64, Values{b, s})}, {{"keepdims", std::int64_t{0}}});
  EXPECT_TRUE(same((*prod[0].value)[0], b * s));
  EXPECT_TRUE(same(h.run("ReduceL2", {h.tensor({b, 8})}).space.flops, 2 * b * 8));
}

TEST(OpsReduce, ArgMaxAndTopK) {
  OpHarness h;
  auto b = h.sym("b"), v = h.sym("v");
  auto am = h.run("ArgMax", {h.tensor({b, v})}, {{"axis", std::int64_t{-1}}, {"keepdims", std::int64_t{0}}});
  EXPECT_EQ(am.outputs[0]->dtype, ElementType::i64);
  EXPECT_TRUE(same_shape(am.outputs[0]->shape, {b}));
  EXPECT_EQ(reductions(am.space), (B{false, true}));
  auto k9 = h.run("TopK", {h.tensor({b, v})}, {{"k", std::int64_t{5}}}, 9, 2);
  EXPECT_TRUE(same_shape(k9.outputs[0]->shape, {b, 5}));
  EXPECT_EQ(k9.space.output_dims[1], (V{0, -1}));
  auto k11 = h.run("TopK", {h.tensor({b, v}), h.ints({2})}, {}, 11, 2);
  EXPECT_TRUE(same_shape(k11.outputs[1]->shape, {b, 2}));
  EXPECT_EQ(k11.outputs[1]->dtype, ElementType::i64);
}

}  // namespace
}  // namespace symtensor::compiler::testing
