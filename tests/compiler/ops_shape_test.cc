#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;

// PyTorch's head split: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), i)) ..., [a, d])).
TEST(OpsShapeFolding, ShapeGatherUnsqueezeConcatReshape) {
  OpHarness h;
  auto batch = h.sym("batch"), seq = h.sym("seq");
  Tensor* x = h.tensor({batch, seq, 768});
  Tensor* shape = h.run("Shape", {x}).outputs[0];
  ASSERT_TRUE(shape->value);
  EXPECT_TRUE(same_shape(*shape->value, {batch, seq, 768}));
  Tensor* b = h.run("Gather", {shape, h.scalar_int(0)}, {{"axis", std::int64_t{0}}}).outputs[0];
  EXPECT_TRUE(b->shape.empty());
  ASSERT_TRUE(b->value);
  EXPECT_TRUE(same((*b->value)[0], batch));
  Tensor* s = h.run("Gather", {shape, h.scalar_int(1)}).outputs[0];
  Tensor* b1 = h.run("Unsqueeze", {b, h.ints({0})}, {}, 13).outputs[0];          // axes as input
  Tensor* s1 = h.run("Unsqueeze", {s}, {{"axes", std::vector<std::int64_t>{0}}}, 11).outputs[0];  // attribute
  Tensor* target = h.run("Concat", {b1, s1, h.ints({12, 64})}, {{"axis", std::int64_t{0}}}).outputs[0];
  ASSERT_TRUE(target->value);
  EXPECT_TRUE(same_shape(*target->value, {batch, seq, 12, 64}));
  auto r = h.run("Reshape", {x, target});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {batch, seq, 12, 64}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 1, 2}));  // 768 = 12 x 64 maps to the outer loop
  EXPECT_TRUE(same(r.space.flops, 0));

  // The -1 form: [batch, -1, 12, 64] infers seq = batch*seq*768 / (batch*12*64).
  Tensor* t2 = h.run("Concat", {b1, h.ints({-1, 12, 64})}, {{"axis", std::int64_t{0}}}).outputs[0];
  auto r2 = h.run("Reshape", {x, t2});
  ASSERT_EQ(r2.outputs[0]->shape.size(), 4u);
  EXPECT_TRUE(r2.outputs[0]->shape[1].is_equal(seq));
  // 0 copies the input dim.
  auto r3 = h.run("Reshape", {x, h.ints({0, 0, -1, 64})});
  EXPECT_TRUE(same_shape(r3.outputs[0]->shape, {batch, seq, 12, 64}));
}

TEST(OpsShape, ReshapeMergeMapsOuterDim) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s"), hid = h.sym("h");
  Tensor* target = h.tensor({2}, ElementType::i64, Values{b * s, hid});
  auto r = h.run("Reshape", {h.tensor({b, s, hid}), target});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b * s, hid}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, -1, 1}));
  EXPECT_EQ(r.space.output_dims[0], (V{0, 1}));
  auto f = h.run("Flatten", {h.tensor({b, 3, 4})}, {{"axis", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(f.outputs[0]->shape, {b, 12}));
  EXPECT_EQ(f.space.input_dims[0], (V{0, 1, -1}));
  EXPECT_THROW(h.infer("Reshape", {h.tensor({6, 4}), h.ints({5, 5})}), std::runtime_error);
}

TEST(OpsShape, TransposeMapsByPermutation) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto r = h.run("Transpose", {h.tensor({b, s, 12, 64})}, {{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, 12, s, 64}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 2, 1, 3}));
  auto d = h.run("Transpose", {h.tensor({2, 3, 5})});  // default: reversed
  EXPECT_TRUE(same_shape(d.outputs[0]->shape, {5, 3, 2}));
  EXPECT_EQ(d.space.input_dims[0], (V{2, 1, 0}));
}

