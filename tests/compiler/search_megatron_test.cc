// SymTensor's plans against Megatron-LM's best configuration (the exhaustive megatron
// search) on small GPT and LLaMA models of the zoo, and the device counts that are not
// powers of two.
#include <algorithm>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/export/recipe.h"
#include "compiler/export/recipe_plan.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/search_common.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

models::Overrides small(std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  models::Overrides o;
  o.layers = layers, o.hidden = hidden, o.heads = heads, o.vocab = 8192, o.seq = 1024;
  return o;
}

struct VsCase {
  const char* preset;
  std::int64_t layers, hidden, heads;
  int nodes, gpus;
  double batch, seq;
};

class SearchVsMegatron : public ::testing::TestWithParam<VsCase> {};

TEST_P(SearchVsMegatron, NeverMoreThanTwoPercentSlowerThanMegatronBest) {
  const VsCase c = GetParam();
  models::Overrides o = small(c.layers, c.hidden, c.heads);
  if (std::string(c.preset).rfind("llama", 0) == 0) o.kv_heads = c.heads, o.intermediate = c.hidden * 8 / 3 / 64 * 64;
  Graph g = testing::zoo_graph(c.preset, o, c.batch, c.seq);
  const hardware::Cluster cluster = testing::cluster_of("dgx-a100", c.nodes, c.gpus);
  const StrategyOptions options;
  const MegatronSearchResult megatron = megatron_search(g, cluster, options);
  const SearchResult sym = symtensor_search(g, cluster, options);
  ASSERT_TRUE(megatron.estimate.fits);
  ASSERT_TRUE(sym.estimate.fits);
  EXPECT_GT(megatron.evaluations, 1);
  // Plan::cuts_stamp's contract: a search returns its plan unstamped, since the caller may
  // change its cuts and the analyzer would take a stamped plan's cuts as unchanged.
  EXPECT_EQ(sym.plan.cuts_stamp, 0u);
  EXPECT_EQ(megatron.plan.cuts_stamp, 0u);
  // The search's reported estimate is the plan's.
  const Evaluation again = evaluate_plan(g, cluster, sym.plan);
  ASSERT_TRUE(again.valid) << again.error;
  EXPECT_DOUBLE_EQ(again.estimate.step_time_s, sym.estimate.step_time_s);
  EXPECT_LE(sym.estimate.step_time_s, megatron.estimate.step_time_s * 1.02)
      << "symtensor " << sym.summary << " vs megatron " << to_string(megatron.knobs);
}

INSTANTIATE_TEST_SUITE_P(Zoo, SearchVsMegatron,
                         ::testing::Values(VsCase{"gpt2-small", 4, 512, 8, 2, 4, 16, 512},
                                           VsCase{"gpt2-small", 4, 1024, 16, 1, 8, 8, 1024},
                                           VsCase{"llama2-7b", 4, 512, 8, 2, 4, 16, 512},
                                           VsCase{"llama2-7b", 4, 1024, 8, 1, 8, 8, 1024}));

// Megatron-LM's splits of layers over stages that do not divide them, by hand: the middle
// stages at ceil(L / pp), else floor where ceil leaves the ends less than a layer each, never a
// stage above ceil(L / pp); L + 2 split evenly where pp divides it.
TEST(MegatronUnevenStages, SplitsByHand) {
  using Splits = std::vector<std::pair<int, int>>;
  EXPECT_EQ(megatron_uneven_splits(8, 3), (Splits{{3, 2}, {2, 3}}));    // 3/3/2, 2/3/3
  EXPECT_EQ(megatron_uneven_splits(8, 7), (Splits{{2, 1}, {1, 2}}));    // ceil 2 leaves -2: 2/1/1/1/1/1/1
  EXPECT_EQ(megatron_uneven_splits(61, 16), (Splits{{3, 2}, {2, 3}}));  // 14 middle stages of 4
  EXPECT_EQ(megatron_uneven_splits(33, 4), (Splits{{8, 7}, {7, 8}}));   // 9, 9 in the middle
  EXPECT_EQ(megatron_uneven_splits(30, 4), (Splits{{0, 0}}));           // 32 = 4 x 8: 7/8/8/7
  EXPECT_EQ(megatron_uneven_splits(32, 4), Splits{});                   // even
  EXPECT_EQ(megatron_uneven_splits(80, 32), Splits{});                  // floor leaves 10/10 above 3
  EXPECT_EQ(megatron_uneven_splits(8, 9), Splits{});
  EXPECT_EQ(megatron_uneven_splits(8, 1), Splits{});
  // Each split is one megatron_stage_layers takes, summing to the layers.
  for (auto [layers, pp] : {std::pair{8, 3}, std::pair{8, 7}, std::pair{61, 16}, std::pair{33, 4}, std::pair{30, 4}})
    for (const auto& [first, last] : megatron_uneven_splits(layers, pp)) {
      MegatronKnobs k;
      k.pp = pp, k.first = first, k.last = last;
      const std::vector<int> counts = megatron_stage_layers(k, layers);
      int total = 0;
      for (int n : counts) total += n;
      EXPECT_EQ(total, layers) << layers << " over " << pp;
      EXPECT_LE(*std::max_element(counts.begin(), counts.end()), (layers + pp - 1) / pp) << layers << " over " << pp;
    }
}

