// plan.yaml: every fixed strategy's plan on GPT, LLaMA (GQA) and Mixtral round-trips
// exactly (the Plan read back equals the one written, the text written again is
// byte-identical) and re-evaluates to the same cost; bad files give FILE:LINE: key errors.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

void expect_same_plan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.cluster, b.cluster);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.precision, b.precision);
  EXPECT_EQ(a.mesh_factors, b.mesh_factors);
  EXPECT_EQ(a.pipeline_axis, b.pipeline_axis);
  EXPECT_EQ(a.stage_of_node, b.stage_of_node);
  ASSERT_EQ(a.node_cuts.size(), b.node_cuts.size());
  for (std::size_t n = 0; n < a.node_cuts.size(); ++n) {
    // a cut may list no axes for trailing loops: compare loop by loop
    const auto& x = a.node_cuts[n].loop_axes;
    const auto& y = b.node_cuts[n].loop_axes;
    for (std::size_t l = 0; l < std::max(x.size(), y.size()); ++l) {
      const std::vector<int> none;
      EXPECT_EQ(l < x.size() ? x[l] : none, l < y.size() ? y[l] : none) << "node " << n << " loop " << l;
    }
  }
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.micro_batches, b.micro_batches);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.virtual_stages, b.virtual_stages);
  EXPECT_EQ(a.recompute, b.recompute);
  EXPECT_EQ(a.zero_stage, b.zero_stage);
  EXPECT_EQ(a.distributed_optimizer, b.distributed_optimizer);
  EXPECT_EQ(a.sequence_parallel, b.sequence_parallel);
}

struct RoundTripCase {
  const char* preset;
  const char* strategy;
  const char* megatron;
  ExecutionMode mode;
};

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, ReadsBackTheSamePlanAndTheSameCost) {
  const RoundTripCase c = GetParam();
  Graph g = testing::zoo_graph(c.preset, 16, 32);
  const hardware::Cluster cluster = testing::dgx(2, 4);
  StrategyOptions o;
  o.mode = c.mode;
  o.megatron = c.megatron;
  const Plan plan = make_plan(c.strategy, g, cluster, o);
  PlanPrediction prediction;
  const StepEstimate before = estimate_step(analyze_plan(g, cluster, plan), plan, cluster);
  prediction.step_time_s = before.step_time_s;
  prediction.stage_peak_memory = before.stage_peak_memory;
  const std::string text = plan_to_yaml(plan, g, cluster, &prediction);
  EXPECT_EQ(text, plan_to_yaml(plan, g, cluster, &prediction));  // deterministic

  const Plan back = plan_from_yaml(text, "plan.yaml", g, cluster);
  expect_same_plan(plan, back);
  EXPECT_EQ(plan_to_yaml(back, g, cluster, &prediction), text);  // byte-identical rewrite
  const StepEstimate after = estimate_step(analyze_plan(g, cluster, back), back, cluster);
  EXPECT_EQ(after.step_time_s, before.step_time_s);
  EXPECT_EQ(after.stage_peak_memory, before.stage_peak_memory);
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, RoundTrip,
    ::testing::Values(RoundTripCase{"gpt2-small-tiny", "dp", "", ExecutionMode::train},
                      RoundTripCase{"gpt2-small-tiny", "zero3", "", ExecutionMode::train},
                      RoundTripCase{"gpt2-small-tiny", "megatron", "tp=4,pp=2,sp=1,recompute=selective", ExecutionMode::train},
                      RoundTripCase{"llama2-70b-tiny", "dp", "", ExecutionMode::infer},
                      RoundTripCase{"llama2-70b-tiny", "zero3", "", ExecutionMode::train},
                      RoundTripCase{"llama2-70b-tiny", "megatron", "tp=2,pp=2,mb=2,distopt=1", ExecutionMode::train},
                      RoundTripCase{"mixtral-8x7b-tiny", "dp", "", ExecutionMode::train},
                      RoundTripCase{"mixtral-8x7b-tiny", "zero3", "", ExecutionMode::train},
                      RoundTripCase{"mixtral-8x7b-tiny", "megatron", "tp=2,pp=2,vp=1", ExecutionMode::infer}));

