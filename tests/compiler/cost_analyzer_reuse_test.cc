// A PlanAnalyzer that prices plan after plan reuses what it kept (the operator work of the
// last few plans; an incremental update when only some cuts changed). Each analysis it
// gives must equal a fresh analyzer's of the same plan, field by field, and so must the
// per-stage sums it keeps for a search's memory staircase (PlanAnalyzer::totals).
#include <gtest/gtest.h>

#include "compiler/cost/analysis_state.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

void expect_same_comm(const std::vector<CommOp>& a, const std::vector<CommOp>& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].kind, b[k].kind) << where;
    EXPECT_EQ(a[k].axes, b[k].axes) << where;
    EXPECT_EQ(a[k].group.ranks_per_level, b[k].group.ranks_per_level) << where;
    EXPECT_EQ(a[k].bytes, b[k].bytes) << where;
    EXPECT_EQ(a[k].seconds, b[k].seconds) << where;
    EXPECT_EQ(a[k].tensor, b[k].tensor) << where;
    EXPECT_EQ(a[k].overlapped, b[k].overlapped) << where;
    EXPECT_EQ(a[k].beside_microbatch, b[k].beside_microbatch) << where;
    EXPECT_EQ(a[k].every_micro_batch, b[k].every_micro_batch) << where;
  }
}

void expect_same_analysis(const PlanAnalysis& a, const PlanAnalysis& b, const Graph& g) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t k = 0; k < a.ops.size(); ++k) {
    const OpWork& x = a.ops[k];
    const OpWork& y = b.ops[k];
    ASSERT_EQ(x.node, y.node);
    const std::string& name = g.node(x.node).name;
    EXPECT_EQ(x.stage, y.stage) << name;
    EXPECT_EQ(x.ways, y.ways) << name;
    EXPECT_EQ(x.fwd_flops, y.fwd_flops) << name;
    EXPECT_EQ(x.fwd_bytes, y.fwd_bytes) << name;
    EXPECT_EQ(x.fwd_seconds, y.fwd_seconds) << name;
    EXPECT_EQ(x.bwd_flops, y.bwd_flops) << name;
    EXPECT_EQ(x.bwd_bytes, y.bwd_bytes) << name;
    EXPECT_EQ(x.bwd_seconds, y.bwd_seconds) << name;
    EXPECT_EQ(x.saved_bytes, y.saved_bytes) << name;
    EXPECT_EQ(x.buffer_bytes, y.buffer_bytes) << name;
    EXPECT_EQ(x.recomputed, y.recomputed) << name;
    EXPECT_EQ(x.offload_fwd_seconds, y.offload_fwd_seconds) << name;
    EXPECT_EQ(x.offload_bwd_seconds, y.offload_bwd_seconds) << name;
    expect_same_comm(x.fwd_comm, y.fwd_comm, name + " forward");
    expect_same_comm(x.bwd_comm, y.bwd_comm, name + " backward");
  }
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t k = 0; k < a.params.size(); ++k) {
    const std::string& name = g.tensor(a.params[k].tensor).name;
    EXPECT_EQ(a.params[k].tensor, b.params[k].tensor);
    EXPECT_EQ(a.params[k].stage, b.params[k].stage) << name;
    EXPECT_EQ(a.params[k].local_elements, b.params[k].local_elements) << name;
    EXPECT_EQ(a.params[k].gather_unit, b.params[k].gather_unit) << name;
    expect_same_comm(a.params[k].grad_sync, b.params[k].grad_sync, name + " gradient sync");
    expect_same_comm(a.params[k].regather, b.params[k].regather, name + " regather");
    expect_same_comm(a.params[k].gather, b.params[k].gather, name + " gather");
  }
  ASSERT_EQ(a.stage_memory.size(), b.stage_memory.size());
  for (std::size_t s = 0; s < a.stage_memory.size(); ++s) {
    EXPECT_EQ(a.stage_memory[s].parameters, b.stage_memory[s].parameters);
    EXPECT_EQ(a.stage_memory[s].gradients, b.stage_memory[s].gradients);
    EXPECT_EQ(a.stage_memory[s].optimizer, b.stage_memory[s].optimizer);
    EXPECT_EQ(a.stage_memory[s].activations_per_micro_batch, b.stage_memory[s].activations_per_micro_batch);
    EXPECT_EQ(a.stage_memory[s].micro_batches_in_flight, b.stage_memory[s].micro_batches_in_flight);
    EXPECT_EQ(a.stage_memory[s].working_buffers, b.stage_memory[s].working_buffers);
    EXPECT_EQ(a.stage_memory[s].working_buffers_node, b.stage_memory[s].working_buffers_node);
    EXPECT_EQ(a.stage_memory[s].collective_buffers, b.stage_memory[s].collective_buffers);
    EXPECT_EQ(a.stage_memory[s].reserve, b.stage_memory[s].reserve);
  }
  EXPECT_EQ(a.p2p_bytes, b.p2p_bytes);
  EXPECT_EQ(a.optimizer_seconds_per_stage, b.optimizer_seconds_per_stage);
  EXPECT_EQ(a.device_memory, b.device_memory);
  EXPECT_EQ(a.moe_load.imbalance, b.moe_load.imbalance);
  EXPECT_EQ(a.moe_load.dropless_layers, b.moe_load.dropless_layers);
  EXPECT_EQ(a.moe_load.capacity_layers, b.moe_load.capacity_layers);
  EXPECT_EQ(a.moe_load.dropped, b.moe_load.dropped);
  EXPECT_EQ(a.moe_load.expert_parallel, b.moe_load.expert_parallel);
}

