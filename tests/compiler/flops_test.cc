// FLOPs of a GPT-style layer from the operator semantics, against the published count:
// 24·b·s·h² + 4·b·s²·h GEMM FLOPs per layer forward (Narayanan et al. SC'21: QKV 6bsh²,
// scores 2bs²h, scores·V 2bs²h, projection 2bsh², MLP 16bsh²). Element-wise ops are not
// GEMMs and are excluded, as in the published formula.
#include <gtest/gtest.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"
#include "tests/compiler/onnx_test_util.h"

namespace symtensor::compiler {
namespace {

using namespace symtensor::testing;

onnx::ModelProto gpt_layer(std::int64_t h, std::int64_t heads) {
  const std::int64_t d = h / heads;
  const std::string b = "batch", s = "seq";
  auto m = make_model();
  add_input(m, "x", {b, s, h});
  add_initializer(m, float_tensor("w_qkv", {h, 3 * h}));
  add_initializer(m, float_tensor("w_proj", {h, h}));
  add_initializer(m, float_tensor("w_fc1", {h, 4 * h}));
  add_initializer(m, float_tensor("w_fc2", {4 * h, h}));
  add_initializer(m, int64_tensor("heads_shape", {0, 0, heads, d}));
  add_initializer(m, int64_tensor("merge_shape", {0, 0, h}));
  add_initializer(m, int64_tensor("split", {h, h, h}));
  add_node(m, "MatMul", {"x", "w_qkv"}, {"qkv"});
  auto* split = add_node(m, "Split", {"qkv", "split"}, {"q0", "k0", "v0"});
  add_int_attr(split, "axis", 2);
  for (const char* t : {"q", "k", "v"}) {
    add_node(m, "Reshape", {std::string(t) + "0", "heads_shape"}, {std::string(t) + "1"});
    auto* tr = add_node(m, "Transpose", {std::string(t) + "1"}, {std::string(t) + "2"});
    add_ints_attr(tr, "perm", std::string(t) == "k" ? std::vector<std::int64_t>{0, 2, 3, 1}
                                                    : std::vector<std::int64_t>{0, 2, 1, 3});
  }
  add_node(m, "MatMul", {"q2", "k2"}, {"scores"});
  auto* sm = add_node(m, "Softmax", {"scores"}, {"probs"});
  add_int_attr(sm, "axis", -1);
  add_node(m, "MatMul", {"probs", "v2"}, {"ctx"});
  auto* tr = add_node(m, "Transpose", {"ctx"}, {"ctx_t"});
  add_ints_attr(tr, "perm", {0, 2, 1, 3});
  add_node(m, "Reshape", {"ctx_t", "merge_shape"}, {"ctx_m"});
  add_node(m, "MatMul", {"ctx_m", "w_proj"}, {"attn"});
  add_node(m, "Add", {"x", "attn"}, {"res1"});
  add_node(m, "MatMul", {"res1", "w_fc1"}, {"fc1"});
  add_node(m, "Relu", {"fc1"}, {"act"});
  add_node(m, "MatMul", {"act", "w_fc2"}, {"fc2"});
  add_node(m, "Add", {"res1", "fc2"}, {"y"});
  add_output(m, "y", {b, s, h});
  return m;
}

TEST(Flops, GptLayerGemmFlopsMatchPublishedFormula) {
  for (auto [h, heads] : {std::pair<std::int64_t, std::int64_t>{64, 4}, {96, 8}}) {
    ImportOptions materialized;
    materialized.fusion.attention = AttentionMode::materialized;
    Graph g = import_onnx_model(gpt_layer(h, heads), "gpt_layer", materialized);
    const ModelStats stats = compute_model_stats(g);
    // Fused (the default), the attention GEMMs are one kernel with the same FLOPs (no mask).
    Graph fused = import_onnx_model(gpt_layer(h, heads), "gpt_layer");
    const ModelStats fused_stats = compute_model_stats(fused);
    const GiNaC::ex fb = fused.symbols.get("batch"), fs = fused.symbols.get("seq");
    EXPECT_TRUE((fused_stats.attention_flops - 4 * fb * fs * fs * h).expand().is_zero())
        << fused_stats.attention_flops;
    EXPECT_EQ(fused_stats.fused.count("attention"), 1u);
    const GiNaC::ex b = g.symbols.get("batch"), s = g.symbols.get("seq");
    const GiNaC::ex expected = 24 * b * s * h * h + 4 * b * s * s * h;
    EXPECT_TRUE((stats.gemm_flops - expected).expand().is_zero())
        << "h=" << h << ": got " << stats.gemm_flops << ", expected " << expected.expand();
    // Element-wise work is counted too, outside the GEMM total: strictly more FLOPs.
    EXPECT_FALSE((stats.forward_flops - stats.gemm_flops).expand().is_zero());
    EXPECT_TRUE((stats.parameter_count - 12 * h * h).expand().is_zero());
  }
}

// ONNX Runtime's com.microsoft MultiHeadAttention on packed [b, s, heads·d] operands is a
// fused attention already: 4·b·s²·h FLOPs (non-causal), its heads a loop Megatron cuts.
TEST(Flops, OnnxRuntimeMultiHeadAttentionIsFusedAttention) {
  onnx::ModelProto m = make_model();
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  const std::vector<DimSpec> shape = {std::string("batch"), std::string("seq"), std::int64_t{64}};
  for (const char* name : {"q", "k", "v"}) add_input(m, name, shape);
  auto* mha = add_node(m, "MultiHeadAttention", {"q", "k", "v"}, {"ctx"}, "attn");
  mha->set_domain("com.microsoft");
  add_int_attr(mha, "num_heads", 4);
  add_output(m, "ctx", shape);
  Graph g = import_onnx_model(m, "mha");
  const ModelStats stats = compute_model_stats(g);
  const GiNaC::ex b = g.symbols.get("batch"), s = g.symbols.get("seq");
  EXPECT_TRUE((stats.attention_flops - 4 * b * s * s * 64).expand().is_zero()) << stats.attention_flops;
  const IterationSpace space = iteration_space_of(g, 0);
  EXPECT_EQ(space.kind, OpKind::attention);
  EXPECT_EQ(space.loops.at(1).name, "h");
  EXPECT_TRUE(space.loops.at(1).extent.is_equal(4));
}

}  // namespace
}  // namespace symtensor::compiler
