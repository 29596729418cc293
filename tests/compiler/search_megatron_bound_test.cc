// The exhaustive Megatron search's step-bound pruning (megatron_search.h): it prices fewer
// points and finds what pricing every point finds, the best plan and the best of each
// expert-parallel size alike.
#include <gtest/gtest.h>

#include "compiler/cost/step_bound.h"
#include "compiler/search/megatron_search.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct BoundCase {
  const char* preset;
  std::int64_t layers, hidden, heads;
  const char* profile;
  int nodes, gpus;
  double batch, seq;
};

class MegatronStepBound : public ::testing::TestWithParam<BoundCase> {};

TEST_P(MegatronStepBound, PrunedSearchFindsWhatPricingEveryPointFinds) {
  const BoundCase c = GetParam();
  models::Overrides o;
  o.layers = c.layers;
  if (c.hidden > 0) o.hidden = c.hidden, o.heads = c.heads;
  Graph g = testing::zoo_graph(c.preset, o, c.batch, c.seq);
  const hardware::Cluster cluster = testing::cluster_of(c.profile, c.nodes, c.gpus);
  const StrategyOptions options;
  const NumericGraph ng(g);
  PlanAnalyzer analyzer(g, cluster, ng);
  const MegatronSearchResult pruned = megatron_search(analyzer, options, MegatronSpace::exhaustive);
  const MegatronSearchResult every = megatron_search(analyzer, options, MegatronSpace::unpruned);
  EXPECT_EQ(every.pruned, 0);
  EXPECT_GT(pruned.pruned, 0);
  EXPECT_LT(pruned.evaluations, every.evaluations);
  EXPECT_EQ(to_string(pruned.knobs), to_string(every.knobs));
  EXPECT_DOUBLE_EQ(pruned.estimate.step_time_s, every.estimate.step_time_s);
  ASSERT_EQ(pruned.best_by_ep.size(), every.best_by_ep.size());
  for (const auto& [ep, best] : every.best_by_ep) {
    ASSERT_TRUE(pruned.best_by_ep.count(ep)) << "ep=" << ep;
    EXPECT_EQ(to_string(pruned.best_by_ep.at(ep).knobs), to_string(best.knobs)) << "ep=" << ep;
    EXPECT_DOUBLE_EQ(pruned.best_by_ep.at(ep).step_time_s, best.step_time_s) << "ep=" << ep;
  }
  // The bound itself: below the chosen plan's step, stretched by its fill and drain.
  const double compute = compute_time_lower_bound(g, cluster, options, NumericGraph(g));
  const double fill_drain = (every.knobs.pp - 1) / (static_cast<double>(every.knobs.vp) * every.plan.micro_batches);
  EXPECT_GT(compute, 0);
  EXPECT_LE(compute * (1 + fill_drain), every.estimate.step_time_s);
  EXPECT_LE(compute, step_time_lower_bound(g, cluster, options));
  std::printf("%s on %d x %s: %d of %d evaluations, %d points pruned, best %s %.4f s\n", c.preset, c.nodes * c.gpus, c.profile,
              pruned.evaluations, every.evaluations, pruned.pruned, to_string(pruned.knobs).c_str(),
              pruned.estimate.step_time_s);
}

INSTANTIATE_TEST_SUITE_P(Zoo, MegatronStepBound,
                         ::testing::Values(BoundCase{"gpt2-small", 8, 1024, 16, "dgx-a100", 2, 8, 64, 1024},
                                           BoundCase{"llama2-7b", 8, 1024, 8, "dgx-h100", 4, 8, 128, 2048},
                                           BoundCase{"mixtral-8x7b", 4, 0, 0, "dgx-h100", 4, 8, 256, 2048}));

}  // namespace
}  // namespace symtensor::compiler
