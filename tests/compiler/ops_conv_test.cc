#include "compiler/ops/op_helpers.h"
#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;
using Ints = std::vector<std::int64_t>;

TEST(OpsConv, ResNetStride2Downsample) {
  // ResNet-50 stage transition: X [N,64,56,56], W [128,64,3,3], stride 2, pads 1:
  // Hout = floor((56 + 1 + 1 - 3) / 2) + 1 = floor(55/2) + 1 = 28.
  OpHarness h;
  auto n = h.sym("N");
  auto r = h.run("Conv", {h.tensor({n, 64, 56, 56}), h.tensor({128, 64, 3, 3})},
                 {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"kernel_shape", Ints{3, 3}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {n, 128, 28, 28}));
  // loops: n, c_out, o0, o1, c_in (red), k0 (red), k1 (red)
  ASSERT_EQ(r.space.loops.size(), 7u);
  EXPECT_EQ(reductions(r.space), (std::vector<bool>{false, false, false, false, true, true, true}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 4, 2, 3}));
  EXPECT_EQ(r.space.input_dims[1], (V{1, 4, 5, 6}));
  EXPECT_EQ(r.space.output_dims[0], (V{0, 1, 2, 3}));
  // 2 * N * Cout * Hout * Wout * Cin/g * kh * kw
  EXPECT_TRUE(same(r.space.flops, 2 * n * 128 * 28 * 28 * 64 * 3 * 3));
  EXPECT_EQ(r.space.kind, OpKind::convolution);
}

