#include <algorithm>

#include "tests/compiler/ops_test_support.h"

namespace symtensor::compiler::testing {
namespace {

TEST(OpsRegistry, DomainsAndCoverage) {
  EXPECT_EQ(find_op_rule("", "MatMul"), find_op_rule("ai.onnx", "MatMul"));
  EXPECT_NE(find_op_rule("com.microsoft", "SimplifiedLayerNormalization"), nullptr);
  EXPECT_EQ(find_op_rule("", "SimplifiedLayerNormalization"), nullptr);
  EXPECT_EQ(find_op_rule("", "NoSuchOp"), nullptr);
  auto types = supported_op_types();
  for (const char* op :
       {"MatMul", "Gemm", "Einsum", "Conv", "ConvTranspose", "Add", "Where", "Clip", "Cast", "Erf", "Sigmoid", "Tanh",
        "Relu", "Dropout", "Identity", "Softmax", "LogSoftmax", "LayerNormalization", "BatchNormalization", "ReduceMean",
        "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ArgMax", "Gather", "GatherElements", "ScatterND",
        "ScatterElements", "Reshape", "Transpose", "Concat", "Split", "Slice", "Squeeze", "Unsqueeze", "Flatten", "Expand",
        "Tile", "Pad", "Shape", "Size", "ConstantOfShape", "Range", "Constant", "TopK", "OneHot", "NonZero", "MaxPool",
        "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Resize", "com.microsoft:SimplifiedLayerNormalization",
        "com.microsoft:Gelu"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), op), types.end()) << op;
  }
  for (const auto& name : types) {
    auto colon = name.find(':');
    const OpRule* rule = colon == std::string::npos ? find_op_rule("", name)
                                                    : find_op_rule(name.substr(0, colon), name.substr(colon + 1));
    ASSERT_NE(rule, nullptr) << name;
    EXPECT_TRUE(rule->infer && rule->iteration_space) << name;
  }
}

TEST(OpsRegistry, DuplicateRegistrationIsAnError) {
  OpRegistry r;
  r.add("", "Foo", {});
  EXPECT_THROW(r.add("ai.onnx", "Foo", {}), std::runtime_error);
}

TEST(OpsRegistry, OpaqueSpaceHasNoLoops) {
  OpHarness h;
  Tensor* x = h.tensor({4, 8});
  Tensor* y = h.tensor({2});
  Node n = h.node("Mystery", 1, {}, 17, 1);
  IterationSpace s = opaque_iteration_space(OpContext{n, {x}, {y}, h.symbols});
  EXPECT_TRUE(s.loops.empty());
  EXPECT_EQ(s.input_dims[0], (std::vector<int>{-1, -1}));
  EXPECT_TRUE(same(s.bytes, 4 * 32 + 4 * 2));
}

}  // namespace
}  // namespace symtensor::compiler::testing
