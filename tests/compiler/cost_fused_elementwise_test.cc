// Element-wise chains as the stacks run them (Stack::fused_elementwise): Transformer Engine and
// XLA fuse a layer's SwiGLU, norms and RoPE, so a value passed from one element-wise op to the
// next never reaches HBM; eager PyTorch writes and reads every one. Views (Reshape, Unsqueeze)
// launch no kernel under any stack.
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr std::int64_t kFusedHidden = 64, kFusedMlp = 128, kFusedSeq = 16, kFusedBatch = 2;

struct Priced {
  Graph graph;
  PlanAnalysis analysis;
};

Priced price(const std::string& stack) {
  models::Overrides o;
  o.layers = 1, o.hidden = kFusedHidden, o.heads = 2, o.kv_heads = 2, o.intermediate = kFusedMlp, o.vocab = 256, o.seq = kFusedSeq;
  Priced p{symtensor::testing::zoo_graph("llama2-7b", o, kFusedBatch, kFusedSeq), {}};
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 1, 1), {stack});
  const Plan plan = make_plan("dp", p.graph, c, StrategyOptions{});
  p.analysis = analyze_plan(p.graph, c, plan);
  return p;
}

const OpWork& work_of(const Priced& p, const std::string& op_type) {
  for (const OpWork& w : p.analysis.ops)
    if (p.graph.node(w.node).op_type == op_type) return w;
  throw std::runtime_error("no " + op_type);
}

TEST(FusedElementwise, SwiGlusSigmoidReadsTheGateAndWritesNothingWhenFused) {
  Priced eager = price("torchtitan"), fused = price("megatron");
  const double gate_bytes = 2.0 * kFusedBatch * kFusedSeq * kFusedMlp;  // bf16 gate projection output
  // SiLU(gate) = gate · sigmoid(gate): the sigmoid's output only feeds the next Mul.
  const OpWork& e = work_of(eager, "Sigmoid");
  const OpWork& f = work_of(fused, "Sigmoid");
  EXPECT_DOUBLE_EQ(e.fwd_bytes, 2 * gate_bytes);  // read the gate, write the sigmoid
  EXPECT_DOUBLE_EQ(f.fwd_bytes, gate_bytes);      // read the gate (a GEMM's output) only
  EXPECT_LT(f.fwd_seconds, e.fwd_seconds);
  const NumericGraph ng(fused.graph);
  EXPECT_TRUE(ng.facts(fused.graph.node(f.node).outputs[0]).fusable_intermediate);
  EXPECT_FALSE(ng.facts(fused.graph.node(f.node).inputs[0]).fusable_intermediate);  // a GEMM made it
}

TEST(FusedElementwise, ViewsLaunchNoKernelUnderAnyStack) {
  for (const char* stack : {"torchtitan", "megatron"}) {
    const Priced p = price(stack);
    int views = 0;
    for (const OpWork& w : p.analysis.ops) {
      const std::string& op = p.graph.node(w.node).op_type;
      if (op != "Reshape" && op != "Unsqueeze") continue;
      ++views;
      EXPECT_EQ(w.fwd_seconds, 0) << stack << " " << op;
      EXPECT_EQ(w.bwd_seconds, 0) << stack << " " << op;
    }
    EXPECT_GT(views, 0) << stack;
  }
}

}  // namespace
}  // namespace symtensor::compiler
