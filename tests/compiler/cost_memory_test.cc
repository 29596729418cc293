// Memory of the cost model against published formulas: activation memory per GPT layer
// (Korthikanti et al. 2022, all six configurations) and model-state bytes per ZeRO stage
// (Rajbhandari et al.: 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N).
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/onnx_import/import.h"
#include "compiler/ops/op_semantics.h"
#include "tests/compiler/gpt_layer_util.h"

namespace symtensor::compiler {
namespace {

hardware::Cluster one_node(int gpus) {
  return hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 1, gpus);
}

struct LayerCase {
  std::int64_t h, a, s, b;
};

// Megatron-LM's tensor-parallel layout of the test layer on mesh axis `tp`, by node
// output name: column-parallel Q/K/V and FC1, heads cut through attention, row-parallel
// proj and FC2; with sequence parallelism the norms, dropouts and residual adds are cut
// on the sequence.
Plan megatron_layer_plan(Graph& g, int tp_axis, bool sequence_parallel) {
  Plan plan;
  plan.mesh_factors = {{1}, {0}};
  plan.node_cuts.resize(g.nodes().size());
  plan.stage_of_node.assign(g.nodes().size(), 0);
  auto cut_output = [&](NodeId id, int dim) {
    const IterationSpace space = iteration_space_of(g, id);
    plan.node_cuts[id].loop_axes.resize(space.loops.size());
    plan.node_cuts[id].loop_axes.at(space.output_dims.at(0).at(dim)).push_back(tp_axis);
  };
  auto cut_input = [&](NodeId id, int dim) {
    const IterationSpace space = iteration_space_of(g, id);
    plan.node_cuts[id].loop_axes.resize(space.loops.size());
    plan.node_cuts[id].loop_axes.at(space.input_dims.at(0).at(dim)).push_back(tp_axis);
  };
  const std::map<std::string, int> heads_dim = {
      {"q0", 2}, {"k0", 2}, {"v0", 2}, {"q1", 2}, {"k1", 2}, {"v1", 2}, {"q2", 1}, {"k2", 1}, {"v2", 1},
      {"scores", 1}, {"scaled", 1}, {"probs", 1}, {"probs_d", 1}, {"ctx", 1}, {"ctx_t", 2}, {"ctx_m", 2},
      {"fc1", 2}, {"g1", 2}, {"g2", 2}, {"g3", 2}, {"g4", 2}, {"gelu", 2}};
  const std::set<std::string> sequence = {"h1", "attn_d", "res1", "h2", "fc2_d", "y"};
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id) {
    const std::string out = g.tensor(g.node(id).outputs.at(0)).name;
    if (auto it = heads_dim.find(out); it != heads_dim.end()) cut_output(id, it->second);
    else if (out == "attn" || out == "fc2") cut_input(id, 2);
    else if (sequence_parallel && sequence.count(out)) cut_output(id, 1);
  }
  return plan;
}

// Attention materialized (the paper's setting) unless `fused`.
double layer_activation_bytes(const LayerCase& c, int t, bool sp, RecomputePolicy recompute, bool fused = false) {
  ImportOptions o;
  o.bindings = {{"batch", static_cast<double>(c.b)}, {"seq", static_cast<double>(c.s)}};
  o.warn_opaque = false;
  o.fusion.attention = fused ? AttentionMode::fused : AttentionMode::materialized;
  Graph g = import_onnx_model(symtensor::testing::gpt_training_layer(c.h, c.a), "layer", o);
  Plan plan = megatron_layer_plan(g, 1, sp);
  plan.mesh_factors = {{1}, {t}};
  plan.precision = hardware::Precision::fp16;
  plan.recompute = recompute;
  plan.global_batch = c.b;
  const PlanAnalysis a = analyze_plan(g, one_node(t), plan);
  return a.stage_memory.at(0).activations_per_micro_batch;
}

class Korthikanti : public ::testing::TestWithParam<LayerCase> {};

