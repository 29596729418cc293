#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;

TEST(OpsGather, EmbeddingLookup) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s"), vocab = h.sym("vocab"), hid = h.sym("h");
  auto r = h.run("Gather", {h.tensor({vocab, hid}), h.tensor({b, s}, ElementType::i64)});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, s, hid}));
  EXPECT_EQ(r.space.input_dims[0], (V{-1, 2}));
  EXPECT_EQ(r.space.input_dims[1], (V{0, 1}));
  EXPECT_TRUE(same(r.space.flops, 0));
  // Reads the indices (8 bytes each) and the gathered rows, writes the output.
  EXPECT_TRUE(same(r.space.bytes, 8 * b * s + 2 * 4 * b * s * hid));
  // Middle axis: data [a, v, c], indices [k] -> [a, k, c].
  auto m = h.run("Gather", {h.tensor({3, vocab, 5}), h.tensor({7}, ElementType::i64)}, {{"axis", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(m.outputs[0]->shape, {3, 7, 5}));
  EXPECT_EQ(m.space.input_dims[0], (V{0, -1, 2}));
  EXPECT_EQ(m.space.input_dims[1], (V{1}));
}

TEST(OpsGather, ElementsScatterOneHotNonZero) {
  OpHarness h;
  auto b = h.sym("b");
  auto ge = h.run("GatherElements", {h.tensor({b, 10}), h.tensor({b, 3}, ElementType::i64)}, {{"axis", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(ge.outputs[0]->shape, {b, 3}));
  EXPECT_EQ(ge.space.input_dims[0], (V{0, -1}));
  auto sc = h.run("ScatterND", {h.tensor({b, 10}), h.tensor({4, 2}, ElementType::i64), h.tensor({4})});
  EXPECT_EQ(sc.space.kind, OpKind::routing);
  EXPECT_EQ(sc.space.input_dims[1], (V{-1, -1}));
  EXPECT_TRUE(same_shape(sc.outputs[0]->shape, {b, 10}));
  auto oh = h.run("OneHot", {h.tensor({b}, ElementType::i64), h.scalar_int(8), h.tensor({2})});
  EXPECT_TRUE(same_shape(oh.outputs[0]->shape, {b, 8}));
  EXPECT_EQ(oh.space.input_dims[0], (V{0}));
  auto nz = h.run("NonZero", {h.tensor({b, 4})});
  ASSERT_EQ(nz.outputs[0]->shape.size(), 2u);
  EXPECT_TRUE(same(nz.outputs[0]->shape[0], 2));
  EXPECT_TRUE(GiNaC::is_a<GiNaC::symbol>(nz.outputs[0]->shape[1]));  // data-dependent: fresh symbol
  auto nd = h.run("GatherND", {h.tensor({b, 5, 6}), h.tensor({b, 2, 1}, ElementType::i64)}, {{"batch_dims", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(nd.outputs[0]->shape, {b, 2, 6}));
  EXPECT_EQ(nd.space.input_dims[0], (V{0, -1, 2}));
}

}  // namespace
}  // namespace symtensor::compiler::testing
