#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;

TEST(OpsElementwise, BroadcastMapsStretchedDimsToNoLoop) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s"), a = h.sym("a");
  auto r = h.run("Add", {h.tensor({b, s, 768}), h.tensor({768})});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, s, 768}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 1, 2}));
  EXPECT_EQ(r.space.input_dims[1], (V{2}));
  EXPECT_TRUE(same(r.space.flops, b * s * 768));  // 1 per element
  // Attention mask [b,1,1,s] + scores [b,a,s,s].
  auto m = h.run("Add", {h.tensor({b, a, s, s}), h.tensor({b, 1, 1, s})});
  EXPECT_EQ(m.space.input_dims[1], (V{0, -1, -1, 3}));
  EXPECT_THROW(h.infer("Mul", {h.tensor({3, 4}), h.tensor({5})}), std::runtime_error);
}

TEST(OpsElementwise, FlopConventionsAndDtypes) {
  OpHarness h;
  auto n = h.sym("n");
  EXPECT_TRUE(same(h.run("Relu", {h.tensor({n})}).space.flops, n));
  EXPECT_TRUE(same(h.run("Sigmoid", {h.tensor({n})}).space.flops, 4 * n));
  EXPECT_TRUE(same(h.run("Erf", {h.tensor({n})}).space.flops, n));
  EXPECT_TRUE(same(h.run("Gelu", {h.tensor({n})}, {}, 17, 1, "com.microsoft").space.flops, 8 * n));
  EXPECT_TRUE(same(h.run("Identity", {h.tensor({n})}).space.flops, 0));
  EXPECT_TRUE(same(h.run("Sum", {h.tensor({n}), h.tensor({n}), h.tensor({n})}).space.flops, 2 * n));
  auto less = h.run("Less", {h.tensor({n}), h.tensor({})});
  EXPECT_EQ(less.outputs[0]->dtype, ElementType::boolean);
  auto w = h.run("Where", {h.tensor({n}, ElementType::boolean), h.tensor({n}, ElementType::f16), h.tensor({})});
  EXPECT_EQ(w.outputs[0]->dtype, ElementType::f16);
  auto cast = h.run("Cast", {h.tensor({n})}, {{"to", std::int64_t{10}}});
  EXPECT_EQ(cast.outputs[0]->dtype, ElementType::f16);
  // f32 [n] in, f16 [n] out: 4n + 2n bytes.
  EXPECT_TRUE(same(cast.space.bytes, 6 * n));
  auto drop = h.run("Dropout", {h.tensor({n})}, {}, 13, 2);
  EXPECT_EQ(drop.outputs[1]->dtype, ElementType::boolean);
}

TEST(OpsElementwise, ClipAttributeAndInputForms) {
  OpHarness h;
  auto n = h.sym("n");
  auto a = h.run("Clip", {h.tensor({n, 4})}, {{"min", 0.0}, {"max", 6.0}}, 6);
  EXPECT_TRUE(same_shape(a.outputs[0]->shape, {n, 4}));
  Tensor* none = nullptr;
  auto i = h.run("Clip", {h.tensor({n, 4}), none, h.tensor({})}, {}, 13);
  EXPECT_TRUE(same_shape(i.outputs[0]->shape, {n, 4}));
  EXPECT_TRUE(same(i.space.flops, 2 * n * 4));
  EXPECT_EQ(i.space.input_dims[1], V{});
}

}  // namespace
}  // namespace symtensor::compiler::testing