// Published bytes per layer, s·b·h·(...): the six rows of Table 2 of the paper.
TEST_P(Korthikanti, ActivationMemoryPerLayerMatchesAllSixFormulas) {
  const LayerCase c = GetParam();
  const double sbh = static_cast<double>(c.s) * c.b * c.h;
  const double attn = 5.0 * c.a * c.s / c.h;
  for (int t : {1, 8}) {
    SCOPED_TRACE("t=" + std::to_string(t));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, 1, false, RecomputePolicy::none), sbh * (34 + attn));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, false, RecomputePolicy::none), sbh * (10 + 24.0 / t + attn / t));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, true, RecomputePolicy::none), sbh * (34.0 / t + attn / t));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, false, RecomputePolicy::selective), sbh * (10 + 24.0 / t));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, true, RecomputePolicy::selective), sbh * 34.0 / t);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, false, RecomputePolicy::full), sbh * 2);
    // Fused (FlashAttention): Q, K and V stay (their 6sbh are in the 34), the 5as²b of scores,
    // probabilities and dropout mask are gone, and selective recompute has nothing left to drop.
    for (auto policy : {RecomputePolicy::none, RecomputePolicy::selective}) {
      EXPECT_DOUBLE_EQ(layer_activation_bytes(c, 1, false, policy, true), sbh * 34);
      EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, false, policy, true), sbh * (10 + 24.0 / t));
      EXPECT_DOUBLE_EQ(layer_activation_bytes(c, t, true, policy, true), sbh * 34.0 / t);
    }
  }
}

// A 22B-like layer (h 6144, 64 heads) and a 175B-like one (h 12288, 96 heads), s 2048.
INSTANTIATE_TEST_SUITE_P(PublishedLayers, Korthikanti,
                         ::testing::Values(LayerCase{6144, 64, 2048, 1}, LayerCase{12288, 96, 2048, 4}));

TEST(TensorParallelVolume, MegatronLayerMovesFourAllReducesOfBshInTraining) {
  const LayerCase c{1024, 16, 512, 2};
  ImportOptions o;
  o.bindings = {{"batch", 2.0}, {"seq", 512.0}};
  Graph g = import_onnx_model(symtensor::testing::gpt_training_layer(c.h, c.a), "layer", o);
  for (auto mode : {ExecutionMode::train, ExecutionMode::infer}) {
    Plan plan = megatron_layer_plan(g, 1, false);
    plan.mesh_factors = {{1}, {8}};
    plan.precision = hardware::Precision::fp16;
    plan.mode = mode;
    plan.global_batch = c.b;
    const PlanAnalysis a = analyze_plan(g, one_node(8), plan);
    int all_reduces = 0;
    for (const OpWork& w : a.ops)
      for (const auto* comms : {&w.fwd_comm, &w.bwd_comm})
        for (const CommOp& op : *comms) {
          EXPECT_EQ(op.kind, hardware::Collective::all_reduce) << g.tensor(op.tensor).name;
          EXPECT_DOUBLE_EQ(op.bytes, 2.0 * c.b * c.s * c.h) << g.tensor(op.tensor).name;  // b·s·h fp16 elements
          ++all_reduces;
        }
    EXPECT_EQ(all_reduces, mode == ExecutionMode::train ? 4 : 2);
  }
}

TEST(TensorParallelVolume, SequenceParallelTurnsAllReducesIntoReduceScatterAndAllGather) {
  ImportOptions o;
  o.bindings = {{"batch", 2.0}, {"seq", 512.0}};
  Graph g = import_onnx_model(symtensor::testing::gpt_training_layer(1024, 16), "layer", o);
  Plan plan = megatron_layer_plan(g, 1, true);
  plan.mesh_factors = {{1}, {8}};
  plan.precision = hardware::Precision::fp16;
  plan.global_batch = 2;
  const PlanAnalysis a = analyze_plan(g, one_node(8), plan);
  std::map<hardware::Collective, int> count;
  for (const OpWork& w : a.ops)
    for (const auto* comms : {&w.fwd_comm, &w.bwd_comm})
      for (const CommOp& op : *comms) {
        ++count[op.kind];
        EXPECT_DOUBLE_EQ(op.bytes, 2.0 * 2 * 512 * 1024) << g.tensor(op.tensor).name;  // same b·s·h volume
      }
  // Forward: all-gather before Q/K/V and FC1, reduce-scatter after proj and FC2; backward the duals.
  EXPECT_EQ(count[hardware::Collective::all_gather], 4);
  EXPECT_EQ(count[hardware::Collective::reduce_scatter], 4);
  EXPECT_EQ(count[hardware::Collective::all_reduce], 0);
}

// Data parallelism: every operator cut on its batch loop over all N devices.
Plan data_parallel_plan(Graph& g, int n) {
  Plan plan;
  plan.mesh_factors = {{1}, {n}};
  plan.node_cuts.resize(g.nodes().size());
  plan.stage_of_node.assign(g.nodes().size(), 0);
  const GiNaC::ex batch = g.symbols.get("batch");
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id) {
    const IterationSpace space = iteration_space_of(g, id);
    plan.node_cuts[id].loop_axes.resize(space.loops.size());
    for (std::size_t l = 0; l < space.loops.size(); ++l)
      if (space.loops[l].extent.has(batch) && !space.loops[l].reduction) {
        plan.node_cuts[id].loop_axes[l].push_back(1);
        break;
      }
  }
  return plan;
}