TEST(OpsShape, SqueezeAttributeAndInputForms) {
  OpHarness h;
  auto b = h.sym("b");
  auto a11 = h.run("Squeeze", {h.tensor({b, 1, 8})}, {{"axes", std::vector<std::int64_t>{1}}}, 11);
  EXPECT_TRUE(same_shape(a11.outputs[0]->shape, {b, 8}));
  EXPECT_EQ(a11.space.input_dims[0], (V{0, -1, 1}));
  auto a13 = h.run("Squeeze", {h.tensor({b, 1, 8}), h.ints({-2})}, {}, 13);
  EXPECT_TRUE(same_shape(a13.outputs[0]->shape, {b, 8}));
  auto all = h.run("Squeeze", {h.tensor({1, b, 1})}, {}, 13);
  EXPECT_TRUE(same_shape(all.outputs[0]->shape, {b}));
  EXPECT_THROW(h.infer("Squeeze", {h.tensor({b, 2}), h.ints({1})}, {}, 13), std::runtime_error);
  auto u = h.run("Unsqueeze", {h.tensor({b, 8}), h.ints({0, -1})}, {}, 13);
  EXPECT_TRUE(same_shape(u.outputs[0]->shape, {1, b, 8, 1}));
  EXPECT_EQ(u.space.input_dims[0], (V{1, 2}));
}

TEST(OpsShape, SplitAttributeInputAndEqualForms) {
  OpHarness h;
  auto b = h.sym("b");
  auto a = h.run("Split", {h.tensor({b, 6})}, {{"axis", std::int64_t{1}}, {"split", std::vector<std::int64_t>{2, 4}}}, 11, 2);
  EXPECT_TRUE(same_shape(a.outputs[0]->shape, {b, 2}));
  EXPECT_TRUE(same_shape(a.outputs[1]->shape, {b, 4}));
  EXPECT_EQ(a.space.input_dims[0], (V{0, 1}));
  EXPECT_EQ(a.space.output_dims[1], (V{0, -1}));
  auto i = h.run("Split", {h.tensor({b, 6}), h.ints({1, 5})}, {{"axis", std::int64_t{-1}}}, 13, 2);
  EXPECT_TRUE(same_shape(i.outputs[1]->shape, {b, 5}));
  auto hid = h.sym("h");
  auto q = h.run("Split", {h.tensor({b, 3 * hid})}, {{"axis", std::int64_t{1}}}, 13, 3);  // fused QKV
  EXPECT_TRUE(same_shape(q.outputs[2]->shape, {b, hid}));
  auto v = h.infer("Split", {h.ints({4, 5, 6})}, {}, 13, 2);
  EXPECT_TRUE(same_shape(*v[1].value, {6}));  // ceil(3/2) = 2, then 1
}

TEST(OpsShape, SliceOpset9AttributesAndOpset13Inputs) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  Attrs attrs{{"starts", std::vector<std::int64_t>{1}}, {"ends", std::vector<std::int64_t>{INT64_MAX}},
              {"axes", std::vector<std::int64_t>{1}}};
  auto a = h.run("Slice", {h.tensor({b, s, 64})}, attrs, 9);
  EXPECT_TRUE(same_shape(a.outputs[0]->shape, {b, s - 1, 64}));
  EXPECT_EQ(a.space.input_dims[0], (V{0, -1, 2}));
  // Last token: starts -1, ends INT64_MAX on axis 1.
  auto l = h.run("Slice", {h.tensor({b, s, 64}), h.ints({-1}), h.ints({INT64_MAX}), h.ints({1})}, {}, 13);
  EXPECT_TRUE(same_shape(l.outputs[0]->shape, {b, 1, 64}));
  // Numeric with step 2 and clamping: [0:100:2] of 10 -> 5; reversal [::-1] of 10 -> 10.
  auto n = h.run("Slice", {h.tensor({10}), h.ints({0}), h.ints({100}), h.ints({0}), h.ints({2})}, {}, 13);
  EXPECT_TRUE(same_shape(n.outputs[0]->shape, {5}));
  auto rev = h.run("Slice", {h.tensor({s}), h.ints({-1}), h.ints({INT64_MIN}), h.ints({0}), h.ints({-1})}, {}, 13);
  EXPECT_TRUE(same_shape(rev.outputs[0]->shape, {s}));
  // Values: Shape(x)[1:3].
  auto v = h.infer("Slice", {h.tensor({3}, ElementType::i64, Values{b, s, 64}), h.ints({1}), h.ints({3})}, {}, 13);
  EXPECT_TRUE(same_shape(*v[0].value, {s, 64}));
}