// 24 GPUs (3 nodes of 8), 8 layers, batch 256: every depth dividing the layers leaves dp with
// the factor 3 (24 / (tp x pp), tp and pp powers of two), which 256 lacks. Megatron-LM runs 3
// stages with --decoder-first/last-pipeline-num-layers; Megatron-best finds them, and the
// SymTensor search (whose seed prices them at tp = 1) is no slower.
TEST(MegatronUnevenStages, ThreeStagesTakeTheGpusNoEvenDepthCan) {
  models::Overrides o = small(8, 1024, 8);
  o.kv_heads = 8, o.intermediate = 2816;
  Graph g = testing::zoo_graph("llama2-7b", o, 256, 1024);
  const hardware::Cluster cluster = testing::cluster_of("dgx-h100", 3, 8);
  const MegatronSearchResult megatron = megatron_search(g, cluster, StrategyOptions{});
  ASSERT_TRUE(megatron.estimate.fits);
  ASSERT_EQ(megatron.knobs.pp % 3, 0) << to_string(megatron.knobs);
  const std::vector<int> layers = megatron_stage_layers(megatron.knobs, 8);
  int total = 0;
  for (int n : layers) {
    EXPECT_GE(n, 1) << to_string(megatron.knobs);
    total += n;
  }
  EXPECT_EQ(total, 8);
  if (megatron.knobs.pp == 3) {
    // The middle stage takes ceil(8 / 3) = 3, the first and last 3 and 2 in either order.
    EXPECT_EQ(layers[1], 3);
    EXPECT_EQ(megatron.knobs.first + megatron.knobs.last, 5);
    EXPECT_EQ(std::max(megatron.knobs.first, megatron.knobs.last), 3);
  }
  EXPECT_EQ(megatron.knobs.vp, 1);  // interleaving needs even stages
  // The recipe read back from the plan gives the same first and last (the nearest plan an
  // export rebuilds from it), and rebuilds the same stages.
  const ParallelRecipe recipe = recover_recipe(g, cluster, megatron.plan);
  EXPECT_EQ(recipe.knobs().first, megatron.knobs.first);
  EXPECT_EQ(recipe.knobs().last, megatron.knobs.last);
  const RecipePlan rebuilt = build_recipe_plan(g, cluster, megatron.plan, recipe);
  ASSERT_TRUE(rebuilt.plan) << rebuilt.error;
  EXPECT_EQ(rebuilt.plan->stage_of_node, megatron.plan.stage_of_node);
  const SearchResult sym = symtensor_search(g, cluster, StrategyOptions{});
  ASSERT_TRUE(sym.estimate.fits);
  EXPECT_LE(sym.estimate.step_time_s, megatron.estimate.step_time_s * (1 + 1e-9)) << sym.summary;
}

TEST(SearchDeviceCounts, SixAndTwelveDevicesGiveValidPlans) {
  for (auto [nodes, gpus] : {std::pair{1, 6}, std::pair{3, 4}}) {
    Graph g = testing::zoo_graph("gpt2-small", small(2, 384, 6), 24, 256);
    const hardware::Cluster cluster = testing::cluster_of("dgx-a100", nodes, gpus);
    const SearchResult r = symtensor_search(g, cluster, StrategyOptions{});
    EXPECT_TRUE(r.estimate.fits);
    const Evaluation e = evaluate_plan(g, cluster, r.plan);
    EXPECT_TRUE(e.valid) << e.error;
    int devices = 1;
    for (const auto& level : r.plan.mesh_factors)
      for (int f : level) devices *= f;
    EXPECT_EQ(devices, nodes * gpus);
  }
}

TEST(SearchDeviceCounts, SevenDevicesCutTheBatchWhenSevenDividesIt) {
  Graph g = testing::zoo_graph("gpt2-small", small(2, 512, 8), 14, 256);
  const hardware::Cluster cluster = testing::cluster_of("dgx-a100", 1, 7);
  const SearchResult r = symtensor_search(g, cluster, StrategyOptions{});
  EXPECT_TRUE(evaluate_plan(g, cluster, r.plan).valid);
  EXPECT_EQ(r.plan.mesh_factors, (std::vector<std::vector<int>>{{1}, {7}}));  // per topology level
}

TEST(SearchDeviceCounts, SevenDevicesWithNothingDivisibleMakeASevenStagePipeline) {
  // No loop divides by 7, but two layers have enough boundaries for 7 pipeline stages.
  Graph g = testing::zoo_graph("gpt2-small", small(2, 512, 8), 16, 256);
  const hardware::Cluster cluster = testing::cluster_of("dgx-a100", 1, 7);
  const SearchResult r = symtensor_search(g, cluster, StrategyOptions{});
  EXPECT_TRUE(evaluate_plan(g, cluster, r.plan).valid);
  EXPECT_EQ(r.plan.pipeline_stages(), 7);
}

TEST(SearchDeviceCounts, SevenDevicesWithNothingDivisibleAndTooFewLayersIsAClearError) {
  Graph g = testing::zoo_graph("gpt2-small", small(1, 512, 8), 16, 256);
  const hardware::Cluster cluster = testing::cluster_of("dgx-a100", 1, 7);
  try {
    symtensor_search(g, cluster, StrategyOptions{});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("size 7"), std::string::npos) << e.what();
  }
}

TEST(SearchMeshFactors, PrimeFactorsPerLevelPipelineFirst) {
  const hardware::Cluster c = testing::cluster_of("dgx-a100", 12, 8);
  EXPECT_EQ(search_mesh_factors(c, 1), (std::vector<std::vector<int>>{{3, 2, 2}, {2, 2, 2}}));
  EXPECT_EQ(search_mesh_factors(c, 4), (std::vector<std::vector<int>>{{4, 3}, {2, 2, 2}}));
  EXPECT_THROW(search_mesh_factors(c, 5), std::runtime_error);
  EXPECT_EQ(prime_factors(96), (std::vector<int>{3, 2, 2, 2, 2, 2}));
}

}  // namespace
}  // namespace symtensor::compiler
