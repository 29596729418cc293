// HSDP (issue #30): the model states sharded inside each data-parallel replica and replicated
// across them (Plan::replicate_axes; torchtitan's data_parallel_replicate_degree x
// data_parallel_shard_degree). Priced: the reduce-scatter and the all-gathers in the shard
// group, the all-reduce of the reduced shard across the replicas, the states' memory divided
// by the shard group only. Knob `replicate=R`, plan.yaml's replicate_axes, the search inside
// torchtitan, and the targets' account of it.
#include <gtest/gtest.h>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/export.h"
#include "compiler/export/recipe.h"
#include "compiler/export/target_limits.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/report/plan_label.h"
#include "compiler/search/export_searched.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/megatron_search.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"
#include "hardware/collectives.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

// A small Llama on 2 nodes x 4 GPUs: tp=1 leaves the data-parallel axes node (2) x gpu (4).
struct HsdpWorkload {
  Graph graph = symtensor::testing::zoo_graph("llama2-70b-tiny", {}, 16, 32);
  hardware::Cluster cluster = symtensor::testing::cluster_of("dgx-h100", 2, 4);
  Plan plan(const std::string& knobs) {
    StrategyOptions so;
    so.megatron = knobs;
    return make_plan("megatron", graph, cluster, so);
  }
};

