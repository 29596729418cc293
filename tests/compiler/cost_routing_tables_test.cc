// A capacity-routed mixture of experts (GShard's form, as the zoo and exporters write it) builds
// its dispatch mask and combine weights as dense [b, s, E, C] tensors; a real dispatcher
// (Megatron-Core's permute, DeepEP) holds k expert indices and weights per token. The cost model
// prices those routing tables as index-sized: no bytes read, written, kept or sent.
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr std::int64_t kRoutingHidden = 64, kRoutingExperts = 8, kRoutingTopK = 2, kRoutingSeq = 32, kRoutingBatch = 2;

struct RoutingPriced {
  Graph graph;
  PlanAnalysis analysis;
};

RoutingPriced price_moe() {
  models::Overrides o;
  o.layers = 1, o.hidden = kRoutingHidden, o.heads = 2, o.kv_heads = 2, o.intermediate = 96, o.vocab = 256, o.seq = kRoutingSeq;
  o.experts = kRoutingExperts, o.top_k = kRoutingTopK;
  RoutingPriced p{symtensor::testing::zoo_graph("llama2-7b", o, kRoutingBatch, kRoutingSeq), {}};
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 1);
  const Plan plan = make_plan("dp", p.graph, c, StrategyOptions{});
  p.analysis = analyze_plan(p.graph, c, plan);
  return p;
}

TEST(RoutingTables, DispatchMaskAndCombineWeightsAreIndexSized) {
  RoutingPriced p = price_moe();
  const NumericGraph ng(p.graph);
  const double capacity = kRoutingTopK * kRoutingSeq / kRoutingExperts;  // capacity factor 1
  const double table_elements = kRoutingBatch * kRoutingSeq * kRoutingExperts * capacity;
  int routing_ops = 0;
  for (const OpWork& w : p.analysis.ops) {
    const Node& node = p.graph.node(w.node);
    if (node.op_type != "MoeDispatch" && node.op_type != "MoeCombine") continue;
    ++routing_ops;
    const TensorFacts& table = ng.facts(node.inputs[0]);
    EXPECT_TRUE(table.routing_table) << node.name;
    EXPECT_DOUBLE_EQ(table.elements.at(kRoutingBatch), table_elements) << node.name;
    EXPECT_FALSE(ng.facts(node.inputs[1]).routing_table) << node.name;  // the tokens
    // Bytes: the token rows only (bf16): dispatch reads [b, s, h] and writes [b, E, C, h];
    // combine reads [b, E, C, h] and writes [b, s, h].
    const double tokens = 2.0 * kRoutingBatch * kRoutingSeq * kRoutingHidden, slots = 2.0 * kRoutingBatch * kRoutingExperts * capacity * kRoutingHidden;
    EXPECT_DOUBLE_EQ(w.fwd_bytes, tokens + slots) << node.name;
  }
  EXPECT_EQ(routing_ops, 2);
  // The same-sized masks they are made from (the slot one-hot, and it times the routed flag or
  // the gate weight) are routing tables too; the broadcast [b, s, E, 1] gate weight is not.
  int tables = 0;
  for (TensorId t = 0; t < static_cast<TensorId>(p.graph.tensors().size()); ++t) {
    if (!ng.facts(t).routing_table) continue;
    ++tables;
    EXPECT_DOUBLE_EQ(ng.facts(t).elements.at(kRoutingBatch), table_elements) << p.graph.tensor(t).name;
  }
  EXPECT_GE(tables, 4);  // Equal's mask, its cast, dispatch, combine
  for (const OpWork& w : p.analysis.ops) {
    const Node& node = p.graph.node(w.node);
    if (node.op_type != "Mul" || node.outputs.empty() || !ng.facts(node.outputs[0]).routing_table) continue;
    // mask x [b, s, E, 1]: only the broadcast operand is read.
    EXPECT_LT(w.fwd_bytes, 2.0 * kRoutingBatch * kRoutingSeq * kRoutingExperts + 1) << node.name;
    EXPECT_EQ(w.saved_bytes, 0) << node.name;
  }
}

}  // namespace
}  // namespace symtensor::compiler