// Steps over symbolic extents keep floor and ceil (ONNX: ceil((end - start) / step) elements),
// checked at odd and even bindings; exact quotients stay plain quotients.
TEST(OpsShape, SteppedSliceRangeAndSplitKeepCeilOverSymbolicExtents) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto at = [&](const GiNaC::ex& e, int value) { return e.subs(s == value); };
  // x[:, ::2]: ceil(s / 2).
  auto even = h.run("Slice", {h.tensor({b, s}), h.ints({0}), h.ints({INT64_MAX}), h.ints({1}), h.ints({2})}, {}, 13);
  const GiNaC::ex half = even.outputs[0]->shape[1];
  EXPECT_TRUE(at(half, 17).is_equal(9));
  EXPECT_TRUE(at(half, 16).is_equal(8));
  // x[:, 1::3]: ceil((s - 1) / 3).
  auto third = h.run("Slice", {h.tensor({b, s}), h.ints({1}), h.ints({INT64_MAX}), h.ints({1}), h.ints({3})}, {}, 13);
  EXPECT_TRUE(at(third.outputs[0]->shape[1], 17).is_equal(6));  // 1, 4, ..., 16
  EXPECT_TRUE(at(third.outputs[0]->shape[1], 16).is_equal(5));  // 1, 4, ..., 13
  // Full reversal with step -2: ceil(s / 2).
  auto rev = h.run("Slice", {h.tensor({s}), h.ints({-1}), h.ints({INT64_MIN}), h.ints({0}), h.ints({-2})}, {}, 13);
  EXPECT_TRUE(at(rev.outputs[0]->shape[0], 7).is_equal(4));  // 6, 4, 2, 0
  // Range(0, s, 3): ceil(s / 3); Range(s, 0, -2): ceil(s / 2).
  auto up = h.infer("Range", {h.scalar_int(0), h.tensor({}, ElementType::i64, Values{s}), h.scalar_int(3)});
  EXPECT_TRUE(at(up[0].shape[0], 10).is_equal(4));
  EXPECT_TRUE(at(up[0].shape[0], 9).is_equal(3));
  auto down = h.infer("Range", {h.tensor({}, ElementType::i64, Values{s}), h.scalar_int(0), h.scalar_int(-2)});
  EXPECT_TRUE(at(down[0].shape[0], 7).is_equal(4));  // 7, 5, 3, 1
  // Split into 3 equal parts (opset 18 num_outputs): ceil(s / 3) each, the rest last.
  auto parts = h.run("Split", {h.tensor({b, s})}, {{"axis", std::int64_t{1}}, {"num_outputs", std::int64_t{3}}}, 18, 3);
  EXPECT_TRUE(at(parts.outputs[0]->shape[1], 10).is_equal(4));
  EXPECT_TRUE(at(parts.outputs[2]->shape[1], 10).is_equal(2));
  EXPECT_TRUE(at(parts.outputs[2]->shape[1], 9).is_equal(3));
  // 5 in 4 ceil-sized parts would leave -1 for the last: refused, not written.
  EXPECT_THROW(h.run("Split", {h.tensor({b, 5})}, {{"axis", std::int64_t{1}}, {"num_outputs", std::int64_t{4}}}, 18, 4),
               std::runtime_error);
  // Exact: x[:, ::2] of 2s is s, and a fused 3h split in three is h.
  auto exact = h.run("Slice", {h.tensor({b, 2 * s}), h.ints({0}), h.ints({INT64_MAX}), h.ints({1}), h.ints({2})}, {}, 13);
  EXPECT_TRUE(exact.outputs[0]->shape[1].is_equal(s));
}

