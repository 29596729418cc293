// Partial --megatron knobs are constraints (issue #30): the knobs given fix those values and
// the Megatron search chooses the rest; a fully fixed set (tp, pp and mb given) is exactly the
// plan it was before; a constraint no configuration can meet is one line naming the knob.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/search_common.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Plan via_make_plan(Graph& g, const hardware::Cluster& c, const std::string& knobs) {
  StrategyOptions o;
  o.megatron = knobs;
  return make_plan("megatron", g, c, o);
}

void expect_same_plan(const Plan& a, const Plan& b, const std::string& knobs) {
  EXPECT_EQ(a.mesh_factors, b.mesh_factors) << knobs;
  EXPECT_EQ(a.pipeline_axis, b.pipeline_axis) << knobs;
  EXPECT_EQ(a.stage_of_node, b.stage_of_node) << knobs;
  EXPECT_EQ(a.node_cuts, b.node_cuts) << knobs;
  EXPECT_EQ(a.micro_batches, b.micro_batches) << knobs;
  EXPECT_EQ(a.schedule, b.schedule) << knobs;
  EXPECT_EQ(a.virtual_stages, b.virtual_stages) << knobs;
  EXPECT_EQ(a.recompute, b.recompute) << knobs;
  EXPECT_EQ(a.zero_stage, b.zero_stage) << knobs;
  EXPECT_EQ(a.distributed_optimizer, b.distributed_optimizer) << knobs;
  EXPECT_EQ(a.sequence_parallel, b.sequence_parallel) << knobs;
}

TEST(MegatronConstraints, ParserRecordsTheKeysGiven) {
  const MegatronConstraints c = parse_megatron_constraints("tp=2,sp=1,recompute=full");
  EXPECT_TRUE(c.has("tp") && c.has("sp") && c.has("recompute"));
  EXPECT_FALSE(c.has("pp") || c.has("mb") || c.has("vp"));
  EXPECT_EQ(c.knobs, parse_megatron_knobs("tp=2,sp=1,recompute=full"));
  EXPECT_EQ(c.text(), "tp=2,sp=1,recompute=full");
  EXPECT_FALSE(c.fully_fixed());
  EXPECT_TRUE(parse_megatron_constraints("mb=1,pp=2,tp=4").fully_fixed());
  EXPECT_TRUE(parse_megatron_constraints("tp=1,pp=1,mb=2,vp=1,sp=0").fully_fixed());
  EXPECT_FALSE(parse_megatron_constraints("").fully_fixed());
  EXPECT_NE(error_of([] { parse_megatron_constraints("tp=2,tp=4"); }).find("'tp' given twice"), std::string::npos);
}

// The case: a Llama-3-8B on one DGX H100 at 64 sequences of 8k. tp=2 with every other
// knob at its default does not fit; tp=2 as a constraint finds a plan that does, with tp=2.
TEST(MegatronConstraints, TensorParallelTwoOnLlama3_8BFindsAFittingPlan) {
  Graph g = testing::zoo_graph("llama3-8b", models::Overrides{}, 64, 8192);
  const hardware::Cluster c = testing::cluster_of("dgx-h100", 1, 8);
  const Plan defaults = via_make_plan(g, c, "tp=2,pp=1,mb=1");
  const Evaluation at_defaults = evaluate_plan(g, c, defaults);
  ASSERT_TRUE(at_defaults.valid) << at_defaults.error;
  EXPECT_FALSE(at_defaults.estimate.fits) << "tp=2 at the defaults was expected not to fit (issue #30)";

  const MegatronSearchResult r = megatron_search(g, c, StrategyOptions{}, parse_megatron_constraints("tp=2"));
  EXPECT_EQ(r.knobs.tp, 2);
  EXPECT_TRUE(r.estimate.fits) << to_string(r.knobs);
  EXPECT_GT(r.evaluations, 1);
  // make_plan's entry gives the same plan, priced the same.
  const Plan p = via_make_plan(g, c, "tp=2");
  expect_same_plan(p, r.plan, "tp=2");
  const Evaluation e = evaluate_plan(g, c, p);
  ASSERT_TRUE(e.valid) << e.error;
  EXPECT_TRUE(e.estimate.fits);
  EXPECT_DOUBLE_EQ(e.estimate.step_time_s, r.estimate.step_time_s);
  // Every tensor-parallel width priced: no faster than the unconstrained best.
  const MegatronSearchResult best = megatron_search(g, c, StrategyOptions{});
  EXPECT_GE(r.estimate.step_time_s, best.estimate.step_time_s);
}

