// DeepSpeed's JSON read back (nlohmann::json) for the other models (#30): a GQA model,
// an MoE model and uneven pipeline stages (the dense models are in export_readback_test.cc).
// DeepSpeed's config carries no architecture (the model is user code), so what is read back is
// the parallel sizes, the batch triple (train_batch_size = micro x accumulation x dp) and
// ZeRO; what it cannot write (expert parallelism, uneven stages) is listed, and the JSON is the
// nearest plan's, whose recipe it must match.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compiler/export/export.h"
#include "compiler/search/export_searched.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

Plan deepspeed_case_plan(Graph& g, const hardware::Cluster& c, const std::string& knobs) {
  StrategyOptions so;
  so.megatron = knobs;
  return make_plan("megatron", g, c, so);
}

// The JSON's sizes and batch triple against the recipe written (the nearest plan's when not exact).
void expect_deepspeed_json_is_recipe(const ExportResult& r, int world, const std::string& what) {
  const nlohmann::json j = nlohmann::json::parse(r.config);
  const int tp = j.contains("tensor_parallel") ? j["tensor_parallel"]["autotp_size"].get<int>() : 1;
  const int pp = j["pipeline"]["stages"];
  const int dp = world / (tp * pp);
  EXPECT_EQ(tp, r.recipe.tp) << what;
  EXPECT_EQ(pp, r.recipe.pp) << what;
  EXPECT_EQ(dp, r.recipe.dp * r.recipe.cp) << what;
  EXPECT_EQ(j["train_batch_size"].get<long long>(),
            j["train_micro_batch_size_per_gpu"].get<long long>() * j["gradient_accumulation_steps"].get<long long>() * dp)
      << what;
  EXPECT_EQ(j["train_batch_size"].get<double>(), r.recipe.global_batch) << what;
  EXPECT_EQ(j["zero_optimization"]["stage"].get<int>(), r.recipe.zero_stage) << what;
}

bool deepspeed_item_names(const ExportResult& r, const std::string& text) {
  for (const auto& item : r.not_expressible)
    if (item.find(text) != std::string::npos) return true;
  return false;
}

TEST(DeepSpeedReadback, GroupedQueryModelIsWrittenExactly) {
  models::Overrides o;
  o.kv_heads = 2;
  Graph g = symtensor::testing::zoo_graph("llama2-70b-tiny", o, 16, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 4);
  const Plan p = deepspeed_case_plan(g, c, "tp=2,sp=0,pp=1,mb=2,fsdp=3");
  const ExportResult r = export_plan(ExportTarget::deepspeed, g, c, p);
  EXPECT_TRUE(r.exact()) << ::testing::PrintToString(r.not_expressible);
  expect_deepspeed_json_is_recipe(r, 8, "gqa");
  const nlohmann::json j = nlohmann::json::parse(r.config);
  EXPECT_EQ(j["tensor_parallel"]["autotp_size"], 2);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(j["gradient_accumulation_steps"], 2);  // 16 = 2 x 2 x 4 data-parallel ranks
  EXPECT_EQ(j["zero_optimization"]["stage"], 3);
}

TEST(DeepSpeedReadback, ExpertsAndUnevenStagesAreListedAndTheNearestPlanWritten) {
  {
    Graph g = symtensor::testing::zoo_graph("mixtral-8x7b-tiny", {}, 16, 32);
    const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 2, 4);
    const Plan p = deepspeed_case_plan(g, c, "tp=2,sp=0,pp=1,ep=4,etp=1,mb=1");
    const ExportResult r = export_plan(ExportTarget::deepspeed, g, c, p);
    EXPECT_TRUE(deepspeed_item_names(r, "expert parallelism ep=4")) << ::testing::PrintToString(r.not_expressible);
    ASSERT_TRUE(r.nearest.has_value());
    EXPECT_EQ(r.recipe.ep, 1);
    expect_deepspeed_json_is_recipe(r, 8, "moe");
  }
  {
    models::Overrides o;
    o.layers = 8;
    Graph g = symtensor::testing::zoo_graph("llama2-70b-tiny", o, 16, 32);
    const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 2, 4);
    const Plan p = deepspeed_case_plan(g, c, "tp=1,pp=2,first=3,last=5,mb=1,distopt=1");
    const ExportResult r = export_plan(ExportTarget::deepspeed, g, c, p);
    EXPECT_TRUE(deepspeed_item_names(r, "uneven pipeline stages (3,5 layers)")) << ::testing::PrintToString(r.not_expressible);
    ASSERT_TRUE(r.nearest.has_value());
    // Whatever the nearest plan is, its stages are even (PipelineModule partitions uniformly).
    EXPECT_FALSE(r.recipe.uneven_stages());
    expect_deepspeed_json_is_recipe(r, 8, "uneven");
  }
}

}  // namespace
}  // namespace symtensor::compiler
