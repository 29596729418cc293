// The level step prices a partial sum that no edge reduces. The LM head's output reaches the
// logits through an Identity, a cheap operator, so no folded edge leaves it; cut over its
// reduction dim (k), every micro-batch's logits are then all-reduced where they are read.
// Unpriced, the k-cut looked cheaper than data parallelism (no gradient all-reduce of the
// 131M-parameter head), and the search's own 3-stage pipeline for LLaMA-2 7B at 8 layers on
// 24 H100 cut the head over k: 765 ms against Megatron-LM's 530 ms.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/search/level_problem.h"
#include "compiler/search/search_common.h"
#include "compiler/search/symtensor_search.h"
#include "hardware/collectives.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr double kSeq = 2048, kVocab = 32000;

Graph llama_layers(int layers, double batch) {
  models::Overrides o;
  o.layers = layers;
  o.seq = static_cast<int>(kSeq);
  return symtensor::testing::zoo_graph("llama2-7b", o, batch, kSeq);
}

hardware::Cluster three_h100_nodes() {
  return hardware::with_software(hardware::load_cluster("dgx-h100x3"), hardware::Software{});
}

TEST(LevelPartialSum, TheLmHeadsReductionCutPaysTheLogitsAllReduce) {
  Graph g = llama_layers(1, 256);
  const hardware::Cluster cluster = three_h100_nodes();
  NumericGraph ng(g);
  const FoldedGraph folded = fold_graph(ng);
  ASSERT_FALSE(folded.heavy.empty());
  // The last heavy operator is the LM head: [mb, seq, 4096] x [4096, 32000].
  const int head = static_cast<int>(folded.heavy.size()) - 1;
  const NodeId id = folded.heavy[head];
  const double micro_batch = 8;  // 256 samples in 32 micro-batches, as the search prices pp=3
  const int m = 32;
  const TensorId logits = g.node(id).outputs.at(0);
  ASSERT_EQ(ng.facts(logits).elements.at(micro_batch), micro_batch * kSeq * kVocab);
  ASSERT_FALSE(ng.facts(logits).graph_output);  // an Identity writes the graph's logits
  for (const FoldedEdge& e : folded.edges) ASSERT_NE(e.from, head) << "an edge leaves the LM head";

  Plan plan;
  plan.mesh_factors = search_mesh_factors(cluster, 3);
  plan.pipeline_axis = 0;  // node=3 (pipeline) x gpu0=2 x gpu1=2 x gpu2=2
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  ASSERT_EQ(mesh.axes().size(), 4u);
  ASSERT_EQ(mesh.axes()[0].size, 3);
  const int axis = 1;  // the first GPU axis inside a node
  LevelContext ctx;
  ctx.ng = &ng, ctx.folded = &folded, ctx.cluster = &cluster, ctx.mesh = &mesh;
  ctx.micro_batch = micro_batch, ctx.micro_batches = m;
  std::vector<NodeCut> none(folded.heavy.size());
  for (std::size_t h = 0; h < none.size(); ++h) none[h].loop_axes.resize(ng.node(folded.heavy[h]).loops.size());
  const CutProblem problem = build_level_problem(ctx, axis, none);
  const CutProblemNode& node = problem.nodes.at(head);
  const CutChoice *k = nullptr, *batch = nullptr;
  for (const CutChoice& c : node.choices) {
    if (c.loop < 0) continue;
    const NumericLoop& loop = ng.node(id).loops[c.loop];
    if (loop.reduction) k = &c;
    else if (loop.extent.at(micro_batch) == micro_batch) batch = &c;
  }
  ASSERT_NE(k, nullptr) << "the head's reduction dim is not offered on the axis";
  ASSERT_NE(batch, nullptr) << "the head's batch dim is not offered on the axis";
  // By hand, against the batch cut (the same FLOPs per GPU, compute-bound): the k-cut
  // all-reduces each micro-batch's logits, 8 x 2048 x 32000 bf16 values (1.05 GB), 32 times a
  // step, and saves the once-a-step all-reduce of the head's 4096 x 32000 weight gradients.
  const std::vector<int> one{axis};
  auto all_reduce = [&](double bytes) {
    return hardware::collective_time(cluster, hardware::Collective::all_reduce, mesh.group_shape(one), bytes).seconds;
  };
  const double logits_bytes = micro_batch * kSeq * kVocab * 2, weight_bytes = 4096 * kVocab * 2;
  const double by_hand = m * all_reduce(logits_bytes) - all_reduce(weight_bytes);
  ASSERT_GT(by_hand, 0);
  EXPECT_NEAR(k->cost - batch->cost, by_hand, 0.05 * by_hand);
}

TEST(LevelPartialSum, TheSearchesOwnThreeStagesDoNotCutTheLmHeadOverItsReductionDim) {
  Graph g = llama_layers(8, 256);
  const hardware::Cluster cluster = three_h100_nodes();
  SearchOptions search;
  search.refine = false;  // the level step's own cuts
  const SearchResult r = symtensor_search(g, cluster, StrategyOptions{}, search);
  // The level step's plan is the search's: the Megatron-layout seed (3/3/2 layers) is no faster.
  EXPECT_EQ(r.summary.find("Megatron-layout seed"), std::string::npos) << r.summary;
  EXPECT_EQ(r.plan.pipeline_stages(), 3) << r.summary;
  NumericGraph ng(g);
  const FoldedGraph folded = fold_graph(ng);
  const NodeId head = folded.heavy.back();
  const NodeCut& cut = r.plan.node_cuts.at(head);
  for (std::size_t l = 0; l < cut.loop_axes.size(); ++l)
    if (ng.node(head).loops[l].reduction) {
      EXPECT_TRUE(cut.loop_axes[l].empty()) << r.summary;
    }
}

}  // namespace
}  // namespace symtensor::compiler
