// Propagation asks no layout of a tensor that only a Shape or Size reads besides its other
// consumers (PropagationCache::Edge::reads_dims_only): they read dims, never data. CLIP's
// class token is expanded to the batch a Shape reads off the patch embeddings; priced as a
// gather of the whole tensor, that read kept LLaVA's patch convolution whole on every rank
// under data parallelism, its gradient all-gathered every micro-batch.
#include <gtest/gtest.h>

#include "compiler/sharding/cut_sharding.h"
#include "compiler/strategies/megatron.h"
#include "strategies_test_util.h"

namespace symtensor::compiler {
namespace {

TEST(PropagationShape, AShapesInputIsCutAsItsOtherConsumersWantIt) {
  Graph g = testing::zoo_graph("llava-1.5-7b-tiny", 4, 8);
  const hardware::Cluster cluster = testing::dgx(1, 4);
  const Plan plan = make_megatron_plan(g, cluster, parse_megatron_knobs("tp=1"), StrategyOptions{});
  testing::expect_valid_plan(g, cluster, plan);
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  int shapes_of_activations = 0, convolutions = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const Node& node = g.node(n);
    if (node.op_type == "Conv") {
      ++convolutions;
      EXPECT_EQ(cut_ways(plan.node_cuts[n], mesh), 4) << node.name;  // one image a rank
    }
    if (!reads_dims_only(node)) continue;
    const NodeId producer = g.tensor(node.inputs.at(0)).producer;
    if (producer == kNone) continue;  // a graph input's Shape
    ++shapes_of_activations;
    // The tensor it reads is made cut, as the data-parallel layers after it read it.
    EXPECT_EQ(cut_ways(plan.node_cuts[producer], mesh), 4) << node.name << " reads " << g.node(producer).name;
  }
  EXPECT_EQ(convolutions, 1);
  EXPECT_GE(shapes_of_activations, 1);  // the class token's
}

}  // namespace
}  // namespace symtensor::compiler