TEST(PlanYamlFile, WritesThroughATemporaryAndReadsBack) {
  Graph g = testing::zoo_graph("gpt2-small-tiny", 8, 16);
  const hardware::Cluster cluster = testing::dgx(1, 4);
  StrategyOptions o;
  const Plan plan = make_plan("dp", g, cluster, o);
  const auto dir = std::filesystem::temp_directory_path() / ("plan_yaml_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "plan.yaml").string();
  write_plan_yaml(path, plan, g, cluster);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  o.plan_file = path;
  expect_same_plan(plan, make_plan("file", g, cluster, o));
  EXPECT_THROW(write_plan_yaml((dir / "missing" / "plan.yaml").string(), plan, g, cluster), std::runtime_error);
  std::filesystem::remove_all(dir);
}

// Each error names the file, the line (1-based) and the key.
TEST(PlanYamlErrors, NameFileLineAndKey) {
  Graph g = testing::zoo_graph("gpt2-small-tiny", 8, 16);
  const hardware::Cluster cluster = testing::dgx(1, 4);
  const std::string good = plan_to_yaml(make_plan("dp", g, cluster, StrategyOptions{}), g, cluster);
  // Edits go below the comment header, whose key list ("mode: train|infer") would match too.
  const auto body = good.find("\nformat:");
  ASSERT_NE(body, std::string::npos);
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from, body);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    try {
      plan_from_yaml(text, "p.yaml", g, cluster);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto line_of = [&](const std::string& needle) {
    const auto at = good.find(needle, body);
    return std::to_string(1 + std::count(good.begin(), good.begin() + static_cast<long>(at), '\n'));
  };
  EXPECT_EQ(error_of("mode: train", "mode: walk").rfind("p.yaml:" + line_of("mode: train") + ": key 'mode': unknown mode", 0), 0u)
      << error_of("mode: train", "mode: walk");
  EXPECT_NE(error_of("zero_stage: 0", "zero_stage: 7").find("key 'zero_stage'"), std::string::npos);
  EXPECT_NE(error_of("zero_stage: 0", "zero_stage: x").find("key 'zero_stage'"), std::string::npos);
  EXPECT_NE(error_of("factors: [4]", "factors: [3]").find("key 'mesh.levels'"), std::string::npos);
  EXPECT_NE(error_of("pipeline_axis: none", "pipeline_axis: rack").find("no mesh axis 'rack'"), std::string::npos);
  EXPECT_NE(error_of("[gpu]", "[tpu]").find("no mesh axis 'tpu'"), std::string::npos);
  EXPECT_NE(error_of("b: [gpu]", "q: [gpu]").find("has no loop 'q'"), std::string::npos);
  EXPECT_NE(error_of("stage: 0,", "stage: 1,").find("not in 0..0"), std::string::npos);
  EXPECT_NE(error_of("name: /transformer/Gather_0", "name: nope").find("no node 'nope'"), std::string::npos);
  EXPECT_NE(error_of("format:", "formt:").find("key 'formt': unknown key"), std::string::npos);
  EXPECT_NE(error_of("strategy: dp", "strategy: [dp").find("p.yaml:"), std::string::npos);
  // A plan for another batch than the model is bound to is refused, not silently priced.
  EXPECT_EQ(error_of("global: 8", "global: 16"),
            "p.yaml:" + line_of("global: 8") + ": key 'batch.global': 16 differs from the model's --bind batch=8: "
            "compile the plan again for that batch, or bind batch=16");
  // Micro-batches that do not divide the batch, or leave a rank part of a sample (#34): said at
  // their key, not as a loop that "does not split 4 ways" deep in the analysis.
  EXPECT_EQ(error_of("micro_batches: 1", "micro_batches: 3"),
            "p.yaml:" + line_of("micro_batches: 1") + ": key 'batch.micro_batches': 3 does not divide the global batch 8 "
            "(batch.global); the micro-batches must split it into whole samples (and each data-parallel rank's share)");
  EXPECT_EQ(error_of("micro_batches: 1", "micro_batches: 4"),
            "p.yaml:" + line_of("micro_batches: 1") + ": key 'batch.micro_batches': 4 leaves micro-batches of 2 samples, "
            "and node '/transformer/Gather_1' cuts its loop 'd0' (extent 2 a micro-batch) 4 ways: each way needs whole "
            "samples of every micro-batch; 2 micro-batches would do");
  EXPECT_EQ(error_of("micro_batches: 1", "micro_batches: 8"),
            "p.yaml:" + line_of("micro_batches: 1") + ": key 'batch.micro_batches': 8 leaves micro-batches of 1 sample, "
            "and node '/transformer/Gather_1' cuts its loop 'd0' (extent 1 a micro-batch) 4 ways: each way needs whole "
            "samples of every micro-batch; 2 micro-batches would do");
  EXPECT_EQ(error_of("micro_batches: 1", "micro_batches: 2"), "no error");
}

// The import folds Constant nodes into constants (the fusion pass), so the graph a plan covers
// has none. A plan.yaml written before lists them, uncut: it still reads, to the same plan; a
// Constant entry that cuts something is refused as an unknown node.
TEST(PlanYamlCompat, ConstantNodesOfAnOlderPlanAreSkipped) {
  Graph g = testing::zoo_graph("gpt2-small-tiny", 8, 16);
  for (const Node& n : g.nodes()) ASSERT_NE(n.op_type, "Constant") << n.name;
  const hardware::Cluster cluster = testing::dgx(1, 4);
  const Plan plan = make_plan("dp", g, cluster, StrategyOptions{});
  const std::string good = plan_to_yaml(plan, g, cluster);
  const auto nodes = good.find("\nnodes:\n");
  ASSERT_NE(nodes, std::string::npos);
  const auto first = nodes + std::string("\nnodes:\n").size();
  std::string older = good;
  older.insert(first, "  - {name: /transformer/Constant_7, op: Constant, stage: 0, cut: {}}\n");
  expect_same_plan(plan, plan_from_yaml(older, "old.yaml", g, cluster));
  std::string cutting = good;
  cutting.insert(first, "  - {name: /transformer/Constant_7, op: Constant, stage: 0, cut: {b: [gpu]}}\n");
  EXPECT_THROW(plan_from_yaml(cutting, "old.yaml", g, cluster), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