TEST(OpsConv, StemWithBiasAndAutoPad) {
  OpHarness h;
  // 7x7 stride 2 pad 3 on 224: floor((224 + 6 - 7) / 2) + 1 = 112.
  auto r = h.run("Conv", {h.tensor({1, 3, 224, 224}), h.tensor({64, 3, 7, 7}), h.tensor({64})},
                 {{"strides", Ints{2, 2}}, {"pads", Ints{3, 3, 3, 3}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {1, 64, 112, 112}));
  EXPECT_EQ(r.space.input_dims[2], (V{1}));
  EXPECT_TRUE(same(r.space.flops, 2 * 64 * 112 * 112 * 3 * 49 + 64 * 112 * 112));
  // SAME_UPPER stride 2 on 15: ceil(15/2) = 8.
  auto s = h.run("Conv", {h.tensor({1, 3, 15, 15}), h.tensor({8, 3, 3, 3})},
                 {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  EXPECT_TRUE(same_shape(s.outputs[0]->shape, {1, 8, 8, 8}));
  // Dilation 2, no pad: effective kernel 5, 32 - 5 + 1 = 28.
  auto d = h.run("Conv", {h.tensor({1, 3, 32, 32}), h.tensor({8, 3, 3, 3})}, {{"dilations", Ints{2, 2}}});
  EXPECT_TRUE(same_shape(d.outputs[0]->shape, {1, 8, 28, 28}));
}

TEST(OpsConv, DepthwiseGroups) {
  OpHarness h;
  auto n = h.sym("N");
  auto r = h.run("Conv", {h.tensor({n, 32, 112, 112}), h.tensor({32, 1, 3, 3})},
                 {{"group", std::int64_t{32}}, {"pads", Ints{1, 1, 1, 1}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {n, 32, 112, 112}));
  // loops: n, g, c_out(1), o0, o1, c_in(1, red), k0, k1
  ASSERT_EQ(r.space.loops.size(), 8u);
  EXPECT_EQ(r.space.loops[1].name, "g");
  EXPECT_EQ(r.space.input_dims[0], (V{0, 1, 3, 4}));
  EXPECT_EQ(r.space.input_dims[1], (V{1, 5, 6, 7}));
  EXPECT_EQ(r.space.output_dims[0], (V{0, 1, 3, 4}));
  EXPECT_TRUE(same(r.space.flops, 2 * n * 32 * 112 * 112 * 1 * 3 * 3));
}

TEST(OpsConv, ConvTranspose) {
  OpHarness h;
  // X [1,16,8,8], W [16,8,4,4], stride 2, pads 1: 2*(8-1) + 0 + 4 - 2 = 16.
  auto r = h.run("ConvTranspose", {h.tensor({1, 16, 8, 8}), h.tensor({16, 8, 4, 4})},
                 {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {1, 8, 16, 16}));
  EXPECT_TRUE(same(r.space.flops, 2 * 16 * 8 * 8 * 8 * 16));
  EXPECT_EQ(r.space.input_dims[1], (V{4, 1, 5, 6}));  // [c_in, c_out, k0, k1]
}

TEST(OpsPool, MaxPoolAndGlobalAverage) {
  OpHarness h;
  auto n = h.sym("N");
  // 3x3 stride 2 pad 1 on 112: floor((112 + 2 - 3)/2) + 1 = 56.
  auto r = h.run("MaxPool", {h.tensor({n, 64, 112, 112})},
                 {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {n, 64, 56, 56}));
  EXPECT_TRUE(same(r.space.flops, n * 64 * 56 * 56 * 9));
  EXPECT_EQ(reductions(r.space), (std::vector<bool>{false, false, false, false, true, true}));
  // ceil_mode: ceil((7 - 2)/2) + 1 = 4.
  auto c = h.run("AveragePool", {h.tensor({1, 1, 7, 7})},
                 {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(c.outputs[0]->shape, {1, 1, 4, 4}));
  auto g = h.run("GlobalAveragePool", {h.tensor({n, 2048, 7, 7})});
  EXPECT_TRUE(same_shape(g.outputs[0]->shape, {n, 2048, 1, 1}));
  EXPECT_EQ(g.space.output_dims[0], (V{0, 1, -1, -1}));
  EXPECT_EQ(reductions(g.space), (std::vector<bool>{false, false, true, true}));
}

// A window's output extent over a symbolic dim is floor((H + pads - k) / s) + 1 (ceil in
// ceil_mode), kept symbolic and exact once H is bound to any size, odd or even (a vision
// model exported with dynamic H and W axes, bound H = 33).
TEST(OpsConv, SymbolicStride2ExtentsFloorOnOddSizes) {
  OpHarness h;
  auto n = h.sym("N");
  auto height = h.sym("H");
  auto at = [&](const GiNaC::ex& e, int value) { return e.subs(height == value); };
  // Conv 3x3 stride 2 pad 1: floor((H + 2 - 3) / 2) + 1.
  auto conv = h.run("Conv", {h.tensor({n, 3, height, height}), h.tensor({8, 3, 3, 3})},
                    {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  const GiNaC::ex e = conv.outputs[0]->shape[2];
  EXPECT_TRUE(at(e, 33).is_equal(17));  // floor(32/2) + 1
  EXPECT_TRUE(at(e, 32).is_equal(16));  // floor(31/2) + 1
  EXPECT_TRUE(at(e, 1).is_equal(1));    // floor(0/2) + 1
  // ResNet's 1x1 stride-2 downsample of the same input: the same expression, so the residual Add matches.
  auto down = h.run("Conv", {h.tensor({n, 3, height, height}), h.tensor({8, 3, 1, 1})}, {{"strides", Ints{2, 2}}});
  EXPECT_TRUE(down.outputs[0]->shape[2].is_equal(e));
  // MaxPool 2x2 stride 2 ceil_mode on it: ceil((e - 2) / 2) + 1.
  auto pool = h.run("MaxPool", {h.tensor({n, 8, e, e})},
                    {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}});
  const GiNaC::ex p = pool.outputs[0]->shape[2];
  EXPECT_TRUE(at(p, 33).is_equal(9));  // e = 17: ceil(15/2) + 1
  EXPECT_TRUE(at(p, 32).is_equal(8));  // e = 16: ceil(14/2) + 1
  EXPECT_TRUE(at(p, 30).is_equal(8));  // e = 15: ceil(13/2) + 1
  EXPECT_TRUE(GiNaC::is_a<GiNaC::function>(p));  // floor_div(floor_div(H + 1, 2) + 1, 2), not (H + 3) / 4
  // SAME_UPPER stride 2: ceil(H / 2).
  auto same_pad = h.run("Conv", {h.tensor({n, 3, height, height}), h.tensor({8, 3, 3, 3})},
                        {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  EXPECT_TRUE(at(same_pad.outputs[0]->shape[2], 33).is_equal(17));
  EXPECT_TRUE(at(same_pad.outputs[0]->shape[2], 32).is_equal(16));
  // Whole multiples leave the constant term; exact quotients are quotients.
  EXPECT_TRUE((ops::floor_div(height - 1, 2) + 1).is_equal(ops::floor_div(height + 1, 2)));
  EXPECT_TRUE(GiNaC::ex(ops::floor_div(2 * height + 4, 2)).is_equal(height + 2));
  EXPECT_TRUE(GiNaC::ex(ops::floor_div(-7, 2)).is_equal(-4));
}

TEST(OpsPool, ResizeSizesAndUpsampleScales) {
  OpHarness h;
  auto n = h.sym("N");
  Tensor* none = nullptr;
  auto r = h.run("Resize", {h.tensor({n, 3, 8, 8}), none, none, h.tensor({4}, ElementType::i64, Values{n, 3, 16, 16})}, {}, 13);
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {n, 3, 16, 16}));
  auto u = h.run("Upsample", {h.tensor({n, 3, 8, 8})}, {{"scales", std::vector<double>{1, 1, 2, 2}}}, 7);
  EXPECT_TRUE(same_shape(u.outputs[0]->shape, {n, 3, 16, 16}));
  EXPECT_TRUE(same(u.space.flops, 0));  // nearest
}

}  // namespace
}  // namespace symtensor::compiler::testing
