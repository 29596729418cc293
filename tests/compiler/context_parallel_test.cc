// Context parallelism: Megatron's cp knob cuts every operator's sequence loop (a fused
// attention's queries) over the cp axes; attention then needs K and V whole along the keys,
// which the cost model prices as an all-gather over the cp group (a reduce-scatter of dK and
// dV in backward), passed around a ring beside the kernel (Megatron-Core's p2p default) or
// all-gathered before it.
#include <gtest/gtest.h>

#include "compiler/cost/step_estimate.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/strategies/megatron.h"
#include "onnx_models/presets.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr double kBatch = 2, kSeq = 64;

struct CpFixture {
  Graph graph = testing::zoo_graph("llama2-7b-tiny", kBatch, kSeq);
  hardware::Cluster cluster = testing::dgx(1, 4);
  Plan plan(const std::string& knobs) {
    StrategyOptions o;
    return make_megatron_plan(graph, cluster, parse_megatron_knobs(knobs), o);
  }
};

TEST(ContextParallel, CutsAttentionQueriesAndGathersKeysAndValuesOverTheCpAxis) {
  CpFixture f;
  const Plan plan = f.plan("tp=2,cp=2,mb=2");
  testing::expect_valid_plan(f.graph, f.cluster, plan);
  const hardware::DeviceMesh mesh = plan_mesh(plan, f.cluster);
  const models::ModelConfig c = models::preset_config("llama2-7b-tiny");
  const PlanAnalysis a = analyze_plan(f.graph, f.cluster, plan);
  const NumericGraph ng(f.graph);
  int attention = 0;
  for (const OpWork& w : a.ops) {
    const NumericNode& nn = ng.node(w.node);
    if (nn.kind != OpKind::attention) continue;
    ++attention;
    const int query = nn.query_loop;
    ASSERT_EQ(plan.node_cuts[w.node].loop_axes[query].size(), 1u);
    const int cp_axis = plan.node_cuts[w.node].loop_axes[query][0];
    EXPECT_EQ(mesh.axes()[cp_axis].size, 2);
    // K and V, each [b, kv/tp, d, s] in bf16 after the gather: the whole sequence on every
    // cp rank, their heads still cut over tp.
    const double gathered = kBatch * (c.kv_heads / 2.0) * (c.hidden / c.heads) * kSeq * 2;
    int gathers = 0, scatters = 0;
    for (const CommOp& op : w.fwd_comm) {
      EXPECT_EQ(op.kind, hardware::Collective::all_gather);
      EXPECT_EQ(op.axes, std::vector<int>{cp_axis});
      EXPECT_DOUBLE_EQ(op.bytes, gathered);
      EXPECT_TRUE(op.overlapped);
      ++gathers;
    }
    for (const CommOp& op : w.bwd_comm) {
      EXPECT_EQ(op.kind, hardware::Collective::reduce_scatter);
      EXPECT_DOUBLE_EQ(op.bytes, gathered);
      EXPECT_TRUE(op.overlapped);
      ++scatters;
    }
    EXPECT_EQ(gathers, 2);  // K and V
    EXPECT_EQ(scatters, 2);
  }
  EXPECT_EQ(attention, c.layers);
}

TEST(ContextParallel, RingHidesTheExchangeBehindTheKernelAllGatherDoesNot) {
  CpFixture f;
  Plan ring = f.plan("tp=1,cp=4,mb=2");
  Plan gather = ring;
  gather.context_parallel_comm = ContextParallelComm::all_gather;
  const PlanAnalysis ra = analyze_plan(f.graph, f.cluster, ring);
  const PlanAnalysis ga = analyze_plan(f.graph, f.cluster, gather);
  const StepEstimate re = estimate_step(ra, ring, f.cluster), ge = estimate_step(ga, gather, f.cluster);
  double hidden = 0;
  for (std::size_t i = 0; i < ra.ops.size(); ++i)
    for (const CommOp& op : ga.ops[i].fwd_comm) {
      EXPECT_FALSE(op.overlapped);
      hidden += op.seconds - std::max(0.0, op.seconds - ra.ops[i].fwd_seconds);
    }
  EXPECT_GT(hidden, 0);
  EXPECT_LT(re.step_time_s, ge.step_time_s);
  EXPECT_LT(re.exposed_comm_s, ge.exposed_comm_s);
  // The simulator runs the ring beside the kernel: its collectives are on their own stream.
  const PlanSimulation sim = simulate_plan(f.graph, ring, f.cluster);
  int cp_tasks = 0;
  for (const auto& rc : sim.program.rank_classes)
    for (const auto& t : rc.tasks) cp_tasks += t.stream == "comm_cp";
  EXPECT_GT(cp_tasks, 0);
  EXPECT_LE(sim.report.step_time_s, simulate_plan(f.graph, gather, f.cluster).report.step_time_s);
}