void expect_same_totals(const StageTotals& a, const StageTotals& b) {
  EXPECT_EQ(a.fwd_compute, b.fwd_compute);
  EXPECT_EQ(a.fwd_comm, b.fwd_comm);
  EXPECT_EQ(a.bwd_compute, b.bwd_compute);
  EXPECT_EQ(a.bwd_comm, b.bwd_comm);
  EXPECT_EQ(a.grad_sync, b.grad_sync);
  EXPECT_EQ(a.gather, b.gather);
  EXPECT_EQ(a.first_gather, b.first_gather);
  EXPECT_EQ(a.p2p_bytes, b.p2p_bytes);
  EXPECT_EQ(a.peak_memory, b.peak_memory);
  EXPECT_EQ(a.model_flops, b.model_flops);
  EXPECT_EQ(a.hardware_flops, b.hardware_flops);
  EXPECT_EQ(a.after_step_s, b.after_step_s);
  EXPECT_EQ(a.device_memory, b.device_memory);
}

class AnalyzerReuse : public ::testing::Test {
 protected:
  AnalyzerReuse()
      : graph_(testing::zoo_graph("gpt-1.7b-tiny", 16, 32)),
        cluster_(hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 2, 4)) {
    StrategyOptions options;
    options.megatron = "tp=2,pp=2,mb=2";
    megatron_ = make_plan("megatron", graph_, cluster_, options);
  }

  // The plan with the cuts of every `stride`-th node from `first` dropped (a replicated
  // operator is always a valid cut): what a refinement move changes, and more.
  Plan uncut(int first, int stride) const {
    Plan p = megatron_;
    for (std::size_t id = first; id < p.node_cuts.size(); id += stride) p.node_cuts[id] = NodeCut{};
    return p;
  }

  // Prices `plans` in turn with one analyzer, each checked against a fresh analyzer.
  void expect_each_as_fresh(const std::vector<Plan>& plans) {
    const NumericGraph ng(graph_);
    PlanAnalyzer shared(graph_, cluster_, ng);
    for (std::size_t k = 0; k < plans.size(); ++k) {
      SCOPED_TRACE("plan " + std::to_string(k));
      const PlanAnalysis& reused = shared.analyze_in_place(plans[k]);
      expect_same_analysis(reused, analyze_plan(graph_, cluster_, plans[k]), graph_);
    }
  }

  Graph graph_;
  hardware::Cluster cluster_;
  Plan megatron_;
};

TEST_F(AnalyzerReuse, FewCutsChangedEqualsAFreshAnalysis) {
  // One node, a few spread out, then back to the first plan: each a small change of the last.
  expect_each_as_fresh({megatron_, uncut(40, 1000000), uncut(3, 37), uncut(5, 11), megatron_});
}

TEST_F(AnalyzerReuse, ManyCutsChangedEqualsAFreshAnalysis) {
  expect_each_as_fresh({megatron_, uncut(0, 1), uncut(1, 2), megatron_});
}

TEST_F(AnalyzerReuse, StagesAndMemoryKnobsChangedEqualsAFreshAnalysis) {
  Plan moved = uncut(7, 23);
  // The first stage's last operator moves to the second stage (stages stay monotone).
  NodeId last_of_first = kNone;
  for (NodeId id : graph_.topological_order())
    if (moved.stage_of_node[id] == 0) last_of_first = id;
  ASSERT_NE(last_of_first, kNone);
  bool feeds_first = false;
  for (TensorId t : graph_.node(last_of_first).outputs)
    for (NodeId c : graph_.tensor(t).consumers) feeds_first |= moved.stage_of_node[c] == 0;
  if (!feeds_first) moved.stage_of_node[last_of_first] = 1;
  Plan zero3 = moved;
  zero3.zero_stage = 3;
  zero3.recompute = RecomputePolicy::full;
  Plan other_batch = megatron_;
  other_batch.micro_batches = 4;
  expect_each_as_fresh({megatron_, moved, zero3, other_batch, megatron_, other_batch, uncut(2, 9)});
}

