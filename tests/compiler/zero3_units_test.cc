// ZeRO-3 gathers a unit at a time, as FSDP wraps each transformer layer: the lowering emits
// one gather per unit and pass, prefetched one unit ahead (two units' buffers), and the
// memory model holds those two units and one unit's gradients. On the tiny GPT (2 layers,
// h = 64, tied vocabulary 128) data parallel over 8 GPUs: a layer holds 12h² + 13h = 49,984
// parameters (QKV, projection, two MLP GEMMs with biases, two LayerNorms); the embedding,
// position table and final norm are units of their own.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "compiler/cost/memory_breakdown.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/lowering/lower_plan.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct Zero3 : ::testing::Test {
  Zero3()
      : graph(symtensor::testing::zoo_graph("gpt-1.7b-tiny", {}, 16, 32)),
        cluster(symtensor::testing::cluster_of("dgx-a100", 1, 8)),
        plan(make_plan("dp", graph, cluster, StrategyOptions{})) {
    plan.zero_stage = 3;
    plan.micro_batches = 2;
  }
  Graph graph;
  hardware::Cluster cluster;
  Plan plan;
};

TEST_F(Zero3, StagingHoldsTwoLayersWeightsAndOneLayersGradients) {
  const double h = 64, layer = 12 * h * h + 13 * h;
  ASSERT_EQ(layer, 49984);
  const auto b = memory_breakdown(graph, plan, analyze_plan(graph, cluster, plan)).at(0);
  EXPECT_DOUBLE_EQ(b.collective_buffers, 3 * layer * 2);  // 16-bit: two gathered, one of gradients
  plan.zero_stage = 2;
  EXPECT_DOUBLE_EQ(memory_breakdown(graph, plan, analyze_plan(graph, cluster, plan)).at(0).collective_buffers, layer * 2);
}

TEST_F(Zero3, OneGatherPerUnitAndPassPrefetchedOneUnitAhead) {
  // Units, counted from the graph: the layers of the parameters' first consumers, and each
  // operator outside the layers that reads a parameter first.
  std::set<std::string> layers;
  std::set<NodeId> outside;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_parameter || t.consumers.empty()) continue;
    NodeId first = t.consumers.front();
    for (NodeId c : t.consumers) first = std::min(first, c);
    const std::string layer = layer_of(graph.node(first).name);
    if (layer.empty()) outside.insert(first);
    else layers.insert(layer);
  }
  // h.0 and h.1, and the embedding's, position table's and final norm's operators (named
  // "/transformer/Gather_0" and so on: a unit each).
  const int units = static_cast<int>(layers.size() + outside.size());
  ASSERT_EQ(units, 5);
  const PlanAnalysis a = analyze_plan(graph, cluster, plan);
  LoweringOptions options;
  options.graph = &graph;
  const sim::Program p = lower_plan(a, plan, cluster, plan_mesh(plan, cluster), options);
  ASSERT_EQ(p.rank_classes.size(), 1u);
  const auto& tasks = p.rank_classes[0].tasks;
  std::vector<const sim::Task*> gathers;
  for (const auto& t : tasks)
    if (t.stream == "comm_zero") gathers.push_back(&t);
  // Forward and backward of each of the 2 micro-batches.
  EXPECT_EQ(static_cast<int>(gathers.size()), 2 * 2 * units);
  // The first two gathers of a pass wait for nothing; the third for the last compute before
  // the second (the first unit done and its buffer free), not for a later one.
  ASSERT_GE(gathers.size(), 3u);
  EXPECT_TRUE(gathers[0]->deps.empty());
  EXPECT_TRUE(gathers[1]->deps.empty());
  std::string before_second;
  for (const auto& t : tasks) {
    if (&t == gathers[1]) break;
    if (t.kind == sim::TaskKind::compute) before_second = t.id;
  }
  ASSERT_FALSE(before_second.empty());
  EXPECT_EQ(gathers[2]->deps, std::vector<std::string>{before_second});
}

}  // namespace
}  // namespace symtensor::compiler
