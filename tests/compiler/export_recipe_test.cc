// Export: module names from ONNX scopes, the recipe recovered from a plan's mesh, cuts and
// fields, and the not-expressible items with the nearest plan priced beside the original.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/export.h"
#include "compiler/export/module_names.h"
#include "compiler/export/recipe.h"
#include "compiler/search/export_searched.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/propagation.h"
#include "compiler/analysis/transformer_structure.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

Graph llama(int layers) {
  models::Overrides o;
  o.layers = layers;
  return symtensor::testing::zoo_graph("llama2-70b-tiny", o, 16, 32);
}

Plan megatron_plan(Graph& g, const hardware::Cluster& c, const std::string& knobs) {
  StrategyOptions so;
  so.megatron = knobs;
  return make_plan("megatron", g, c, so);
}

TEST(ModuleNames, ScopePathWithoutTheOp) {
  EXPECT_EQ(module_path("/model/layers.0/self_attn/q_proj/MatMul"), "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(module_path("/blocks.0/qkv/MatMul"), "blocks.0.qkv");
  EXPECT_EQ(module_path("MatMul_3"), std::nullopt);
  EXPECT_EQ(module_path("/MatMul"), std::nullopt);
  EXPECT_EQ(layer_module("model.layers.12.mlp.down_proj"), "model.layers.12");
  EXPECT_EQ(layer_module("lm_head"), std::nullopt);
}

TEST(ModuleNames, FromTheParameterAGemmReads) {
  Graph g = llama(2);
  const TransformerStructure s = find_transformer_structure(g, node_iteration_spaces(g));
  std::set<std::string> column, row;
  for (NodeId n : s.column) column.insert(module_of_node(g, n, false).value_or("?"));
  for (NodeId n : s.row) row.insert(module_of_node(g, n, false).value_or("?"));
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) EXPECT_TRUE(column.count(std::string("model.layers.0.self_attn.") + m)) << m;
  for (const char* m : {"gate_proj", "up_proj"}) EXPECT_TRUE(column.count(std::string("model.layers.1.mlp.") + m)) << m;
  EXPECT_TRUE(row.count("model.layers.0.self_attn.o_proj"));
  EXPECT_TRUE(row.count("model.layers.1.mlp.down_proj"));
  EXPECT_EQ(column.size() + row.size(), 14u);  // 5 column and 2 row GEMMs per layer
}

TEST(Recipe, RecoversMegatronKnobsAndInvariants) {
  Graph g = llama(4);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 4);
  const Plan plan = megatron_plan(g, c, "tp=2,pp=2,vp=2,mb=2,sp=1,recompute=full,distopt=1");
  const ParallelRecipe r = recover_recipe(g, c, plan);
  EXPECT_EQ(r.tp, 2);
  EXPECT_EQ(r.pp, 2);
  EXPECT_EQ(r.vp, 2);
  EXPECT_EQ(r.cp, 1);
  EXPECT_EQ(r.dp, 2);
  EXPECT_EQ(r.micro_batch_size, 2);
  EXPECT_EQ(r.micro_batches, 4);
  EXPECT_TRUE(r.sp);
  EXPECT_TRUE(r.distopt);
  EXPECT_EQ(r.recompute, RecomputePolicy::full);
  EXPECT_EQ(r.layers, 4);
  EXPECT_EQ(r.layers_per_stage, (std::vector<int>{2, 2}));
  EXPECT_EQ(r.tp * r.pp * r.cp * r.dp, c.num_devices());
  EXPECT_EQ(r.micro_batch_size * r.dp * r.micro_batches, r.global_batch);
  EXPECT_TRUE(r.not_expressible.empty()) << r.not_expressible.front();
}

TEST(Recipe, DataParallelAndZero3) {
  Graph g = llama(2);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  const Plan plan = make_plan("zero3", g, c, StrategyOptions{});
  const ParallelRecipe r = recover_recipe(g, c, plan);
  EXPECT_EQ(r.tp, 1);
  EXPECT_EQ(r.dp, 8);
  EXPECT_EQ(r.zero_stage, 3);
  EXPECT_EQ(r.micro_batch_size * r.dp * r.micro_batches, 16);
}

TEST(Export, MegatronPlanIsExactOnMegatronAndFoldsThePipelineForJax) {
  Graph g = llama(2);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 4);
  const Plan plan = megatron_plan(g, c, "tp=2,pp=2,mb=2");
  const ExportResult m = export_plan(ExportTarget::megatron, g, c, plan);
  EXPECT_TRUE(m.exact());
  EXPECT_THAT(m.config, ::testing::HasSubstr("--tensor-model-parallel-size 2\n"));
  EXPECT_THAT(m.config, ::testing::HasSubstr("--pipeline-model-parallel-size 2\n"));
  EXPECT_THAT(m.config, ::testing::HasSubstr("--micro-batch-size 2\n"));
  EXPECT_THAT(m.config, ::testing::HasSubstr("--global-batch-size 16\n"));
  const ExportResult j = export_plan(ExportTarget::jax, g, c, plan);
  ASSERT_FALSE(j.exact());
  EXPECT_THAT(j.not_expressible.front(), ::testing::HasSubstr("pipeline parallelism pp=2"));
  ASSERT_TRUE(j.nearest.has_value());
  EXPECT_EQ(j.nearest->pipeline_stages(), 1);
  EXPECT_GT(j.nearest_step_s, 0);
  EXPECT_DOUBLE_EQ(j.original_step_s, m.original_step_s);
  EXPECT_THAT(j.nearest_yaml, ::testing::HasSubstr("predicted:"));
}