TEST(Hsdp, KnobReplicatesOverTheOuterDataParallelAxes) {
  HsdpWorkload w;
  const Plan full = w.plan("tp=1,pp=1,mb=1,fsdp=3");
  const Plan hsdp = w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=2");
  EXPECT_EQ(hsdp.mesh_factors, full.mesh_factors);  // the node level is the replicas' axis as it is
  EXPECT_EQ(hsdp.mesh_factors, (std::vector<std::vector<int>>{{2}, {4}}));
  EXPECT_EQ(hsdp.replicate_axes, std::vector<int>{0});
  EXPECT_TRUE(full.replicate_axes.empty());
  EXPECT_EQ(hsdp.node_cuts, full.node_cuts);  // the same work, only the states' sharding differs
  // replicate=4 on the 8 ranks: the gpu level split into 2 replicas x 2 shards.
  const Plan four = w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=4");
  EXPECT_EQ(four.mesh_factors, (std::vector<std::vector<int>>{{2}, {2, 2}}));
  EXPECT_EQ(four.replicate_axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_megatron_knobs(to_string(parse_megatron_knobs("fsdp=3,replicate=4"))).replicate, 4);
  // Replicas of unsharded states, or replicas leaving one rank per shard group: refused.
  EXPECT_THROW(w.plan("tp=1,pp=1,mb=1,replicate=2"), std::runtime_error);
  EXPECT_THROW(w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=8"), std::runtime_error);
  EXPECT_THROW(w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=3"), std::runtime_error);
}

// By hand: with tp=1 every parameter's local shard is the whole tensor (P elements in all), its
// gradient partial over both axes. FSDP over the 8 ranks keeps P x bytes / 8 of each state;
// HSDP 2 x 4 keeps P x bytes / 4. Each parameter's gradient: a reduce-scatter of its G bytes
// among the 4 GPUs of a node, then an all-reduce of the G / 4 bytes each GPU owns across the
// 2 nodes; its weights gathered among the 4 GPUs of a node only.
TEST(Hsdp, StatesShardedInsideTheReplicaGradientsAllReducedAcross) {
  HsdpWorkload w;
  const Plan full = w.plan("tp=1,pp=1,mb=1,fsdp=3");
  const Plan hsdp = w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=2");
  const PlanAnalysis a = analyze_plan(w.graph, w.cluster, full), b = analyze_plan(w.graph, w.cluster, hsdp);
  const hardware::StackMemory& bytes = b.state_bytes;
  double P = 0;
  for (const ParamWork& p : b.params) P += p.local_elements;
  ASSERT_GT(P, 1e4);
  const StageMemory &fm = a.stage_memory[0], &hm = b.stage_memory[0];
  EXPECT_NEAR(fm.parameters, P * bytes.weights / 8, 1e-9 * fm.parameters);
  EXPECT_NEAR(hm.parameters, P * bytes.weights / 4, 1e-9 * hm.parameters);
  EXPECT_NEAR(hm.gradients, P * bytes.gradients / 4, 1e-9 * hm.gradients);
  EXPECT_NEAR(hm.optimizer, P * (bytes.master_weights + bytes.optimizer) / 4, 1e-9 * hm.optimizer);
  EXPECT_NEAR(hm.optimizer, 2 * fm.optimizer, 1e-9 * hm.optimizer);

  const hardware::DeviceMesh mesh = plan_mesh(hsdp, w.cluster);
  for (const ParamWork& p : b.params) {
    SCOPED_TRACE(w.graph.tensor(p.tensor).name);
    const double G = p.local_elements * bytes.gradient_reduce, W = p.local_elements * bytes.weight_gather;
    ASSERT_EQ(p.grad_sync.size(), 2u);
    EXPECT_EQ(p.grad_sync[0].kind, hardware::Collective::reduce_scatter);
    EXPECT_EQ(p.grad_sync[0].axes, std::vector<int>{1});
    EXPECT_EQ(p.grad_sync[0].bytes, G);
    EXPECT_EQ(p.grad_sync[0].seconds,
              hardware::collective_time(w.cluster, hardware::Collective::reduce_scatter, mesh.group_shape(std::vector<int>{1}), G).seconds);
    EXPECT_EQ(p.grad_sync[1].kind, hardware::Collective::all_reduce);
    EXPECT_EQ(p.grad_sync[1].axes, std::vector<int>{0});
    EXPECT_EQ(p.grad_sync[1].bytes, G / 4);
    EXPECT_EQ(p.grad_sync[1].seconds,
              hardware::collective_time(w.cluster, hardware::Collective::all_reduce, mesh.group_shape(std::vector<int>{0}), G / 4).seconds);
    ASSERT_EQ(p.gather.size(), 1u);
    EXPECT_EQ(p.gather[0].axes, std::vector<int>{1});
    EXPECT_EQ(p.gather[0].bytes, W);
    EXPECT_TRUE(p.regather.empty());
  }
  for (const ParamWork& p : a.params) {
    ASSERT_EQ(p.grad_sync.size(), 1u);
    EXPECT_EQ(p.grad_sync[0].axes, (std::vector<int>{0, 1}));
    ASSERT_EQ(p.gather.size(), 1u);
    EXPECT_EQ(p.gather[0].axes, (std::vector<int>{0, 1}));
  }
  // The step's sums take both parts of the gradients' sync: ZeRO-3's reduce-scatter inside the
  // replica each micro-batch, the all-reduce across the replicas once a step.
  const StageTotals t = stage_totals(b, hsdp);
  double scatter = 0, across = 0;
  for (const ParamWork& p : b.params) {
    EXPECT_TRUE(p.grad_sync[0].every_micro_batch);
    EXPECT_FALSE(p.grad_sync[1].every_micro_batch);
    scatter += p.grad_sync[0].seconds, across += p.grad_sync[1].seconds;
  }
  EXPECT_NEAR(t.micro_batch_grad_sync[0], scatter, 1e-12 * scatter);
  EXPECT_NEAR(t.grad_sync[0], across, 1e-12 * across);
  // The gathers stay inside the node (NVLink), where FSDP's cross the nodes' network.
  EXPECT_LT(stage_totals(b, hsdp).gather[0], stage_totals(a, full).gather[0]);
  // Distributed optimizer (ZeRO-1) with replicas: the weights regathered in the shard group.
  Plan zero1 = hsdp;
  zero1.zero_stage = 0;
  const PlanAnalysis c = analyze_plan(w.graph, w.cluster, zero1);
  EXPECT_NEAR(c.stage_memory[0].optimizer, hm.optimizer, 1e-9 * hm.optimizer);
  EXPECT_NEAR(c.stage_memory[0].parameters, 4 * hm.parameters, 1e-9 * hm.parameters);  // weights not sharded
  EXPECT_EQ(c.params[0].regather.at(0).axes, std::vector<int>{1});
}

// One analyzer pricing the same cuts with and without replicas (the search's memory options)
// answers as a fresh one each time.
TEST(Hsdp, AnalyzerReusedAcrossReplicaSplitsEqualsAFreshOne) {
  HsdpWorkload w;
  const Plan full = w.plan("tp=1,pp=1,mb=1,fsdp=3");
  Plan hsdp = full;
  hsdp.replicate_axes = {0};
  Plan zero1 = hsdp;
  zero1.zero_stage = 1;
  const NumericGraph ng(w.graph);
  PlanAnalyzer shared(w.graph, w.cluster, ng);
  for (const Plan* p : std::initializer_list<const Plan*>{&full, &hsdp, &full, &zero1, &hsdp}) {
    const PlanAnalysis fresh = analyze_plan(w.graph, w.cluster, *p);
    const StageTotals expected = stage_totals(fresh, *p);
    const StageTotals kept = shared.totals(*p);
    EXPECT_EQ(kept.grad_sync, expected.grad_sync);
    EXPECT_EQ(kept.gather, expected.gather);
    EXPECT_EQ(kept.peak_memory, expected.peak_memory);
    EXPECT_EQ(kept.after_step_s, expected.after_step_s);
    const PlanAnalysis& in_place = shared.analyze_in_place(*p);
    ASSERT_EQ(in_place.params.size(), fresh.params.size());
    for (std::size_t k = 0; k < fresh.params.size(); ++k) {
      ASSERT_EQ(in_place.params[k].grad_sync.size(), fresh.params[k].grad_sync.size());
      for (std::size_t j = 0; j < fresh.params[k].grad_sync.size(); ++j)
        EXPECT_EQ(in_place.params[k].grad_sync[j].seconds, fresh.params[k].grad_sync[j].seconds);
    }
    EXPECT_EQ(in_place.stage_memory[0].parameters, fresh.stage_memory[0].parameters);
  }
}

TEST(Hsdp, PlanYamlKeepsTheReplicaAxesAndTheLabelNamesThem) {
  HsdpWorkload w;
  const Plan hsdp = w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=2");
  const std::string text = plan_to_yaml(hsdp, w.graph, w.cluster);
  EXPECT_NE(text.find("replicate_axes: [node]"), std::string::npos);
  const Plan back = plan_from_yaml(text, "plan.yaml", w.graph, w.cluster);
  EXPECT_EQ(back.replicate_axes, hsdp.replicate_axes);
  EXPECT_EQ(plan_to_yaml(back, w.graph, w.cluster), text);
  // Replicas of unsharded states are refused at their key.
  std::string unsharded = text;
  unsharded.replace(unsharded.find("zero_stage: 3"), 13, "zero_stage: 0");
  unsharded.replace(unsharded.find("distributed_optimizer: true"), 27, "distributed_optimizer: false");
  EXPECT_THROW(plan_from_yaml(unsharded, "plan.yaml", w.graph, w.cluster), std::runtime_error);
  EXPECT_NE(plan_label_or("megatron", w.graph, hsdp, w.cluster, "").find("HSDP 2 replicas x 4 shards"), std::string::npos);
}

// torchtitan runs HSDP; the others shard over every data-parallel rank as written.
TEST(Hsdp, OnlyTorchtitanWritesIt) {
  constexpr hardware::SelectiveRecompute kMegatronSelective = hardware::SelectiveRecompute::attention_core;
  MegatronKnobs k = parse_megatron_knobs("tp=1,fsdp=3,replicate=2");
  k.dp = 8;
  EXPECT_TRUE(recipe_within_target(ExportTarget::torchtitan, megatron_layout_recipe(k, 4, kMegatronSelective)));
  for (ExportTarget t : {ExportTarget::megatron, ExportTarget::nemo, ExportTarget::deepspeed, ExportTarget::dtensor,
                         ExportTarget::jax}) {
    const std::vector<std::string> items = recipe_beyond_target(t, megatron_layout_recipe(k, 4, kMegatronSelective));
    bool named = false;
    for (const auto& item : items) named |= item.find("HSDP (2 replicas of 4-way sharded states)") != std::string::npos;
    EXPECT_TRUE(named) << to_string(t);
  }
  // ZeRO-2 with replicas: torchtitan writes FSDP (ZeRO-3) only.
  k.fsdp = 2;
  EXPECT_FALSE(recipe_within_target(ExportTarget::torchtitan, megatron_layout_recipe(k, 4, kMegatronSelective)));
  HsdpWorkload w;
  const Plan hsdp = w.plan("tp=1,pp=1,mb=1,fsdp=3,replicate=2");
  EXPECT_EQ(recover_recipe(w.graph, w.cluster, hsdp).dp_replicate, 2);
  EXPECT_EQ(recover_recipe(w.graph, w.cluster, w.plan("tp=1,pp=1,mb=1,fsdp=3")).dp_replicate, 1);
  const ExportResult mega = export_plan(ExportTarget::megatron, w.graph, w.cluster, hsdp);
  EXPECT_FALSE(mega.exact());
  EXPECT_EQ(mega.recipe.dp_replicate, 1);
  const ExportResult titan = export_plan(ExportTarget::torchtitan, w.graph, w.cluster, hsdp);
  EXPECT_EQ(titan.recipe.dp_replicate, 2);
  EXPECT_NE(titan.config.find("data_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n"), std::string::npos)
      << titan.config;
}

// Llama 3 8B on 4 DGX A100 at 256-token sequences, one sample per micro-batch, one pipeline
// stage, FSDP: its gathers and reduce-scatters over all the data-parallel ranks cross the
// nodes each micro-batch and are not hidden by so little compute; inside torchtitan the search
// finds HSDP, with 4 replicas (one per node). Megatron-LM as written, and the unbounded Megatron
// search, do not have it.
TEST(Hsdp, SearchedInsideTorchtitanOnly) {
  Graph g = symtensor::testing::zoo_graph("llama3-8b", {}, 128, 256);
  const hardware::Cluster base = symtensor::testing::cluster_of("dgx-a100", 4, 8);
  const hardware::Cluster titan = hardware::apply_stack(base, hardware::load_stack("torchtitan"));
  StrategyOptions so;
  so.megatron = "pp=1,mb=1,fsdp=3";
  so.bound = ExportTarget::torchtitan;
  const Plan inside = make_plan("megatron", g, titan, so);
  ASSERT_FALSE(inside.replicate_axes.empty());
  const PlanDegrees d = plan_degrees(g, inside, titan);
  EXPECT_EQ(d.replicas, 4);
  EXPECT_EQ(d.dp % d.replicas, 0);
  EXPECT_GT(d.dp / d.replicas, 1);
  // Faster than the same plan fully sharded (why it was chosen), and written exactly.
  Plan full = inside;
  full.replicate_axes.clear();
  const StepEstimate hsdp_e = estimate_step(analyze_plan(g, titan, inside), inside, titan);
  const StepEstimate full_e = estimate_step(analyze_plan(g, titan, full), full, titan);
  EXPECT_TRUE(hsdp_e.fits);
  EXPECT_LT(hsdp_e.step_time_s, full_e.step_time_s);
  const ExportResult r = export_plan(ExportTarget::torchtitan, g, titan, inside);
  EXPECT_TRUE(r.exact()) << (r.not_expressible.empty() ? "" : r.not_expressible.front());
  EXPECT_EQ(r.recipe.dp_replicate, 4);
  // Inside Megatron-LM, and without a bound: no replicas.
  so.bound = ExportTarget::megatron;
  EXPECT_TRUE(make_plan("megatron", g, titan, so).replicate_axes.empty());
  so.bound.reset();
  EXPECT_TRUE(make_plan("megatron", g, titan, so).replicate_axes.empty());
}

}  // namespace
}  // namespace symtensor::compiler
