// Software stacks (hardware/stacks/*.yaml): the bundled ones load with the memory conventions
// their frameworks document, a stack's kernel factors reach the device it names and no other,
// and bad files are one-line errors naming the file, line and key.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hardware/cluster.h"
#include "hardware/stack.h"
#include "tests/temp_path.h"

namespace symtensor::hardware {
namespace stack_test {

// parse_stack's error for `text` as the file s.yaml ("no error" when it loads).
std::string error(const std::string& text) {
  try {
    parse_stack(text, "s.yaml");
  } catch (const std::runtime_error& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

TEST(Stacks, BundledOnesCarryTheirFrameworksMemoryConventions) {
  EXPECT_THAT(list_stacks(), ::testing::IsSupersetOf({"deepspeed", "jax", "megatron", "torchtitan"}));
  const Stack megatron = load_stack("megatron");
  // bf16 weights + fp32 main gradients + fp32 master + two fp32 moments = 18 bytes.
  const StackMemory& m = megatron.memory;
  EXPECT_DOUBLE_EQ(m.weights + m.gradients + m.master_weights + m.optimizer, 18);
  EXPECT_DOUBLE_EQ(m.gradient_reduce, 4);
  EXPECT_DOUBLE_EQ(m.loss_per_logit, 6);
  const StackMemory& d = load_stack("deepspeed").memory;  // the ZeRO paper's 16
  EXPECT_DOUBLE_EQ(d.weights + d.gradients + d.master_weights + d.optimizer, 16);
  const StackMemory& t = load_stack("torchtitan").memory;  // FSDP2: fp32 shards, no second copy
  EXPECT_DOUBLE_EQ(t.weights, 4);
  EXPECT_DOUBLE_EQ(t.master_weights, 0);
  // Stack{} (a cluster no stack was applied to) is Megatron's.
  EXPECT_DOUBLE_EQ(Stack{}.memory.gradients, m.gradients);
}

TEST(Stacks, KernelFactorsScaleTheNamedDeviceOnly) {
  Stack s = parse_stack(R"(name: test
memory: {weights: 2, master_weights: 4, gradients: 4, optimizer: 8, gradient_reduce: 4, weight_gather: 2, loss_per_logit: 6}
kernels:
  - {gpu: H100, gemm: 1.1, attention: 0.5, fp8_gemm: 0.8, source: "a test"}
  - {gpu: H100-SXM5, gemm: 1.2, source: "the longer prefix wins"}
)", "test.yaml");
  const Cluster h100 = load_cluster("dgx-h100");
  const Cluster applied = apply_stack(h100, s);
  EXPECT_EQ(applied.stack.name, "test");
  ASSERT_EQ(applied.device.efficiency.size(), h100.device.efficiency.size());
  for (std::size_t i = 0; i < h100.device.efficiency.size(); ++i)
    EXPECT_DOUBLE_EQ(applied.device.efficiency[i].efficiency, std::min(1.0, 1.2 * h100.device.efficiency[i].efficiency));
  EXPECT_DOUBLE_EQ(applied.device.attention_efficiency[0].forward, h100.device.attention_efficiency[0].forward);
  // fp8 GEMMs: the (scaled) curve times the low-precision factor (1: the longer entry has none).
  EXPECT_DOUBLE_EQ(applied.device.low_precision_gemm_factor, 1);
  s.kernels.pop_back();
  const Cluster h100_short = apply_stack(h100, s);
  EXPECT_DOUBLE_EQ(h100_short.device.attention_efficiency[0].forward, 0.5 * h100.device.attention_efficiency[0].forward);
  const double flops = 1e12;
  EXPECT_NEAR(h100_short.device.kernel_seconds(Precision::fp8, flops, 0) - h100_short.device.kernel_launch_s,
              flops / (h100.device.peak(Precision::fp8) * 1.1 * 0.8 * h100.device.efficiency_for(flops)), 1e-12);
  const Cluster a100 = load_cluster("dgx-a100");
  EXPECT_DOUBLE_EQ(apply_stack(a100, s).device.efficiency.back().efficiency, a100.device.efficiency.back().efficiency);
}

TEST(Stacks, HeadroomLeavesMemoryFreeAndBadValuesAreRefused) {
  Software sw;
  const Cluster c = with_software(load_cluster("dgx-h100"), sw);
  EXPECT_DOUBLE_EQ(c.device.usable_memory(), 0.95 * c.device.memory_bytes);
  sw.memory_headroom = 0.9;
  EXPECT_THROW(with_software(load_cluster("dgx-h100"), sw), std::runtime_error);
  sw = Software{};
  sw.stack = "megatorn";
  try {
    with_software(load_cluster("dgx-h100"), sw);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown stack 'megatorn': did you mean 'megatron'? (bundled: deepspeed, jax, "
                                               "megatron, nemo, torchtitan"));
  }
}

TEST(Stacks, BadFilesAreOneLineErrorsNamingTheKey) {
  const std::string memory =
      "memory: {weights: 2, master_weights: 4, gradients: 4, optimizer: 8, gradient_reduce: 4, weight_gather: 2, loss_per_logit: 6}\n";
  EXPECT_THAT(error("name: x\n"), ::testing::HasSubstr("s.yaml:1:1: key 'memory': missing required field"));
  EXPECT_THAT(error("name: x\n" + memory + "kernels:\n  - {gpu: H100, gemm: 3, source: s}\n"),
              ::testing::HasSubstr("s.yaml:4:23: key 'kernels[0].gemm': a factor of 3 is implausible"));
  EXPECT_THAT(error("name: x\n" + memory + "kernels:\n  - {gpu: H100, gemm: 1}\n"),
              ::testing::HasSubstr("key 'kernels[0].source': missing required field"));
  EXPECT_THAT(error("name: x\n" + memory + "colour: red\n"), ::testing::HasSubstr("s.yaml:3:1: key 'colour': unknown key"));
}


// H200, B200 and B300 are H100's, GB200's and GB300's silicon: the bundled stacks give them
// the same factors; GB200's name does not match a B200 entry (prefixes, not substrings).
TEST(Stacks, GpusOfOneSiliconShareTheirFactors) {
  const Stack megatron = load_stack("megatron");
  const StackKernels* h100 = megatron.kernels_for("H100-SXM5-80GB");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(megatron.kernels_for("H200-SXM-141GB"), h100);
  ASSERT_NE(megatron.kernels_for("GB200-186GB"), nullptr);
  EXPECT_EQ(megatron.kernels_for("B200-SXM-180GB"), megatron.kernels_for("GB200-186GB"));
  EXPECT_EQ(megatron.kernels_for("B300-SXM-288GB"), megatron.kernels_for("GB300-288GB"));
  // A100's own entry (fitted on Megatron-LM's A100 table), its 40 and 80 GB parts alike.
  ASSERT_NE(megatron.kernels_for("A100-SXM4-80GB"), nullptr);
  EXPECT_NE(megatron.kernels_for("A100-SXM4-80GB"), h100);
  EXPECT_EQ(megatron.kernels_for("A100-SXM4-40GB"), megatron.kernels_for("A100-SXM4-80GB"));
  const Stack b200_only = parse_stack(R"(name: test
memory: {weights: 2, master_weights: 4, gradients: 4, optimizer: 8, gradient_reduce: 4, weight_gather: 2, loss_per_logit: 6}
kernels:
  - {gpu: [B200], gemm: 1.1, source: "a test"}
)", "test.yaml");
  EXPECT_NE(b200_only.kernels_for("B200-SXM-180GB"), nullptr);
  EXPECT_EQ(b200_only.kernels_for("GB200-186GB"), nullptr);
  // The same speed on H100 and H200 under Megatron-LM (H200's curve is H100's, a little higher).
  const Cluster h100c = with_software(load_cluster("dgx-h100"), Software{});
  const Cluster h200c = with_software(load_cluster("hgx-h200"), Software{});
  EXPECT_GE(h200c.device.efficiency.back().efficiency, h100c.device.efficiency.back().efficiency);
}

// Megatron-Bridge's MXFP8/NVFP4 presets keep the compute weights quantized only.
TEST(Stacks, LowPrecisionParamsAndBaseCycles) {
  const Stack nemo = load_stack("nemo");
  EXPECT_TRUE(nemo.memory.low_precision_params_for(Precision::mxfp8));
  EXPECT_TRUE(nemo.memory.low_precision_params_for(Precision::fp4));
  EXPECT_FALSE(nemo.memory.low_precision_params_for(Precision::fp8));
  EXPECT_FALSE(load_stack("megatron").memory.low_precision_params_for(Precision::mxfp8));
  const std::string path = symtensor::testing::temp_path("cycle.yaml");
  std::ofstream(path) << "name: cycle\nbase: " << path << "\n";
  try {
    load_stack(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_THAT(what, ::testing::HasSubstr("the chain of bases does not end"));
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  try {
    parse_stack("name: x\nbase: megatron\nmemory: {low_precision_params: [bf16]}\n", "s.yaml");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("key 'memory.low_precision_params': expected fp8, mxfp8 or fp4"));
  }
}

// Element-wise fusion (Transformer Engine's fused kernels, XLA), quantized weight copies kept
// or made per use, and NVFP4's own GEMM factor: what each bundled stack says, and how a bad
// value is refused.
TEST(Stacks, FusionLowPrecisionCopiesAndFp4Factor) {
  EXPECT_TRUE(load_stack("megatron").fused_elementwise);
  EXPECT_TRUE(load_stack("nemo").fused_elementwise);  // its base's
  EXPECT_TRUE(load_stack("jax").fused_elementwise);
  EXPECT_FALSE(load_stack("torchtitan").fused_elementwise);  // eager PyTorch
  EXPECT_FALSE(load_stack("deepspeed").fused_elementwise);
  EXPECT_TRUE(load_stack("megatron").memory.low_precision_copies_kept);
  EXPECT_FALSE(load_stack("torchtitan").memory.low_precision_copies_kept);
  const Stack s = parse_stack(R"(name: test
memory: {weights: 2, master_weights: 4, gradients: 4, optimizer: 8, gradient_reduce: 4, weight_gather: 2, loss_per_logit: 6}
kernels:
  - {gpu: GB200, fp8_gemm: 0.8, fp4_gemm: 0.5, source: "a test"}
)", "test.yaml");
  const Cluster gb200 = load_cluster("gb200-nvl72");
  const Cluster applied = apply_stack(gb200, s);
  const double flops = 1e12;
  auto seconds = [&](Precision p) { return applied.device.kernel_seconds(p, flops, 0) - applied.device.kernel_launch_s; };
  const double curve = gb200.device.efficiency_for(flops);
  EXPECT_NEAR(seconds(Precision::fp8), flops / (gb200.device.peak(Precision::fp8) * 0.8 * curve), 1e-12);
  EXPECT_NEAR(seconds(Precision::fp4), flops / (gb200.device.peak(Precision::fp4) * 0.8 * 0.5 * curve), 1e-12);
  EXPECT_THAT(error("name: x\nbase: megatron\nfusion: {elementwise: yes please}\n"),
              ::testing::HasSubstr("key 'fusion.elementwise': expected true or false"));
  EXPECT_THAT(error("name: x\nbase: megatron\nmemory: {low_precision_copies: sometimes}\n"),
              ::testing::HasSubstr("key 'memory.low_precision_copies': expected kept or per_use"));
}

}  // namespace stack_test
}  // namespace symtensor::hardware
