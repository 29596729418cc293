// Selective recomputation as torchtitan runs it (hardware::SelectiveRecompute::every_other_matmul,
// torchtitan's activation checkpointing "op" option): a layer keeps its input, the outputs of
// every other matmul (the 1st, 3rd, ... in order) and of the attention kernel, and recomputes
// the rest in the backward. Megatron's selective recomputation recomputes only the attention
// core (with a fused kernel: nothing).
#include <iostream>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/export.h"
#include "compiler/search/export_searched.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr std::int64_t kSacHidden = 64, kSacMlp = 128, kSacSeq = 16, kSacBatch = 2, kSacLayers = 2;

struct SacPriced {
  Graph graph;
  Plan plan;
  PlanAnalysis analysis;
};

SacPriced sac_price(const std::string& stack, RecomputePolicy recompute) {
  models::Overrides o;
  o.layers = kSacLayers, o.hidden = kSacHidden, o.heads = 2, o.kv_heads = 2, o.intermediate = kSacMlp, o.vocab = 256, o.seq = kSacSeq;
  SacPriced p{symtensor::testing::zoo_graph("llama2-7b", o, kSacBatch, kSacSeq), {}, {}};
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 1, 1), {stack});
  StrategyOptions so;
  p.plan = make_plan("dp", p.graph, c, so);
  p.plan.recompute = recompute;
  p.analysis = analyze_plan(p.graph, c, p.plan);
  return p;
}

TEST(OpLevelSelective, KeepsEveryOtherMatmulAndTheAttentionOutputs) {
  const SacPriced full = sac_price("torchtitan", RecomputePolicy::full);
  SacPriced op = sac_price("torchtitan", RecomputePolicy::selective);
  // Per layer and token, in bf16: q_proj (64) and v_proj (64), the 1st and 3rd of q, k, v, o;
  // gate_proj (128) the 5th, down_proj (64) the 7th; the attention's output (64).
  const double tokens = kSacBatch * kSacSeq;
  const double kept_per_layer = 2 * tokens * (kSacHidden + kSacHidden + kSacMlp + kSacHidden + kSacHidden);
  EXPECT_DOUBLE_EQ(op.analysis.stage_memory[0].activations_per_micro_batch -
                       full.analysis.stage_memory[0].activations_per_micro_batch,
                   kSacLayers * kept_per_layer);
  // The weight matmuls of each layer, in the order they run: the 2nd, 4th and 6th are recomputed.
  const NumericGraph ng(op.graph);
  std::map<int, int> seen;  // layer -> weight matmuls so far
  std::vector<char> recomputed(op.graph.nodes().size(), 0);
  for (const OpWork& w : op.analysis.ops) recomputed[w.node] = w.recomputed;
  int kept_gemms = 0, recomputed_gemms = 0;
  for (NodeId id : ng.topological_order()) {
    const Node& node = op.graph.node(id);
    const int layer = ng.node_layers()[id];
    if (node.op_type == "FusedAttention") {
      EXPECT_FALSE(recomputed[id]) << node.name;
    }
    if (node.op_type == "Pow" && layer >= 0) {
      EXPECT_TRUE(recomputed[id]) << node.name;  // the norms
    }
    if (node.op_type != "MatMul" || layer < 0) continue;
    bool weight = false;
    for (TensorId in : node.inputs) weight = weight || (in != kNone && op.graph.tensor(in).is_parameter);
    if (!weight) continue;
    EXPECT_EQ(static_cast<bool>(recomputed[id]), seen[layer]++ % 2 == 1) << node.name;
    (recomputed[id] ? recomputed_gemms : kept_gemms) += 1;
  }
  EXPECT_EQ(kept_gemms, 4 * kSacLayers);
  EXPECT_EQ(recomputed_gemms, 3 * kSacLayers);
  // Megatron's selective recomputation with fused attention recomputes nothing.
  const SacPriced megatron = sac_price("megatron", RecomputePolicy::selective);
  for (const OpWork& w : megatron.analysis.ops) EXPECT_FALSE(w.recomputed) << megatron.graph.node(w.node).name;
}

