// Propagation remembers each visit's choice by the node's class and neighbourhood
// (PropagationCache::choices): plans propagated through one cache, on several meshes and
// after each other, must be those propagated from scratch.
#include <gtest/gtest.h>

#include "compiler/strategies/megatron.h"
#include "compiler/strategies/propagation.h"
#include "strategies_test_util.h"

namespace symtensor::compiler {
namespace {

TEST(PropagationMemo, SharedCacheGivesTheCutsOfFreshOnes) {
  Graph g = testing::zoo_graph("gpt-1.7b-tiny", 16, 32);
  const hardware::Cluster cluster = testing::dgx(2, 4);
  const StrategyOptions options;
  MegatronLayouts shared(g);  // one cache for every plan below
  for (const char* knobs : {"tp=4", "tp=2,pp=2", "tp=4,sp=1", "tp=4"}) {
    SCOPED_TRACE(knobs);
    const MegatronKnobs k = parse_megatron_knobs(knobs);
    const Plan reused = shared.make(cluster, k, options);
    const Plan fresh = make_megatron_plan(g, cluster, k, options);
    EXPECT_EQ(reused.node_cuts, fresh.node_cuts);
    testing::expect_valid_plan(g, cluster, reused);
  }
}

TEST(PropagationMemo, RepeatedLayersShareChoices) {
  Graph g = testing::zoo_graph("gpt-1.7b-tiny", 16, 32);
  const hardware::Cluster cluster = testing::dgx(1, 4);
  Plan plan = make_megatron_plan(g, cluster, parse_megatron_knobs("tp=4"), StrategyOptions{});
  std::vector<bool> fixed(g.nodes().size(), false);
  PropagationCache cache;
  propagate_cuts(g, plan_mesh(plan, cluster), plan, fixed, node_iteration_spaces(g), &cache);
  std::vector<int> classes = cache.node_class;
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  EXPECT_LT(classes.size(), g.nodes().size());  // the layers' nodes share classes
  EXPECT_LT(cache.choices.size(), g.nodes().size());
}

}  // namespace
}  // namespace symtensor::compiler