// Model states of one data-parallel rank over N = 8, per ZeRO stage, under a stack.
double model_state_bytes(Graph& g, const hardware::Cluster& cluster, int zero, bool distributed_optimizer = false) {
  Plan plan = data_parallel_plan(g, 8);
  plan.zero_stage = zero;
  plan.distributed_optimizer = distributed_optimizer;
  plan.global_batch = 8;
  const PlanAnalysis a = analyze_plan(g, cluster, plan);
  const StageMemory& m = a.stage_memory.at(0);
  return m.parameters + m.gradients + m.optimizer;
}

// The ZeRO paper's counts are DeepSpeed's: 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N.
TEST(ModelState, ZeroStagesMatchPublishedBytesPerParameter) {
  ImportOptions o;
  o.bindings = {{"batch", 8.0}, {"seq", 128.0}};
  Graph g = import_onnx_model(symtensor::testing::gpt_training_layer(256, 4), "layer", o);
  const double psi = GiNaC::ex_to<GiNaC::numeric>(compute_model_stats(g).parameter_count).to_double();
  ASSERT_EQ(psi, 12 * 256 * 256 + 4 * 256);
  const double n = 8;
  const double expected[] = {16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n, 16 * psi / n};
  const hardware::Cluster deepspeed = hardware::apply_stack(one_node(8), hardware::load_stack("deepspeed"));
  for (int zero = 0; zero <= 3; ++zero) EXPECT_DOUBLE_EQ(model_state_bytes(g, deepspeed, zero), expected[zero]) << "ZeRO-" << zero;
}

// Megatron-LM keeps fp32 main gradients in bf16 training: 18 bytes per parameter, and with
// the distributed optimizer its documented 6 + 12/d. FSDP2 (torchtitan) shards its fp32
// parameters, gradients and moments: 16/N.
TEST(ModelState, StacksKeepTheirOwnBytesPerParameter) {
  ImportOptions o;
  o.bindings = {{"batch", 8.0}, {"seq", 128.0}};
  Graph g = import_onnx_model(symtensor::testing::gpt_training_layer(256, 4), "layer", o);
  const double psi = 12 * 256 * 256 + 4 * 256, d = 8;
  const hardware::Cluster megatron = hardware::apply_stack(one_node(8), hardware::load_stack("megatron"));
  EXPECT_DOUBLE_EQ(model_state_bytes(g, megatron, 0), 18 * psi);
  EXPECT_DOUBLE_EQ(model_state_bytes(g, megatron, 0, true), (6 + 12 / d) * psi);
  EXPECT_DOUBLE_EQ(model_state_bytes(g, one_node(8), 0, true), (6 + 12 / d) * psi);  // the default stack
  const hardware::Cluster torchtitan = hardware::apply_stack(one_node(8), hardware::load_stack("torchtitan"));
  EXPECT_DOUBLE_EQ(model_state_bytes(g, torchtitan, 3), 16 * psi / d);
}

TEST(ModelState, DataParallelGradientVolumeEqualsParameterBytes) {
  ImportOptions o;
  o.bindings = {{"batch", 8.0}, {"seq", 128.0}};
  Graph g = import_onnx_model(symtensor::testing::gpt_training_layer(256, 4), "layer", o);
  Plan plan = data_parallel_plan(g, 8);
  plan.global_batch = 8;
  const PlanAnalysis a = analyze_plan(g, one_node(8), plan);
  double bytes = 0;
  for (const ParamWork& p : a.params)
    for (const CommOp& op : p.grad_sync) {
      EXPECT_EQ(op.kind, hardware::Collective::all_reduce);
      bytes += op.bytes;
    }
  EXPECT_DOUBLE_EQ(bytes, 4.0 * (12 * 256 * 256 + 4 * 256));  // every parameter's gradient, in Megatron's fp32
  // No activation communication in pure data parallelism.
  for (const OpWork& w : a.ops) EXPECT_TRUE(w.fwd_comm.empty() && w.bwd_comm.empty()) << g.node(w.node).name;
  const StepEstimate e = estimate_step(a, plan, one_node(8));
  EXPECT_GT(e.step_time_s, 0);
  EXPECT_TRUE(e.fits);
}

}  // namespace
}  // namespace symtensor::compiler