// The op-level policy is one of the searched choices inside torchtitan (issue #30): Llama 3 8B
// on one DGX H100 at 8 x 16k with one rank per data-parallel replica (tp=1, pp=1, cp=1 given):
// nothing recomputed does not fit, full recomputation fits and is slower, so the search inside
// torchtitan takes the op policy, and the TOML writes it as torchtitan's "op" option.
TEST(OpLevelSelective, SearchedInsideTorchtitanAndWrittenAsOp) {
  Graph g = symtensor::testing::zoo_graph("llama3-8b", {}, 8, 16384);
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 1, 8), {"torchtitan"});
  StrategyOptions so;
  so.bound = ExportTarget::torchtitan;
  so.megatron = "tp=1,pp=1,cp=1";
  const Plan plan = make_plan("megatron", g, c, so);
  ASSERT_EQ(plan.recompute, RecomputePolicy::selective);
  const StepEstimate chosen = estimate_step(analyze_plan(g, c, plan), plan, c);
  EXPECT_TRUE(chosen.fits);
  Plan none = plan, full = plan;
  none.recompute = RecomputePolicy::none, full.recompute = RecomputePolicy::full;
  EXPECT_FALSE(estimate_step(analyze_plan(g, c, none), none, c).fits);
  const StepEstimate full_e = estimate_step(analyze_plan(g, c, full), full, c);
  EXPECT_TRUE(full_e.fits);
  EXPECT_LT(chosen.step_time_s, full_e.step_time_s);
  // It recomputes part of each layer: more hardware FLOPs than model FLOPs, fewer than full's.
  const PlanAnalysis a = analyze_plan(g, c, plan), f = analyze_plan(g, c, full);
  const StageTotals ta = stage_totals(a, plan), tf = stage_totals(f, full);
  EXPECT_GT(ta.hardware_flops, ta.model_flops);
  EXPECT_LT(ta.hardware_flops, tf.hardware_flops);
  const ExportResult e = export_plan(ExportTarget::torchtitan, g, c, plan);
  EXPECT_TRUE(e.exact()) << (e.not_expressible.empty() ? "" : e.not_expressible.front());
  EXPECT_NE(e.config.find("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n"), std::string::npos)
      << e.config;
}

// A plan priced with Megatron-LM's selective recomputation (the default stack's attention-core
// policy) is not what torchtitan's selective mode runs (the op-level policy recomputes all but
// every other matmul): its torchtitan export lists the item and writes a nearest plan, both
// predicted, instead of "expressed exactly" with the op option. The search inside torchtitan on
// that stack leaves selective out, so its plan exports exactly. The other way round, a plan
// priced with the op-level policy is not Megatron-LM's or NeMo's selective recomputation.
TEST(OpLevelSelective, AnotherStacksSelectiveIsNotWrittenAsTorchtitans) {
  Graph g = symtensor::testing::zoo_graph("llama3-8b", {}, 8, 16384);
  const hardware::Cluster mc = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  ASSERT_EQ(mc.stack.selective_recompute, hardware::SelectiveRecompute::attention_core);
  StrategyOptions so;
  so.megatron = "tp=1,pp=1,cp=1,recompute=selective";
  const Plan plan = make_plan("megatron", g, mc, so);
  ASSERT_EQ(plan.recompute, RecomputePolicy::selective);
  const ExportResult e = export_plan(ExportTarget::torchtitan, g, mc, plan);
  EXPECT_FALSE(e.exact());
  bool named = false;
  for (const auto& item : e.not_expressible) named |= item.find("torchtitan's selective mode (option op)") != std::string::npos;
  EXPECT_TRUE(named) << ::testing::PrintToString(e.not_expressible);
  ASSERT_TRUE(e.nearest.has_value());
  EXPECT_NE(e.nearest->recompute, RecomputePolicy::selective);
  EXPECT_EQ(e.config.find("selective_ac_option"), std::string::npos) << e.config;
  EXPECT_EQ(e.config.find("the plan is expressed exactly"), std::string::npos);
  EXPECT_NE(e.config.find("predicted step time of the nearest expressible plan"), std::string::npos);
  EXPECT_DOUBLE_EQ(e.original_step_s, estimate_step(analyze_plan(g, mc, plan), plan, mc).step_time_s);
  // The plan adjusted item by item (full recomputation) is one of the two candidates: the
  // nearest plan is at most as slow when that one fits.
  Plan full = plan;
  full.recompute = RecomputePolicy::full;
  const StepEstimate full_e = estimate_step(analyze_plan(g, mc, full), full, mc);
  if (full_e.fits) {
    EXPECT_LE(e.nearest_step_s, full_e.step_time_s * (1 + 1e-9));
  }
  std::cout << "Megatron-selective plan " << e.original_step_s << " s; torchtitan's nearest " << e.nearest_step_s << " s ("
            << to_string(e.nearest->recompute) << "; " << e.nearest_how << ")\n";
  const std::string summary = export_summary(e, "torchtitan.toml");
  EXPECT_NE(summary.find("nearest step time"), std::string::npos) << summary;
  EXPECT_NE(summary.find("plan step time"), std::string::npos) << summary;

  // Inside torchtitan on the Megatron stack: no selective, and the export is exact.
  StrategyOptions inside;
  inside.bound = ExportTarget::torchtitan;
  inside.megatron = "tp=1,pp=1,cp=1";
  const Plan bounded = make_plan("megatron", g, mc, inside);
  EXPECT_NE(bounded.recompute, RecomputePolicy::selective);
  EXPECT_TRUE(target_items(ExportTarget::torchtitan, g, mc, bounded).empty());

  // Priced as torchtitan's op-level policy: not Megatron-LM's or NeMo's selective mode.
  const hardware::Cluster tc = hardware::with_software(mc, {"torchtitan"});
  for (ExportTarget t : {ExportTarget::megatron, ExportTarget::nemo}) {
    const std::vector<std::string> items = target_items(t, g, tc, plan);
    bool op_named = false;
    for (const auto& item : items) op_named |= item.find("recomputes the attention core only; nearest: full") != std::string::npos;
    EXPECT_TRUE(op_named) << to_string(t) << ": " << ::testing::PrintToString(items);
  }
  EXPECT_TRUE(target_items(ExportTarget::torchtitan, g, tc, plan).empty());
}

