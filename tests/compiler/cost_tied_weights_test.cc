// A GPT's LM head is tied to the token embedding through a Transpose of the weight. That
// transposed weight is computed from the parameter alone (TensorFacts::weight_derived):
// frameworks read it as a view, so its gradient stays a partial sum until the embedding's
// gradient is reduced once per step, and the backward keeps no copy of it. Priced as an
// activation it had cost an all-reduce of V x h per micro-batch in the backward pass.
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr std::int64_t kTiedHidden = 64, kTiedVocab = 512, kTiedSeq = 32;

struct TiedGpt {
  Graph graph;
  TensorId embedding = kNone, transposed = kNone;
  NodeId head = kNone;  // the MatMul reading the transposed embedding
  TiedGpt() {
    models::Overrides o;
    o.layers = 1, o.hidden = kTiedHidden, o.heads = 2, o.vocab = kTiedVocab, o.seq = kTiedSeq;
    graph = symtensor::testing::zoo_graph("gpt-1.7b", o, 16, kTiedSeq);
    for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
      const Node& n = graph.node(id);
      if (n.op_type != "Transpose" || n.inputs.empty() || !graph.tensor(n.inputs[0]).is_parameter) continue;
      embedding = n.inputs[0], transposed = n.outputs.at(0);
    }
    if (transposed != kNone) head = graph.tensor(transposed).consumers.at(0);
  }
};

TEST(TiedWeights, TheTransposedEmbeddingIsWeightDerivedAndNotSaved) {
  TiedGpt m;
  ASSERT_NE(m.transposed, kNone);
  const NumericGraph ng(m.graph);
  EXPECT_TRUE(ng.facts(m.transposed).weight_derived);
  EXPECT_FALSE(ng.facts(m.embedding).weight_derived);  // a parameter itself
  for (const SavedTensor& s : ng.saved_tensors()) EXPECT_NE(s.tensor, m.transposed);
  bool found = false;
  for (const ParameterUses& p : ng.parameters()) {
    if (p.tensor != m.embedding) continue;
    found = true;
    ASSERT_EQ(p.derived_uses.size(), 1u);
    EXPECT_EQ(p.derived_uses[0].first, m.head);
  }
  EXPECT_TRUE(found);
}

TEST(TiedWeights, DataParallelReducesTheEmbeddingGradientOncePerStep) {
  TiedGpt m;
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 4);
  Plan plan = make_plan("dp", m.graph, c, StrategyOptions{});
  plan.micro_batches = 2;
  const PlanAnalysis a = analyze_plan(m.graph, c, plan);
  for (const OpWork& w : a.ops) {
    if (w.node != m.head) continue;
    EXPECT_TRUE(w.bwd_comm.empty()) << "the head's weight gradient is reduced per micro-batch";
  }
  bool found = false;
  for (const ParamWork& p : a.params) {
    if (p.tensor != m.embedding) continue;
    found = true;
    // One all-reduce over the four data-parallel ranks of the whole V x h gradient (fp32, as
    // Megatron-LM reduces bf16 training's gradients): the lookup's and the head's summed first.
    ASSERT_EQ(p.grad_sync.size(), 1u);
    EXPECT_EQ(p.grad_sync[0].kind, hardware::Collective::all_reduce);
    EXPECT_DOUBLE_EQ(p.grad_sync[0].bytes, 4.0 * kTiedVocab * kTiedHidden);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace symtensor::compiler