// A search's shorter steps of one plan (simulate_shortened): the same micro-batch size over
// fewer or more micro-batches reuses the operator work, whose analysis from scratch would copy
// twins, and equals a fresh analysis (the step's FLOPs and activations in flight included).
TEST_F(AnalyzerReuse, AnotherCountOfTheSameMicroBatchReusesTheWork) {
  const NumericGraph ng(graph_);
  PlanAnalyzer shared(graph_, cluster_, ng);
  shared.analyze_in_place(megatron_);
  const std::size_t copies = shared.twin_copies();
  ASSERT_GT(copies, 0u);  // the witness: an analysis from scratch of these layers copies twins
  const double size = megatron_.global_batch / megatron_.micro_batches;
  for (int m : {1, 2, 3, 8, megatron_.micro_batches}) {  // 1: fewer in flight than the pipeline's 2 stages
    SCOPED_TRACE(std::to_string(m) + " micro-batches");
    Plan p = megatron_;
    p.micro_batches = m;
    p.global_batch = size * m;
    const PlanAnalysis fresh = analyze_plan(graph_, cluster_, p);
    expect_same_analysis(shared.analyze_in_place(p), fresh, graph_);
    expect_same_totals(shared.totals(p), stage_totals(fresh, p));
  }
  EXPECT_EQ(shared.twin_copies(), copies);
  Plan larger = megatron_;  // twice the micro-batch: its own work
  larger.global_batch *= 2;
  expect_same_analysis(shared.analyze_in_place(larger), analyze_plan(graph_, cluster_, larger), graph_);
  EXPECT_GT(shared.twin_copies(), copies);
}

// The staircase a search walks on one plan's cuts (recomputation x ZeRO x interleaving x
// schedule), with cut, micro-batch and mode changes between, priced by totals() and
// analyze_in_place() in turn on one analyzer: every answer equals the sums of a fresh
// analysis, and so does the step estimate made from it.
TEST_F(AnalyzerReuse, KeptTotalsEqualTheSumsOfAFreshAnalysis) {
  std::vector<Plan> plans;
  auto staircase = [&](const Plan& base) {
    for (RecomputePolicy r : {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full})
      for (int zero : {3, 2, 1, 0}) {
        Plan p = base;
        p.recompute = r;
        p.zero_stage = zero;
        plans.push_back(p);
      }
    for (int v : {2, 4}) {
      Plan p = base;
      p.virtual_stages = v;
      p.schedule = Schedule::interleaved_1f1b;
      p.distributed_optimizer = true;
      plans.push_back(p);
    }
    // Interleaved under each recomputation policy, between plans that are not: the chunks'
    // activations are made when an interleaved plan first needs them, per policy
    // (OperatorSums::saved_positions).
    for (RecomputePolicy r : {RecomputePolicy::full, RecomputePolicy::none, RecomputePolicy::selective}) {
      Plan p = base;
      p.recompute = r;
      plans.push_back(p);
      p.virtual_stages = 2;
      p.schedule = Schedule::interleaved_1f1b;
      plans.push_back(p);
    }
    Plan layers = base;
    layers.recompute = RecomputePolicy::full;
    layers.recompute_layers.assign(base.pipeline_stages(), 1);
    layers.virtual_stages = 2;
    layers.schedule = Schedule::interleaved_1f1b;
    plans.push_back(layers);
    Plan gpipe = base;
    gpipe.schedule = Schedule::gpipe;
    gpipe.recompute = RecomputePolicy::selective;
    plans.push_back(gpipe);
  };
  staircase(megatron_);
  staircase(uncut(3, 37));
  Plan four = megatron_;
  four.micro_batches = 4;
  staircase(four);
  staircase(megatron_);  // back to the first cuts: kept beside the micro-batch-4 work
  Plan infer = megatron_;
  infer.mode = ExecutionMode::infer;
  plans.push_back(infer);
  plans.push_back(megatron_);

  const NumericGraph ng(graph_);
  PlanAnalyzer shared(graph_, cluster_, ng);
  for (std::size_t k = 0; k < plans.size(); ++k) {
    SCOPED_TRACE("plan " + std::to_string(k));
    const PlanAnalysis fresh = analyze_plan(graph_, cluster_, plans[k]);
    const StageTotals expected = stage_totals(fresh, plans[k]);
    if (k % 3 == 2) {
      expect_same_analysis(shared.analyze_in_place(plans[k]), fresh, graph_);
      continue;
    }
    const StageTotals& kept = shared.totals(plans[k]);
    expect_same_totals(kept, expected);
    EXPECT_EQ(estimate_step(kept, plans[k], cluster_).step_time_s, estimate_step(fresh, plans[k], cluster_).step_time_s);
  }
}

