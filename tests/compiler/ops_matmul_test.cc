#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;

TEST(OpsMatMul, TransformerFfnUp) {
  // [b,s,h] x [h,4h] -> [b,s,4h]; loops b, m=s, n=4h, k=h (reduction).
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s"), hid = h.sym("h");
  auto r = h.run("MatMul", {h.tensor({b, s, hid}), h.tensor({hid, 4 * hid})});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, s, 4 * hid}));
  ASSERT_EQ(r.space.loops.size(), 4u);
  EXPECT_EQ(reductions(r.space), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 1, 3}));
  EXPECT_EQ(r.space.input_dims[1], (V{3, 2}));
  EXPECT_EQ(r.space.output_dims[0], (V{0, 1, 2}));
  EXPECT_TRUE(same(r.space.flops, 2 * b * s * hid * 4 * hid));
  // f32: reads b*s*h + 4h^2 elements, writes 4*b*s*h, 4 bytes each.
  EXPECT_TRUE(same(r.space.bytes, 4 * (b * s * hid + 4 * hid * hid + 4 * b * s * hid)));
  EXPECT_EQ(r.space.kind, OpKind::gemm);
}

TEST(OpsMatMul, BatchedAttentionScores) {
  OpHarness h;
  auto b = h.sym("b"), a = h.sym("a"), s = h.sym("s"), d = h.sym("d");
  auto r = h.run("MatMul", {h.tensor({b, a, s, d}), h.tensor({b, a, d, s})});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, a, s, s}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 1, 2, 4}));
  EXPECT_EQ(r.space.input_dims[1], (V{0, 1, 4, 3}));
  EXPECT_EQ(r.space.output_dims[0], (V{0, 1, 2, 3}));
  EXPECT_TRUE(same(r.space.flops, 2 * b * a * s * s * d));
  EXPECT_EQ(to_string(r.space).substr(0, 40), "([b0,b1,m,k],[b0,b1,k,n])->([b0,b1,m,n])");
}

TEST(OpsMatMul, BroadcastBatchAndVectors) {
  OpHarness h;
  auto e = h.sym("e"), s = h.sym("s");
  // [1,s,64] x [e,64,32]: A's size-1 batch dim is stretched, so it maps to no loop.
  auto r = h.run("MatMul", {h.tensor({1, s, 64}), h.tensor({e, 64, 32})});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {e, s, 32}));
  EXPECT_EQ(r.space.input_dims[0], (V{-1, 1, 3}));
  EXPECT_EQ(r.space.input_dims[1], (V{0, 3, 2}));
  // 1-D left operand: [64] x [64,32] -> [32]; loops n, k.
  auto v = h.run("MatMul", {h.tensor({64}), h.tensor({64, 32})});
  EXPECT_TRUE(same_shape(v.outputs[0]->shape, {32}));
  EXPECT_EQ(v.space.input_dims[0], (V{1}));
  EXPECT_EQ(v.space.input_dims[1], (V{1, 0}));
  EXPECT_TRUE(same(v.space.flops, 2 * 64 * 32));
  // 1-D right operand: [s,64] x [64] -> [s].
  auto w = h.run("MatMul", {h.tensor({s, 64}), h.tensor({64})});
  EXPECT_TRUE(same_shape(w.outputs[0]->shape, {s}));
  EXPECT_EQ(w.space.input_dims[1], (V{1}));
  EXPECT_THROW(h.infer("MatMul", {h.tensor({s, 64}), h.tensor({32, 8})}), std::runtime_error);
}

TEST(OpsGemm, TransposedWeightWithBias) {
  OpHarness h;
  auto m = h.sym("m");
  // A [m,768], B [3072,768] with transB=1, C [3072] -> [m,3072]; loops m, n, k.
  auto r = h.run("Gemm", {h.tensor({m, 768}), h.tensor({3072, 768}), h.tensor({3072})}, {{"transB", std::int64_t{1}}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {m, 3072}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 2}));
  EXPECT_EQ(r.space.input_dims[1], (V{1, 2}));
  EXPECT_EQ(r.space.input_dims[2], (V{1}));
  EXPECT_TRUE(same(r.space.flops, 2 * m * 3072 * 768 + m * 3072));
  auto t = h.run("Gemm", {h.tensor({768, m}), h.tensor({768, 10})}, {{"transA", std::int64_t{1}}});
  EXPECT_EQ(t.space.input_dims[0], (V{2, 0}));
  EXPECT_TRUE(same_shape(t.outputs[0]->shape, {m, 10}));
}

TEST(OpsEinsum, LinearLayer) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto r = h.run("Einsum", {h.tensor({b, s, 512}), h.tensor({512, 2048})}, {{"equation", std::string("bsh,hf->bsf")}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, s, 2048}));
  ASSERT_EQ(r.space.loops.size(), 4u);  // b, s, h, f in order of appearance
  EXPECT_EQ(r.space.loops[2].name, "h");
  EXPECT_EQ(reductions(r.space), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(r.space.input_dims[0], (V{0, 1, 2}));
  EXPECT_EQ(r.space.input_dims[1], (V{2, 3}));
  EXPECT_EQ(r.space.output_dims[0], (V{0, 1, 3}));
  EXPECT_TRUE(same(r.space.flops, 2 * b * s * 512 * 2048));
}

TEST(OpsEinsum, MoeDispatch) {
  // GShard dispatch: tokens [g,s,m] routed by a mask [g,s,e,c] into [e,g,c,m]; s is summed.
  OpHarness h;
  auto g = h.sym("g"), s = h.sym("s"), e = h.sym("e"), c = h.sym("c"), m = h.sym("m");
  auto r = h.run("Einsum", {h.tensor({g, s, e, c}), h.tensor({g, s, m})}, {{"equation", std::string("gsec,gsm->egcm")}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {e, g, c, m}));
  EXPECT_EQ(reductions(r.space), (std::vector<bool>{false, true, false, false, false}));  // g s e c m
  EXPECT_EQ(r.space.input_dims[1], (V{0, 1, 4}));
  EXPECT_EQ(r.space.output_dims[0], (V{2, 0, 3, 4}));
  EXPECT_TRUE(same(r.space.flops, 2 * g * s * e * c * m));
}

TEST(OpsEinsum, ImplicitOutputAndEllipsis) {
  OpHarness h;
  auto r = h.run("Einsum", {h.tensor({3, 4}), h.tensor({4, 5})}, {{"equation", std::string("ij,jk")}});
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {3, 5}));
  auto b = h.sym("b");
  auto e = h.run("Einsum", {h.tensor({b, 7, 3, 4}), h.tensor({4, 5})}, {{"equation", std::string("...ij,jk->...ik")}});
  EXPECT_TRUE(same_shape(e.outputs[0]->shape, {b, 7, 3, 5}));
  EXPECT_EQ(e.space.input_dims[1], (V{3, 4}));  // loops ...0 ...1 i j k
  EXPECT_TRUE(same(e.space.flops, 2 * b * 7 * 3 * 4 * 5));
  auto t = h.run("Einsum", {h.tensor({3, 4})}, {{"equation", std::string("ij->ji")}});
  EXPECT_EQ(t.space.kind, OpKind::data_movement);
  EXPECT_TRUE(same(t.space.flops, 0));
}

}  // namespace
}  // namespace symtensor::compiler::testing
