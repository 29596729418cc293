#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

using V = std::vector<int>;
using B = std::vector<bool>;

TEST(OpsSoftmax, AxisIsAReductionLoop) {
  OpHarness h;
  auto b = h.sym("b"), a = h.sym("a"), s = h.sym("s");
  auto r = h.run("Softmax", {h.tensor({b, a, s, s})}, {{"axis", std::int64_t{-1}}}, 13);
  EXPECT_EQ(reductions(r.space), (B{false, false, false, true}));
  EXPECT_EQ(r.space.kind, OpKind::softmax);
  EXPECT_TRUE(same(r.space.flops, 5 * b * a * s * s));
  // Before opset 13 the input is coerced to 2-D at `axis` (default 1): all of [1, rank) is one row.
  auto old = h.run("Softmax", {h.tensor({b, a, s})}, {}, 11);
  EXPECT_EQ(reductions(old.space), (B{false, true, true}));
  auto dflt = h.run("LogSoftmax", {h.tensor({b, a, s})}, {}, 13);
  EXPECT_EQ(reductions(dflt.space), (B{false, false, true}));
}

TEST(OpsLayerNorm, HiddenDimIsReduced) {
  OpHarness h;
  auto b = h.sym("b"), s = h.sym("s");
  auto r = h.run("LayerNormalization", {h.tensor({b, s, 1024}), h.tensor({1024}), h.tensor({1024})},
                 {{"axis", std::int64_t{-1}}}, 17, 3);
  EXPECT_TRUE(same_shape(r.outputs[0]->shape, {b, s, 1024}));
  EXPECT_TRUE(same_shape(r.outputs[1]->shape, {b, s, 1}));
  EXPECT_EQ(reductions(r.space), (B{false, false, true}));
  EXPECT_EQ(r.space.input_dims[1], (V{2}));
  EXPECT_EQ(r.space.output_dims[1], (V{0, 1, -1}));
  EXPECT_TRUE(same(r.space.flops, 8 * b * s * 1024));
  auto rms = h.run("SimplifiedLayerNormalization", {h.tensor({b, s, 1024}), h.tensor({1024})}, {}, 1, 1, "com.microsoft");
  EXPECT_EQ(reductions(rms.space), (B{false, false, true}));
  EXPECT_TRUE(same(rms.space.flops, 4 * b * s * 1024));
  auto skip = h.run("SkipLayerNormalization", {h.tensor({b, s, 64}), h.tensor({b, s, 64}), h.tensor({64}), h.tensor({64})},
                    {}, 1, 4, "com.microsoft");
  EXPECT_EQ(skip.space.input_dims[1], (V{0, 1, 2}));
  EXPECT_TRUE(same_shape(skip.outputs[3]->shape, {b, s, 64}));
}

TEST(OpsBatchNorm, InferenceIsParallelTrainingReducesBatch) {
  OpHarness h;
  auto n = h.sym("N");
  auto p = [&] { return h.tensor({64}); };
  auto inf = h.run("BatchNormalization", {h.tensor({n, 64, 28, 28}), p(), p(), p(), p()}, {}, 15);
  EXPECT_EQ(reductions(inf.space), (B{false, false, false, false}));
  EXPECT_EQ(inf.space.input_dims[3], (V{1}));
  EXPECT_TRUE(same(inf.space.flops, 4 * n * 64 * 28 * 28));
  auto tr = h.run("BatchNormalization", {h.tensor({n, 64, 28, 28}), p(), p(), p(), p()}, {{"training_mode", std::int64_t{1}}},
                  15, 3);
  EXPECT_EQ(reductions(tr.space), (B{true, false, true, true}));
  EXPECT_TRUE(same_shape(tr.outputs[1]->shape, {64}));
}

}  // namespace
}  // namespace symtensor::compiler::testing