TEST(MegatronConstraints, GivenKnobsHoldAndTheRestAreSearched) {
  Graph g = testing::zoo_graph("llama2-7b-tiny", models::Overrides{}, 16, 128);
  const hardware::Cluster c = testing::cluster_of("dgx-a100", 1, 8);
  const MegatronSearchResult best = megatron_search(g, c, StrategyOptions{});
  for (const std::string knobs : {"pp=2", "sp=1,recompute=selective", "mb=2,distopt=1", "tp=2,fsdp=3", "pp=2,vp=1,mb=1"}) {
    const MegatronConstraints k = parse_megatron_constraints(knobs);
    const MegatronSearchResult r = megatron_search(g, c, StrategyOptions{}, k);
    if (k.has("tp")) {
      EXPECT_EQ(r.knobs.tp, k.knobs.tp) << knobs;
    }
    if (k.has("pp")) {
      EXPECT_EQ(r.knobs.pp, k.knobs.pp) << knobs;
    }
    if (k.has("vp")) {
      EXPECT_EQ(r.knobs.vp, k.knobs.vp) << knobs;
    }
    if (k.has("mb")) {
      EXPECT_EQ(r.knobs.mb, k.knobs.mb) << knobs;
    }
    if (k.has("sp")) {
      EXPECT_EQ(r.knobs.sp, k.knobs.sp) << knobs;
    }
    if (k.has("recompute")) {
      EXPECT_EQ(r.knobs.recompute, k.knobs.recompute) << knobs;
    }
    if (k.has("distopt")) {
      EXPECT_EQ(r.knobs.distopt || r.knobs.fsdp > 0, k.knobs.distopt) << knobs;
    }
    if (k.has("fsdp")) {
      EXPECT_EQ(r.knobs.fsdp, k.knobs.fsdp) << knobs;
    }
    EXPECT_GE(r.estimate.step_time_s, best.estimate.step_time_s) << knobs;
    // The plan is the fixed-knob plan of the knobs it found.
    expect_same_plan(r.plan, make_megatron_plan(g, c, r.knobs, StrategyOptions{}), knobs);
  }
}

TEST(MegatronConstraints, FullyFixedKnobsAreExactlyThatPlan) {
  Graph g = testing::zoo_graph("llama2-7b-tiny", models::Overrides{}, 16, 128);
  const hardware::Cluster c = testing::cluster_of("dgx-a100", 2, 4);
  for (const std::string knobs : {"tp=2,pp=1,mb=1", "tp=2,pp=2,mb=2", "tp=4,pp=2,mb=1,sp=1,recompute=full",
                                  "tp=1,pp=2,mb=4,vp=1,distopt=1", "pp=1,mb=2,tp=1"}) {
    expect_same_plan(via_make_plan(g, c, knobs), make_megatron_plan(g, c, parse_megatron_knobs(knobs), StrategyOptions{}),
                     knobs);
  }
}

