// A stack's grouped-GEMM factor (hardware/stacks/README.md, kernels[].grouped_gemm): a
// mixture's expert GEMMs run as one grouped kernel whose efficiency may differ from a dense
// GEMM of the same size. The factor reaches those GEMMs and no other operator.
#include <string>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/strategies/megatron.h"
#include "hardware/stack.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace grouped_gemm_test {

hardware::Cluster h100_with_grouped_gemm(double factor) {
  const hardware::Stack stack = hardware::parse_stack(R"(name: grouped
memory: {weights: 2, master_weights: 4, gradients: 4, optimizer: 8, gradient_reduce: 4, weight_gather: 2, loss_per_logit: 6}
kernels:
  - {gpu: H100, grouped_gemm: )" + std::to_string(factor) + R"(, source: "a test"}
)", "grouped.yaml");
  return hardware::apply_stack(hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 1, 8), stack);
}

TEST(GroupedGemm, DeviceFactorScalesTheMathTimeByHand) {
  const hardware::Cluster c = h100_with_grouped_gemm(0.5);
  EXPECT_DOUBLE_EQ(c.device.grouped_gemm_factor, 0.5);
  // A compute-bound 10 TFLOP GEMM: math time doubles when the efficiency halves.
  const double flops = 10e12, bytes = 1e6;
  const double e = c.device.efficiency_for(flops);
  const double peak = c.device.peak(hardware::Precision::bf16);
  EXPECT_DOUBLE_EQ(c.device.kernel_seconds(hardware::Precision::bf16, flops, bytes, 0.5),
                   flops / (peak * e * 0.5) + c.device.kernel_launch_s);
  EXPECT_DOUBLE_EQ(c.device.kernel_seconds(hardware::Precision::bf16, flops, bytes),
                   flops / (peak * e) + c.device.kernel_launch_s);
}

TEST(GroupedGemm, StackFactorSlowsTheExpertGemmsOnly) {
  // Mixtral 8x7B's widths at one layer, 8 x 4096 tokens: its expert GEMMs are compute-bound.
  models::ModelConfig config = models::preset_config("mixtral-8x7b");
  config.layers = 1;
  ImportOptions io;
  io.bindings = {{"batch", 8.0}, {"seq", 4096.0}};
  io.warn_opaque = false;
  Graph g = import_onnx_model(models::build_model(config), "mixtral-1-layer", io);
  const hardware::Cluster plain = h100_with_grouped_gemm(1), slow = h100_with_grouped_gemm(0.5);
  const Plan plan = make_megatron_plan(g, plain, parse_megatron_knobs("tp=1,ep=8"), {});
  const PlanAnalysis a = analyze_plan(g, plain, plan), b = analyze_plan(g, slow, plan);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  int expert_gemms = 0;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const OpWork& x = a.ops[i];
    const OpWork& y = b.ops[i];
    const Node& node = g.node(x.node);
    if (y.fwd_seconds == x.fwd_seconds) {
      EXPECT_DOUBLE_EQ(y.bwd_seconds, x.bwd_seconds) << node.name;
      continue;
    }
    // Only the three expert GEMMs (gate, up, down) of the layer, each about twice as long.
    ++expert_gemms;
    EXPECT_TRUE(node.op_type == "Einsum" || node.op_type == "MatMul") << node.name;  // the zoo writes [E, C, h] x [E, h, I]
    EXPECT_NEAR(y.fwd_seconds / x.fwd_seconds, 2, 0.05) << node.name;
    EXPECT_NEAR(y.bwd_seconds / x.bwd_seconds, 2, 0.05) << node.name;
  }
  EXPECT_EQ(expert_gemms, 3);
}

}  // namespace grouped_gemm_test
}  // namespace symtensor::compiler
