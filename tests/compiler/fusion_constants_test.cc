// The fusion pass folds ONNX Constant nodes into constants without a producer (as initializers
// are): the graph the searches walk has none, the graph the rewrite reads (Graph::unfused) keeps
// them, a plan taken back to it leaves them uncut on their reader's stage, and the cost model
// reads a constant operand of fused element-wise kernels from registers, as it read a Constant
// node's output before.
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/cost/numeric_graph.h"
#include "compiler/fusion/graph_splice.h"
#include "compiler/fusion/unfuse_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/rewrite/sharded_program.h"
#include "compiler/search/make_plan.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace fusion_constants_test {

int count_constants(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes()) n += is_constant_node(node);
  return n;
}

TEST(FusionConstants, TheSearchedGraphHasNoneAndTheRewrittenOneKeepsThem) {
  Graph g = testing::zoo_graph("llama2-7b-tiny", 4, 32);
  ASSERT_TRUE(g.unfused);
  EXPECT_EQ(count_constants(g), 0);
  EXPECT_GT(count_constants(*g.unfused), 10);
  // Each folded Constant's output is still there, by name, a constant with its value.
  int folded = 0;
  for (const Node& n : g.unfused->nodes()) {
    if (!is_constant_node(n)) continue;
    const Tensor& before = g.unfused->tensor(n.outputs[0]);
    const TensorId t = g.find_tensor(before.name);
    if (t == kNone) continue;  // read only by a fused pattern's members
    ++folded;
    const Tensor& after = g.tensor(t);
    EXPECT_EQ(after.producer, kNone) << before.name;
    EXPECT_TRUE(after.is_constant) << before.name;
    EXPECT_EQ(after.value.has_value(), before.value.has_value()) << before.name;
    EXPECT_FALSE(after.consumers.empty()) << before.name;
    // `shard`'s hand plans check cuts on this graph: a Constant bias is still weight data
    // there, so a row-parallel cut of its Gemm is kept.
    EXPECT_TRUE(holds_weight_data(g, t)) << before.name;
  }
  EXPECT_GT(folded, 0);
}

// Where no pattern matches (BERT with its attention left materialized), the fold removes the
// Constant nodes and nothing else: every other node and every parameter of the import stays.
TEST(FusionConstants, AModelNoPatternMatchedKeepsEveryOtherNode) {
  ImportOptions o;
  o.bindings = {{"batch", 4}, {"seq", 32}};
  o.warn_opaque = false;
  o.fusion.attention = AttentionMode::materialized;
  Graph g = import_onnx_model(models::build_model(models::preset_config("bert-large-tiny")), "bert-large-tiny", o);
  ASSERT_TRUE(g.unfused);
  EXPECT_GT(count_constants(*g.unfused), 0);
  EXPECT_EQ(g.nodes().size() + count_constants(*g.unfused), g.unfused->nodes().size());
  const auto parameters = [](const Graph& graph) {
    int n = 0;
    for (const Tensor& t : graph.tensors()) n += t.is_parameter;
    return n;
  };
  EXPECT_EQ(parameters(g), parameters(*g.unfused));
}

// The splice itself, by hand: x -> Add(x, Constant) -> y, and a Relu(x) nobody reads. Removing
// unread nodes drops the Relu; the fold alone keeps it. Both drop the Constant.
TEST(FusionConstants, TheFoldAloneRemovesNothingElse) {
  Graph g;
  auto tensor = [&](const std::string& name) {
    Tensor t;
    t.name = name;
    return g.add_tensor(t);
  };
  const TensorId x = tensor("x"), c = tensor("c"), y = tensor("y"), z = tensor("z");
  g.inputs = {x};
  g.outputs = {y};
  g.tensor(x).is_graph_input = true;
  g.tensor(y).is_graph_output = true;
  g.tensor(c).is_constant = true;
  auto node = [&](const std::string& op, std::vector<TensorId> in, TensorId out) {
    Node n;
    n.name = op;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.add_node(n);
  };
  node("Constant", {}, c);
  node("Add", {x, c}, y);
  node("Relu", {x}, z);
  const Graph folded = splice_matches(g, {}, false), pruned = splice_matches(g, {});
  ASSERT_EQ(folded.nodes().size(), 2u);
  EXPECT_EQ(folded.node(0).op_type, "Add");
  EXPECT_EQ(folded.node(1).op_type, "Relu");
  ASSERT_EQ(pruned.nodes().size(), 1u);
  EXPECT_EQ(pruned.node(0).op_type, "Add");
  const TensorId kept = folded.find_tensor("c");
  ASSERT_NE(kept, kNone);
  EXPECT_EQ(folded.tensor(kept).producer, kNone);
  EXPECT_TRUE(folded.tensor(kept).is_constant);
}

// A Megatron plan of the fused graph, taken back to the imported one: every Constant node is
// uncut and on the stage of its first reader.
TEST(FusionConstants, APlanTakenBackLeavesThemUncutWithTheirReaders) {
  Graph g = testing::zoo_graph("llama2-7b-tiny", 4, 32);
  StrategyOptions o;
  o.megatron = "tp=2,pp=2,mb=1";
  const Plan plan = make_plan("megatron", g, testing::dgx(1, 4), o);
  const Plan unfused = unfuse_plan(g, plan);
  const Graph& original = *g.unfused;
  for (NodeId id = 0; id < static_cast<NodeId>(original.nodes().size()); ++id) {
    const Node& n = original.node(id);
    if (!is_constant_node(n)) continue;
    for (const auto& axes : unfused.node_cuts[id].loop_axes) EXPECT_TRUE(axes.empty()) << n.name;
    int first_reader = -1;
    for (NodeId c : original.tensor(n.outputs[0]).consumers)
      first_reader = first_reader < 0 ? unfused.stage_of_node[c] : std::min(first_reader, unfused.stage_of_node[c]);
    EXPECT_EQ(unfused.stage_of_node[id], std::max(first_reader, 0)) << n.name;
  }
}

// RoPE's Slice reads its bounds from folded Constants, a fused kernel's arguments: they move no
// bytes, and a parameter read by a GEMM does.
TEST(FusionConstants, AConstantOperandOfFusedKernelsIsOnChip) {
  Graph g = testing::zoo_graph("llama2-7b-tiny", 4, 32);
  const NumericGraph ng(g);
  int slices = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id) {
    const Node& n = g.node(id);
    if (n.op_type != "Slice" || n.name.find("layers.0/") == std::string::npos) continue;
    for (std::size_t i = 1; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNone) continue;
      const Tensor& bound = g.tensor(n.inputs[i]);
      if (!bound.is_constant || bound.producer != kNone) continue;
      ++slices;
      EXPECT_TRUE(ng.facts(n.inputs[i]).fusable_intermediate) << n.name << " input " << i;
    }
  }
  EXPECT_GT(slices, 0);
  for (TensorId t = 0; t < static_cast<TensorId>(g.tensors().size()); ++t)
    if (g.tensor(t).is_parameter) {
      EXPECT_FALSE(ng.facts(t).fusable_intermediate) << g.tensor(t).name;
    }
}

}  // namespace fusion_constants_test
}  // namespace symtensor::compiler