TEST(MegatronConstraints, ImpossibleConstraintsAreOneLineNamingTheKnob) {
  models::Overrides o;
  o.layers = 2;
  Graph g = testing::zoo_graph("llama3-8b", o, 64, 8192);  // 32 heads
  const hardware::Cluster c = testing::cluster_of("dgx-h100", 1, 8);
  const std::string tp3 = error_of([&] { via_make_plan(g, c, "tp=3"); });
  EXPECT_EQ(tp3.rfind("--megatron tp=3: ", 0), 0u) << tp3;
  EXPECT_EQ(tp3.find('\n'), std::string::npos) << tp3;
  EXPECT_NE(tp3.find("8 GPUs per node"), std::string::npos) << tp3;
  for (const auto& [knobs, named] : std::vector<std::pair<std::string, std::string>>{
           {"tp=2,ep=2", "--megatron ep=2: "},          // no experts
           {"tp=2,first=1", "--megatron first=1: "},    // no pipeline given
           {"mb=3", "--megatron mb=3: "},               // 64 sequences
           {"pp=4", "--megatron pp=4: "}}) {            // 2 layers
    const std::string e = error_of([&] { via_make_plan(g, c, knobs); });
    EXPECT_EQ(e.rfind(named, 0), 0u) << knobs << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Knobs each possible but not together: the line names them all and the reason.
  const std::string together = error_of([&] { via_make_plan(g, c, "tp=8,cp=2"); });
  EXPECT_EQ(together.rfind("--megatron tp=8,cp=2: no valid configuration (", 0), 0u) << together;
  EXPECT_EQ(together.find('\n'), std::string::npos) << together;
}

// 24 GPUs (three nodes), 2 layers and a batch of 32: every grid that divides the devices leaves
// dp = 3, 6, 12 or 24, which the batch does not divide (a third pipeline stage, which would take
// the factor 3, needs a third layer). That is the reason given, not the last depth tried that
// does not divide the devices (tp=8 x pp=2).
TEST(MegatronConstraints, NoGridForTheBatchSaysSoRatherThanTheLastDepthTried) {
  models::Overrides o;
  o.layers = 2, o.seq = 1024;
  Graph g = testing::zoo_graph("llama2-7b", o, 32, 1024);
  const hardware::Cluster c = testing::cluster_of("dgx-h100", 3, 8);
  const std::string e = error_of([&] { megatron_search(g, c, StrategyOptions{}); });
  EXPECT_EQ(e.rfind("megatron search: no valid configuration (batch 32 is not divisible by dp=", 0), 0u) << e;
  EXPECT_EQ(e.find("does not divide the 24 devices"), std::string::npos) << e;
}

// Every candidate failing to build for the same reason: that reason, not the last skip. An MLP
// width of 1026 does not divide over tp=4 (a vocabulary that does not is padded instead).
TEST(MegatronConstraints, TheCommonBuildFailureIsTheReasonGiven) {
  models::Overrides o;
  o.layers = 4, o.hidden = 256, o.heads = 8, o.intermediate = 1026, o.vocab = 50257, o.seq = 256;
  Graph g = testing::zoo_graph("gpt2-small", o, 16, 256);
  const hardware::Cluster c = testing::cluster_of("dgx-a100", 2, 8);
  const std::string e = error_of([&] { via_make_plan(g, c, "tp=4"); });
  EXPECT_EQ(e.rfind("--megatron tp=4: no valid configuration (", 0), 0u) << e;
  EXPECT_NE(e.find("(column-parallel)"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot be cut 4 ways"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

// first=/last= with a pipeline given: stage layer counts are searched around them (the
// candidates megatron_stage_layers refuses are skipped, not fatal).
TEST(MegatronConstraints, FirstAndLastStageLayersWithAGivenPipeline) {
  models::Overrides o;
  o.layers = 6;
  Graph g = testing::zoo_graph("llama2-7b-tiny", o, 16, 128);
  const hardware::Cluster c = testing::cluster_of("dgx-a100", 1, 8);
  const MegatronSearchResult r = megatron_search(g, c, StrategyOptions{}, parse_megatron_constraints("pp=2,first=2"));
  EXPECT_EQ(r.knobs.pp, 2);
  EXPECT_EQ(r.knobs.first, 2);
  EXPECT_EQ(megatron_stage_layers(r.knobs, 6), (std::vector<int>{2, 4}));
}

// Expert layouts: ep given alone keeps etp = tp (Megatron-LM's default); etp given alone
// leaves ep to the search.
TEST(MegatronConstraints, ExpertParallelismGivenKeepsExpertTensorParallelismAtTp) {
  Graph g = testing::zoo_graph("mixtral-8x7b-tiny", models::Overrides{}, 8, 32);
  const hardware::Cluster c = testing::cluster_of("dgx-a100", 1, 4);
  const MegatronSearchResult ep = megatron_search(g, c, StrategyOptions{}, parse_megatron_constraints("tp=2,ep=2"));
  EXPECT_EQ(ep.knobs.ep, 2);
  EXPECT_EQ(expert_tp(ep.knobs), 2);
  const MegatronSearchResult etp = megatron_search(g, c, StrategyOptions{}, parse_megatron_constraints("tp=2,etp=1"));
  EXPECT_EQ(expert_tp(etp.knobs), 1);
  EXPECT_EQ(etp.knobs.ep % 2, 0) << to_string(etp.knobs);  // etp = 1 folds ep over the tp ranks
}

}  // namespace
}  // namespace symtensor::compiler