TEST(OpLevelSelective, StackKeyIsCheckedAndNamed) {
  const hardware::Stack tt = hardware::load_stack("torchtitan");
  EXPECT_EQ(tt.selective_recompute, hardware::SelectiveRecompute::every_other_matmul);
  EXPECT_EQ(hardware::load_stack("megatron").selective_recompute, hardware::SelectiveRecompute::attention_core);
  try {
    hardware::parse_stack("name: x\nbase: megatron\nrecompute:\n  selective: every_matmul\n", "x.yaml");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "x.yaml:4:14: key 'recompute.selective': expected attention_core or every_other_matmul");
  }
}

// The searches leave selective recomputation out where it prices as none
// (selective_recompute_is_none): with fused attention under Megatron's attention-core policy
// the two estimates are the same to the bit; with the scores materialized, or under
// torchtitan's op-level policy, selective recomputation changes the price and is searched.
TEST(SelectiveRecomputeIsNone, OnlyWhereItPricesAsNoRecomputation) {
  models::Overrides o;
  o.layers = 2, o.hidden = 64, o.heads = 2, o.kv_heads = 2, o.intermediate = 128, o.vocab = 256, o.seq = 16;
  const hardware::Cluster megatron = symtensor::testing::cluster_of("dgx-h100", 1, 1);
  const hardware::Cluster torchtitan = hardware::with_software(megatron, {"torchtitan"});
  Graph fused = symtensor::testing::zoo_graph("llama2-7b", o, 2, 16);
  ImportOptions io;
  io.bindings = {{"batch", 2}, {"seq", 16}};
  io.warn_opaque = false;
  io.fusion.attention = AttentionMode::materialized;
  Graph scores = import_onnx_model(models::build_model(models::apply_overrides(models::preset_config("llama2-7b"), o)),
                                   "llama2-7b", io);
  auto step_and_memory = [](Graph& g, const hardware::Cluster& c, RecomputePolicy recompute) {
    Plan plan = make_plan("dp", g, c, StrategyOptions{});
    plan.recompute = recompute;
    const StepEstimate e = estimate_step(analyze_plan(g, c, plan), plan, c);
    return std::pair{e.step_time_s, e.peak_memory};
  };
  EXPECT_TRUE(selective_recompute_is_none(NumericGraph(fused), megatron.stack));
  EXPECT_EQ(step_and_memory(fused, megatron, RecomputePolicy::selective), step_and_memory(fused, megatron, RecomputePolicy::none));
  EXPECT_FALSE(selective_recompute_is_none(NumericGraph(scores), megatron.stack));
  EXPECT_NE(step_and_memory(scores, megatron, RecomputePolicy::selective), step_and_memory(scores, megatron, RecomputePolicy::none));
  EXPECT_FALSE(selective_recompute_is_none(NumericGraph(fused), torchtitan.stack));
  EXPECT_NE(step_and_memory(fused, torchtitan, RecomputePolicy::selective), step_and_memory(fused, torchtitan, RecomputePolicy::none));
}

}  // namespace
}  // namespace symtensor::compiler
