// FLOPs of a GPT-style layer from the operator semantics, against the published count:
// 24·b·s·h² + 4·b·s²·h GEMM FLOPs per layer forward (Narayanan et al. SC'21: QKV 6bsh²,
// scores 2bs²h, scores·V 2bs²h, projection 2bsh², MLP 16bsh²). Element-wise ops are not
// GEMMs and are excluded, as in the published formula. Then MFU under 6N + 12Lhs
// (torchtitan's and PaLM's convention) beside the exact count: its terms by hand from the zoo
// configs, and what `simulate` reports with it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/analysis/model_stats.h"
#include "compiler/analysis/palm_flops.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/compiler/search_test_util.h"

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

namespace symtensor::compiler {
// Named, not anonymous: the test sources are compiled as unity batches.
namespace palm_mfu_test {

using symtensor::testing::zoo_graph;

models::Overrides small(std::int64_t seq) {
  models::Overrides o;
  o.layers = 2, o.hidden = 64, o.heads = 2, o.vocab = 512, o.seq = seq;
  return o;
}

// GPT-2 layout: per layer fused QKV 3h² + 3h, projection h² + h, MLP 2hI + I + h, two
// LayerNorms 4h; the final LayerNorm 2h; the token table once, as the tied LM head; the
// position table is only looked up and is left out.
double gpt_parameters(const models::ModelConfig& c) {
  const double h = c.hidden, i = c.intermediate;
  return c.layers * (4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h) + 2 * h + c.vocab * h;
}

TEST(PalmMfu, GptTermsByHand) {
  const models::ModelConfig c = models::apply_overrides(models::preset_config("gpt-1.7b"), small(128));
  Graph g = zoo_graph("gpt-1.7b", small(128), 16, 128);
  const PalmFlops f = palm_flops(g);
  ASSERT_TRUE(f.applies()) << f.not_applicable;
  EXPECT_EQ(f.parameters, gpt_parameters(c));
  EXPECT_EQ(f.layers, 2);
  EXPECT_EQ(f.hidden, 64);
  EXPECT_EQ(f.sequence, 128);
  EXPECT_EQ(f.per_token, 6 * gpt_parameters(c) + 12.0 * 2 * 64 * 128);
  EXPECT_FALSE(f.all_experts);
  EXPECT_EQ(palm_mfu_label(f), "MFU (6N+12Lhs, PaLM/torchtitan)");
}

TEST(PalmMfu, SimulateReportsItBesideTheExactCount) {
  const models::ModelConfig c = models::apply_overrides(models::preset_config("gpt-1.7b"), small(128));
  Graph g = zoo_graph("gpt-1.7b", small(128), 16, 128);
  const hardware::Cluster cluster = symtensor::testing::cluster_of("dgx-a100", 1, 4);
  const Plan plan = make_plan("dp", g, cluster, StrategyOptions{});
  const PlanSimulation s = simulate_plan(g, plan, cluster);
  // (6N + 12·L·h·s) per token x 128 tokens x 16 samples per step, over 4 A100s' bf16 peak.
  const double per_token = 6 * gpt_parameters(c) + 12.0 * 2 * 64 * 128;
  const double expected = per_token * 128 * 16 / s.report.step_time_s / (4 * 312e12);
  ASSERT_TRUE(s.report.mfu_6n);
  EXPECT_NEAR(*s.report.mfu_6n, expected, 1e-12 * expected);
  EXPECT_GT(s.report.mfu, 0);

  const nlohmann::json j = report_to_json(s.report, plan);
  EXPECT_EQ(j.at("mfu_6n").get<double>(), *s.report.mfu_6n);
  EXPECT_EQ(j.at("mfu").get<double>(), s.report.mfu);
  const std::string text = report_text(s.report, plan, "dp");
  EXPECT_NE(text.find("MFU (exact count): "), std::string::npos) << text;
  EXPECT_NE(text.find("MFU (6N+12Lhs, PaLM/torchtitan): "), std::string::npos) << text;
  EXPECT_NE(text.find("L = 2, h = 64, s = 128"), std::string::npos) << text;
}

// Mixtral layout: N counts top_k of the E experts' weights (3 stacked [E, h, I] each layer)
// and leaves out the untied token table, which is only looked up.
TEST(PalmMfu, MixtureOfExpertsCountsTheActiveExperts) {
  models::Overrides o;
  o.layers = 2, o.hidden = 64, o.heads = 4, o.kv_heads = 2, o.intermediate = 96, o.vocab = 128, o.seq = 64;
  o.experts = 4, o.top_k = 2;
  const models::ModelConfig c = models::apply_overrides(models::preset_config("mixtral-8x7b"), o);
  const onnx::ModelProto model = models::build_model(c);
  const double experts = c.layers * 3.0 * c.experts * c.hidden * c.intermediate;
  const double looked_up = static_cast<double>(c.vocab * c.hidden);
  const double total = static_cast<double>(models::count_parameters(model));

  Graph fused = symtensor::testing::import_bound(model, "mixtral", 8, 64);
  const PalmFlops f = palm_flops(fused);
  ASSERT_TRUE(f.applies()) << f.not_applicable;
  EXPECT_EQ(f.parameters, total - looked_up - experts * (1 - 2.0 / 4));
  EXPECT_FALSE(f.all_experts);

  // Unfused routing states no top_k: every expert counts, and the label says so.
  ImportOptions io;
  io.bindings = {{"batch", 8}, {"seq", 64}};
  io.fusion.moe = false;
  io.warn_opaque = false;
  Graph unfused = import_onnx_model(model, "mixtral", io);
  const PalmFlops all = palm_flops(unfused);
  ASSERT_TRUE(all.applies()) << all.not_applicable;
  EXPECT_EQ(all.parameters, total - looked_up);
  EXPECT_TRUE(all.all_experts);
  EXPECT_NE(palm_mfu_label(all).find("every expert"), std::string::npos);
}

TEST(PalmMfu, NotApplicableWithoutASequenceDim) {
  Graph g = zoo_graph("resnet50-tiny", {}, 8, 0);
  const PalmFlops f = palm_flops(g);
  EXPECT_FALSE(f.applies());
  EXPECT_NE(f.not_applicable.find("sequence"), std::string::npos) << f.not_applicable;
  const hardware::Cluster cluster = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  Plan plan;
  EXPECT_FALSE(palm_mfu(f, plan.mode == ExecutionMode::train, plan.precision, cluster, 100.0));
  EXPECT_EQ(describe_palm_flops(f), "not applicable (" + f.not_applicable + ")");
}

}  // namespace palm_mfu_test
}  // namespace symtensor::compiler