// Megatron's exhaustive search walks the micro-batch sizes again at each interleaving depth:
// the second walk finds every size's operator work kept (no analysis from scratch, which
// would copy twins again), each equal to a fresh analysis. Past kKeptPlans other plans the
// first one is made again.
TEST_F(AnalyzerReuse, AWalkOverMicroBatchSizesAgainReusesEachSizesWork) {
  std::vector<Plan> sizes;
  for (int m : {1, 2, 4, 8}) {
    Plan p = megatron_;
    p.micro_batches = m;
    sizes.push_back(p);
  }
  const NumericGraph ng(graph_);
  PlanAnalyzer shared(graph_, cluster_, ng);
  for (const Plan& p : sizes) shared.totals(p);
  const std::size_t copies = shared.twin_copies();
  ASSERT_GT(copies, 0u);  // the witness: an analysis from scratch of these layers copies twins
  for (int v : {2, 4})
    for (Plan p : sizes) {
      SCOPED_TRACE("v=" + std::to_string(v) + " m=" + std::to_string(p.micro_batches));
      p.virtual_stages = v;
      p.schedule = Schedule::interleaved_1f1b;
      const PlanAnalysis fresh = analyze_plan(graph_, cluster_, p);
      expect_same_totals(shared.totals(p), stage_totals(fresh, p));
      expect_same_analysis(shared.analyze_in_place(p), fresh, graph_);
    }
  EXPECT_EQ(shared.twin_copies(), copies);

  for (std::size_t k = 0; k < PlanAnalyzer::State::kKeptPlans; ++k) {
    Plan other = megatron_;  // micro-batches of 6, 10, 14, ... samples, none of the walk's: their own operator work
    other.global_batch = megatron_.micro_batches * (4.0 * static_cast<double>(k) + 6);
    shared.totals(other);
  }
  const std::size_t before = shared.twin_copies();
  expect_same_totals(shared.totals(sizes[0]), stage_totals(analyze_plan(graph_, cluster_, sizes[0]), sizes[0]));
  EXPECT_GT(shared.twin_copies(), before);
}

TEST_F(AnalyzerReuse, ABadPlanAfterAGoodOneIsReportedAndForgotten) {
  const NumericGraph ng(graph_);
  PlanAnalyzer shared(graph_, cluster_, ng);
  shared.analyze_in_place(megatron_);
  Plan bad = megatron_;
  const hardware::DeviceMesh mesh = plan_mesh(bad, cluster_);
  // A cut over an axis that does not exist, on one node: caught by the incremental path too.
  for (NodeId id = 0; id < static_cast<NodeId>(bad.node_cuts.size()); ++id)
    if (!graph_.node(id).outputs.empty() && !bad.node_cuts[id].loop_axes.empty()) {
      bad.node_cuts[id].loop_axes[0] = {static_cast<int>(mesh.axes().size()) + 3};
      break;
    }
  EXPECT_THROW(shared.analyze_in_place(bad), std::runtime_error);
  expect_same_analysis(shared.analyze_in_place(uncut(4, 13)), analyze_plan(graph_, cluster_, uncut(4, 13)), graph_);
}

// An analysis from scratch copies an operator's work from its twin in an earlier repeated
// layer when both are priced in the same context (PlanAnalyzer::reuse_repeated_layers). On
// models of six identical layers (dense with GQA, MoE with routed tokens, DeepSeek's latent
// attention with a dense first layer and a group-limited router) and plans that cut, stage,
// recompute and exchange tokens differently, every copied cost equals the one the operator
// gets priced on its own, field by field, and so do the per-stage totals.
Graph twin_layers_graph(const std::string& preset, int layers) {
  models::ModelConfig config = models::preset_config(preset);
  config.layers = layers;
  ImportOptions o;
  o.bindings = {{"batch", 16}, {"seq", 32}};
  o.warn_opaque = false;
  return import_onnx_model(models::build_model(config), preset, o);
}