TEST(Export, APerOperatorCutIsOneLineNamingTheOperator) {
  Graph g = llama(2);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 4);
  Plan plan = megatron_plan(g, c, "tp=2");
  const TransformerStructure s = find_transformer_structure(g, node_iteration_spaces(g));
  const NodeId q = s.column.front();
  const std::vector<IterationSpace> spaces = node_iteration_spaces(g);
  plan.node_cuts[q].loop_axes[gemm_output_loop(spaces[q], weight_operand(g, s, q))].clear();
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, plan);
  ASSERT_EQ(r.not_expressible.size(), 1u) << r.not_expressible.back();
  EXPECT_THAT(r.not_expressible[0], ::testing::HasSubstr(g.node(q).name + ": output width cut 1 ways where the other layers use tp=2"));
  // The nearest plan: the recipe's own layout (tp=2) or the search's inside Megatron-LM,
  // whichever is faster; both are written exactly.
  ASSERT_TRUE(r.nearest.has_value());
  const Plan layout = megatron_plan(g, c, "tp=2");
  EXPECT_LE(r.nearest_step_s, estimate_step(analyze_plan(g, c, layout), layout, c).step_time_s);
  EXPECT_TRUE(target_items(ExportTarget::megatron, g, c, *r.nearest).empty());
  EXPECT_EQ(r.nearest_way == ExportResult::NearestWay::adjusted, r.nearest->node_cuts == layout.node_cuts);
}

// Mixtral (tiny) on 8 GPUs: experts cut 4 ways, their width with tp (etp=2) or not (etp=1).
TEST(Export, ExpertParallelismIsRecoveredAndWrittenWhereTheTargetHasIt) {
  Graph g = symtensor::testing::zoo_graph("mixtral-8x7b-tiny", {}, 16, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 8);
  for (const auto& [knobs, etp] : {std::pair<std::string, int>{"tp=2,sp=1,ep=4,mb=1", 2}, {"tp=2,sp=1,ep=4,etp=1,mb=1", 1}}) {
    SCOPED_TRACE(knobs);
    const Plan plan = megatron_plan(g, c, knobs);
    const ParallelRecipe r = recover_recipe(g, c, plan);
    EXPECT_EQ(r.tp, 2);
    EXPECT_EQ(r.dp, 4);
    EXPECT_EQ(r.ep, 4);
    EXPECT_EQ(r.etp, etp);
    EXPECT_GT(r.experts, 0);
    EXPECT_TRUE(r.not_expressible.empty()) << r.not_expressible.front();
    // The recovered knobs rebuild the plan.
    EXPECT_EQ(MegatronLayouts(g).make(c, r.knobs(), StrategyOptions{}).node_cuts, plan.node_cuts);
    const ExportResult m = export_plan(ExportTarget::megatron, g, c, plan);
    EXPECT_TRUE(m.exact());
    EXPECT_THAT(m.config, ::testing::HasSubstr("--expert-model-parallel-size 4\n"));
    EXPECT_THAT(m.config, ::testing::HasSubstr("--expert-tensor-parallel-size " + std::to_string(etp) + "\n"));
    EXPECT_THAT(m.config, ::testing::HasSubstr("--num-experts " + std::to_string(r.experts) + "\n"));
    const ExportResult n = export_plan(ExportTarget::nemo, g, c, plan);
    EXPECT_THAT(n.config, ::testing::HasSubstr("expert_model_parallel_size=4,"));
    EXPECT_THAT(n.config, ::testing::HasSubstr("expert_tensor_parallel_size=" + std::to_string(etp) + ","));
    // torchtitan's llama3 flavor builds no experts (a model gap, never exact); the plan itself is
    // torchtitan's with etp=1. etp=2 is not: the file writes the nearest plan, the search's inside it.
    const ExportResult t = export_plan(ExportTarget::torchtitan, g, c, plan);
    EXPECT_FALSE(t.exact());
    std::string gaps;
    for (const auto& item : t.not_expressible) gaps += item + "\n";
    EXPECT_THAT(gaps, ::testing::HasSubstr("model: 4 experts (top-2): torchtitan's llama3 does not build it"));
    EXPECT_EQ(target_items(ExportTarget::torchtitan, g, c, plan).empty(), etp == 1);
    if (etp == 1) {
      EXPECT_THAT(t.config, ::testing::HasSubstr("expert_parallel_degree = 4\n"));
    } else {
      EXPECT_TRUE(t.nearest && target_items(ExportTarget::torchtitan, g, c, *t.nearest).empty());
    }
    // DeepSpeed's config has no expert-parallel key: the nearest plan replicates the experts.
    const ExportResult d = export_plan(ExportTarget::deepspeed, g, c, plan);
    ASSERT_FALSE(d.exact());
    EXPECT_THAT(d.not_expressible.front(), ::testing::HasSubstr("expert parallelism ep=4"));
    ASSERT_TRUE(d.nearest.has_value());
    EXPECT_EQ(recover_recipe(g, c, *d.nearest).ep, 1);
  }
}

TEST(Export, UnknownTargetIsNamed) {
  try {
    (void)parse_export_target("caffe");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--to: unknown target 'caffe' (megatron, nemo, torchtitan, deepspeed, dtensor, jax)"));
  }
}

}  // namespace
}  // namespace symtensor::compiler