TEST(OpsShape, ConcatExpandTilePad) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto c = h.run("Concat", {h.tensor({b, s, 64}), h.tensor({b, 1, 64})}, {{"axis", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(c.outputs[0]->shape, {b, s + 1, 64}));
  EXPECT_EQ(c.space.input_dims[1], (V{0, -1, 2}));
  auto e = h.run("Expand", {h.tensor({1, s, 1}), h.tensor({3}, ElementType::i64, Values{b, 1, 64})});
  EXPECT_TRUE(same_shape(e.outputs[0]->shape, {b, s, 64}));
  EXPECT_EQ(e.space.input_dims[0], (V{-1, 1, -1}));
  auto t = h.run("Tile", {h.tensor({b, 8}), h.ints({1, 3})});
  EXPECT_TRUE(same_shape(t.outputs[0]->shape, {b, 24}));
  EXPECT_EQ(t.space.input_dims[0], (V{0, -1}));
  auto p2 = h.run("Pad", {h.tensor({b, 3, 8, 8})}, {{"pads", std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}}, 2);
  EXPECT_TRUE(same_shape(p2.outputs[0]->shape, {b, 3, 10, 10}));
  EXPECT_EQ(p2.space.input_dims[0], (V{0, 1, -1, -1}));
  auto p13 = h.run("Pad", {h.tensor({b, 3, 8, 8}), h.ints({0, 0, 1, 1, 0, 0, 1, 1})}, {}, 13);
  EXPECT_TRUE(same_shape(p13.outputs[0]->shape, {b, 3, 10, 10}));
}

TEST(OpsShape, ValueSources) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto size = h.infer("Size", {h.tensor({b, s, 4})});
  EXPECT_TRUE(same((*size[0].value)[0], 4 * b * s));
  auto part = h.infer("Shape", {h.tensor({b, s, 4})}, {{"start", std::int64_t{-2}}}, 15);
  EXPECT_TRUE(same_shape(*part[0].value, {s, 4}));
  auto cos = h.run("ConstantOfShape", {h.tensor({2}, ElementType::i64, Values{b, s})});
  EXPECT_TRUE(same_shape(cos.outputs[0]->shape, {b, s}));
  ASSERT_TRUE(cos.outputs[0]->value == std::nullopt);  // rank 2: no value kept
  auto ones = h.infer("ConstantOfShape", {h.ints({2})}, {{"value", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(*ones[0].value, {1, 1}));
  // A `value` tensor the importer left unconverted: elements unknown, never guessed as 0.
  auto opaque_fill = h.infer("ConstantOfShape", {h.ints({2})}, {{"value", std::string()}});
  EXPECT_TRUE(same_shape(opaque_fill[0].shape, {2}));
  EXPECT_FALSE(opaque_fill[0].value.has_value());
  auto range = h.infer("Range", {h.scalar_int(0), h.tensor({}, ElementType::i64, Values{s}), h.scalar_int(1)});
  EXPECT_TRUE(same_shape(range[0].shape, {s}));
  auto r5 = h.infer("Range", {h.scalar_int(2), h.scalar_int(11), h.scalar_int(3)});
  EXPECT_TRUE(same_shape(*r5[0].value, {2, 5, 8}));  // ceil(9/3) = 3 elements
  auto k = h.infer("Constant", {}, {{"value_ints", std::vector<std::int64_t>{1, -1}}});
  EXPECT_TRUE(same_shape(*k[0].value, {1, -1}));
  // Arithmetic on shape values: head_dim = h / heads, seq + 1.
  auto div = h.infer("Div", {h.tensor({}, ElementType::i64, Values{768 * b}), h.scalar_int(12)});
  EXPECT_TRUE(same((*div[0].value)[0], 64 * b));
  auto truncated = h.infer("Div", {h.scalar_int(7), h.scalar_int(2)});
  EXPECT_TRUE(same((*truncated[0].value)[0], 3));
  auto eq = h.infer("Equal", {h.ints({3, -1}), h.scalar_int(-1)});
  EXPECT_TRUE(same_shape(*eq[0].value, {0, 1}));
  auto where = h.infer("Where", {h.tensor({2}, ElementType::boolean, Values{0, 1}), h.ints({5, 5}), h.tensor({2}, ElementType::i64, Values{b, s})});
  EXPECT_TRUE(same_shape(*where[0].value, {b, 5}));
}

}  // namespace
}  // namespace symtensor::compiler::testing