TEST(TwinLayers, CopiedWorkEqualsTheOperatorsOwnPricing) {
  const hardware::Cluster cluster = testing::dgx(2, 4);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"llama2-7b-tiny", {"tp=2,pp=2,mb=2", "tp=4,pp=1,mb=4,sp=1,recompute=full", "tp=1,pp=4,mb=1,recompute=selective"}},
      {"mixtral-8x7b-tiny", {"tp=2,pp=2,mb=2,ep=2", "tp=1,pp=1,mb=2,ep=4,dispatcher=deepep", "tp=2,pp=1,mb=1,sp=1,ep=4,etp=1"}},
      {"deepseek-v3-tiny", {"tp=2,pp=2,mb=2,ep=2,dispatcher=deepep", "tp=4,pp=1,mb=2,sp=1,ep=2"}},
  };
  for (const auto& [preset, knobs] : cases) {
    Graph g = twin_layers_graph(preset, 6);
    const NumericGraph ng(g);
    ASSERT_EQ(ng.num_layers(), 6) << preset;
    std::vector<Plan> plans;
    for (const std::string& k : knobs) {
      StrategyOptions options;
      options.megatron = k;
      plans.push_back(make_plan("megatron", g, cluster, options));
    }
    plans.push_back(make_plan("zero3", g, cluster, StrategyOptions{}));
    Plan partly = plans.front();  // some twins cut apart from the others
    for (std::size_t id = 5; id < partly.node_cuts.size(); id += 17) partly.node_cuts[id] = NodeCut{};
    plans.push_back(partly);
    PlanAnalyzer copied(g, cluster, ng), own(g, cluster, ng);
    own.reuse_repeated_layers(false);
    for (std::size_t k = 0; k < plans.size(); ++k) {
      SCOPED_TRACE(preset + " plan " + std::to_string(k));
      expect_same_analysis(copied.analyze(plans[k]), own.analyze(plans[k]), g);
      expect_same_totals(copied.totals(plans[k]), own.totals(plans[k]));
      // A fresh analyzer per plan: every operator priced from scratch, twins copied or not.
      PlanAnalyzer fresh_copied(g, cluster, ng), fresh_own(g, cluster, ng);
      fresh_own.reuse_repeated_layers(false);
      expect_same_analysis(fresh_copied.analyze(plans[k]), fresh_own.analyze(plans[k]), g);
      // Six identical layers: the comparison above exercised copies, the other side none.
      EXPECT_GT(fresh_copied.twin_copies(), 0u);
      EXPECT_EQ(fresh_own.twin_copies(), 0u);
    }
    EXPECT_GT(copied.twin_copies(), 0u);
  }
}

// The next micro-batch size of stamped cuts (a search's walk) copies the twins the first
// analysis of those cuts found without comparing again: the same work as pricing every operator.
TEST(TwinLayers, ReplayedCopiesAtOtherMicroBatchSizesEqualTheOperatorsOwnPricing) {
  const hardware::Cluster cluster = testing::dgx(2, 4);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"llama2-7b-tiny", "tp=2,pp=2,mb=1"},
      {"llama2-7b-tiny", "tp=4,pp=1,mb=1,sp=1,recompute=full"},
      {"mixtral-8x7b-tiny", "tp=2,pp=2,mb=1,ep=2"},
      {"deepseek-v3-tiny", "tp=2,pp=2,mb=1,ep=2,dispatcher=deepep"},
  };
  for (const auto& [preset, knobs] : cases) {
    Graph g = twin_layers_graph(preset, 6);
    const NumericGraph ng(g);
    StrategyOptions options;
    options.megatron = knobs;
    Plan plan = make_plan("megatron", g, cluster, options);
    plan.cuts_stamp = new_cuts_stamp();
    PlanAnalyzer replayed(g, cluster, ng), own(g, cluster, ng);
    own.reuse_repeated_layers(false);
    const int most = plan.micro_batches;
    int sizes = 0;
    for (int m = most; m >= 1; m /= 2, ++sizes) {
      SCOPED_TRACE(preset + " " + knobs + " at " + std::to_string(m) + " micro-batches");
      plan.micro_batches = m;
      expect_same_analysis(replayed.analyze(plan), own.analyze(plan), g);
      expect_same_totals(replayed.totals(plan), own.totals(plan));
    }
    ASSERT_GE(sizes, 2) << preset;
    EXPECT_EQ(replayed.twin_replays(), static_cast<std::size_t>(sizes - 1)) << preset << " " << knobs;
    EXPECT_EQ(own.twin_replays(), 0u);
  }
}

}  // namespace
}  // namespace symtensor::compiler