TEST(ContextParallel, ExposedSecondsCountsOnlyWhatTheKernelDoesNotHide) {
  CommOp blocking, ring;
  blocking.seconds = 1;
  ring.seconds = 3;
  ring.overlapped = true;
  EXPECT_DOUBLE_EQ(exposed_seconds({blocking, ring}, 2), 1 + (3 - 2));
  EXPECT_DOUBLE_EQ(exposed_seconds({blocking, ring}, 5), 1);
  EXPECT_DOUBLE_EQ(exposed_seconds({}, 5), 0);
}

TEST(ContextParallel, MegatronConstraints) {
  CpFixture f;
  EXPECT_EQ(parse_megatron_knobs("cp=4").cp, 4);
  EXPECT_EQ(to_string(parse_megatron_knobs("tp=2,cp=2")), "tp=2,pp=1,cp=2,mb=1,vp=1,sp=0,recompute=none,distopt=0");
  // world = tp·pp·cp·dp.
  EXPECT_THROW(f.plan("tp=2,cp=2,dp=2"), std::runtime_error);
  // Causal balancing: the sequence must split into 2·cp chunks.
  Graph odd = testing::zoo_graph("llama2-7b-tiny", kBatch, 60);
  StrategyOptions o;
  try {
    make_megatron_plan(odd, f.cluster, parse_megatron_knobs("cp=4"), o);
    FAIL() << "cp=4 with seq 60 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "megatron: cp=4 needs the sequence (60) divisible by 2·cp = 8");
  }
  const MegatronMesh m = megatron_mesh(testing::dgx(2), parse_megatron_knobs("tp=4,cp=4"));
  // tp 4 and cp 2 inside a node, cp 2 over the nodes (Megatron-Core's rank order tp, cp, dp).
  EXPECT_EQ(m.factors, (std::vector<std::vector<int>>{{2}, {2, 4}}));
  EXPECT_EQ(m.cp_axes, (std::vector<int>{0, 1}));
  EXPECT_TRUE(m.dp_axes.empty());
}

// A model whose exporter named the sequence dim otherwise: with --seq-dim (ImportOptions::
// sequence_dim) it is the sequence to context parallelism, tokens/s and the quadratic
// activations, and prices as the same model with `seq`; without, cp has no sequence.
TEST(ContextParallel, FollowsTheSequenceDimTheImportNames) {
  const onnx::ModelProto model = symtensor::testing::with_dim_renamed(models::build_model(models::preset_config("llama2-7b-tiny")), "seq", "tokens");
  ImportOptions o;
  o.bindings = {{"batch", kBatch}, {"tokens", kSeq}};
  o.warn_opaque = false;
  Graph unnamed = import_onnx_model(model, "renamed", o);
  EXPECT_EQ(bound_sequence_length(unnamed), 0);
  const hardware::Cluster cluster = testing::dgx(1, 4);
  EXPECT_THROW(make_megatron_plan(unnamed, cluster, parse_megatron_knobs("tp=2,cp=2,mb=2"), StrategyOptions{}),
               std::runtime_error);
  o.sequence_dim = "tokens";
  Graph named = import_onnx_model(model, "renamed", o);
  EXPECT_EQ(named.sequence_dim, "tokens");
  EXPECT_EQ(bound_sequence_length(named), kSeq);
  const Plan plan = make_megatron_plan(named, cluster, parse_megatron_knobs("tp=2,cp=2,mb=2"), StrategyOptions{});
  CpFixture f;
  const Plan reference = f.plan("tp=2,cp=2,mb=2");
  EXPECT_DOUBLE_EQ(estimate_step(analyze_plan(named, cluster, plan), plan, cluster).step_time_s,
                   estimate_step(analyze_plan(f.graph, f.cluster, reference), reference, f.cluster).step_time_s);
  o.sequence_dim = "sequence";
  EXPECT_THROW(import_onnx_model(model, "renamed", o), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
