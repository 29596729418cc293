// The searches' shortened simulations: a long step simulated as two steps of 2p and 3p
// micro-batches and extended along their difference (simulate_shortened), or as three of 2p,
// 3p and 4p, extended where their increments agree (simulate_periodic). Checked against the
// whole step's simulation (simulate_for_search) on each kind of schedule and sharding, and on
// pipelines whose stages run at different paces (an H100 stage before two A100 ones): the same
// step and stage compute to rounding and the same fit. Nothing guarantees that in general: the
// rule simulate_periodic extends by is checked apart (OnlyEvenGrowthIsExtended).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "compiler/cost/numeric_graph.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/search_simulation.h"
#include "compiler/strategies/megatron.h"
#include "hardware/stack.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct SteadyCase {
  const hardware::Cluster* cluster;
  Graph* graph;
  std::string knobs;
  bool extended = true;                 // whether the search simulates it as two shorter steps
  bool periodic = true;                 // whether simulate_periodic extends it (more than 9p micro-batches, a multiple of p)
  Schedule schedule = Schedule::one_f_one_b;
  std::vector<int> stage_zero_stages = {};  // ZeRO per pipeline stage, when given
  double tolerance = 1e-9;                  // relative, on the step and each stage's compute
};

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

// LLaMA-2 7B at 16 layers and 4k tokens: the uneven pipelines' model.
Graph llama_16_layers_4k(double batch) {
  models::Overrides o;
  o.layers = 16;
  o.seq = 4096;
  return symtensor::testing::zoo_graph("llama2-7b", o, batch, 4096);
}

TEST(SearchSimulation, ALongStepExtendedFromTwoShorterOnesIsTheWholeStep) {
  models::Overrides o;
  o.layers = 8;
  o.seq = 1024;
  Graph llama = symtensor::testing::zoo_graph("llama2-7b", o, 128, 1024);
  Graph mixtral = symtensor::testing::zoo_graph("mixtral-8x7b-tiny", {}, 64, 256);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const hardware::Cluster group = hardware::group_cluster(fleet, 0);
  const std::vector<SteadyCase> cases = {
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1"},                                 // 32 micro-batches, 1F1B
      {&group, &llama, "tp=2,pp=4,mb=1,vp=2"},                                 // interleaved, 128
      {&group, &llama, "tp=2,pp=2,cp=2,mb=1,recompute=full,distopt=1"},        // context parallel, recomputed
      {&group, &llama, "tp=1,pp=2,dp=4,mb=2,fsdp=3", true, false},             // ZeRO-3: gathers and reduce-scatters each micro-batch
      {&group, &llama, "tp=1,pp=2,dp=4,mb=1,fsdp=3"},                          // the same at 32 micro-batches
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1,distopt=1", true, true, Schedule::one_f_one_b, {3, 1}},  // ZeRO per stage
      {&group, &mixtral, "ep=4,mb=1", true, false},                            // no pipeline, experts: 8 micro-batches
      {&group, &llama, "tp=2,pp=1,mb=1,distopt=1"},                            // no pipeline: 32 micro-batches
      {&fleet, &llama, "tp=4,pp=3,dp=2,mb=1,first=2,last=2,sp=1", true, false},  // even stages on a mixed fleet; 64 micro-batches, no multiple of 3
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1", false, false, Schedule::gpipe},  // every micro-batch in flight: whole
      {&group, &llama, "tp=2,pp=2,dp=2,mb=8", false, false},                   // 8 micro-batches: short, whole
  };
  for (const SteadyCase& c : cases) {
    Plan plan = make_megatron_plan(*c.graph, *c.cluster, parse_megatron_knobs(c.knobs), StrategyOptions{});
    plan.schedule = c.schedule;
    plan.stage_zero_stages = c.stage_zero_stages;
    const std::string what = c.knobs + (c.schedule == Schedule::gpipe ? " gpipe" : "") +
                             (c.stage_zero_stages.empty() ? "" : " zero by stage");
    const NumericGraph ng(*c.graph);
    sim::SimOptions options;
    options.record_trace = false;
    const PlanSimulation whole = simulate_plan_lean(*c.graph, plan, *c.cluster, {}, options, &ng);
    SimulationAnalyzers on(*c.graph, *c.cluster, ng);  // kept across this case's simulations, as a search keeps them
    EXPECT_EQ(simulate_for_search(on, plan).step_time_s, whole.report.step_time_s) << what;
    ShorterSteps steps;
    const SearchSimulation steady = simulate_shortened(on, plan, &steps);
    EXPECT_EQ(steady.extended, c.extended) << what;
    EXPECT_GT(whole.report.step_time_s, 0) << what;
    EXPECT_LT(relative(steady.step_time_s, whole.report.step_time_s), c.tolerance) << what << ": " << steady.step_time_s
                                                                           << " s against " << whole.report.step_time_s;
    EXPECT_EQ(steady.fits, whole.report.fits) << what;
    ASSERT_EQ(steady.stage_compute_s.size(), whole.report.stages.size()) << what;
    for (std::size_t s = 0; s < whole.report.stages.size(); ++s) {
      EXPECT_LT(relative(steady.stage_compute_s[s], whole.report.stages[s].compute_s), c.tolerance) << what << " stage " << s;
      EXPECT_EQ(steady.stage_group[s], whole.report.stages[s].group) << what << " stage " << s;
    }
    // What a search reports: extended where its steps at 2p, 3p and 4p grow evenly, else whole.
    const SearchSimulation reported = simulate_periodic(on, plan);
    EXPECT_EQ(reported.extended, c.periodic) << what;
    EXPECT_LT(relative(reported.step_time_s, whole.report.step_time_s), kPeriodTolerance) << what;
    EXPECT_EQ(reported.fits, whole.report.fits) << what;
    ASSERT_EQ(reported.stage_compute_s.size(), whole.report.stages.size()) << what;
    for (std::size_t s = 0; s < whole.report.stages.size(); ++s)
      EXPECT_LT(relative(reported.stage_compute_s[s], whole.report.stages[s].compute_s), kPeriodTolerance)
          << what << " stage " << s;
    // In a search's order, on analyzers of their own (the shorter steps first, the 3p one and the
    // whole step reusing the 2p one's operator work): each step to the bit of its simulation
    // from scratch.
    SimulationAnalyzers in_order(*c.graph, *c.cluster, ng);
    ShorterSteps first;
    simulate_shortened(in_order, plan, &first);
    if (steady.extended) {
      const int p = std::max(plan.pipeline_stages(), 1);
      for (const auto& [m, step] : {std::pair{2 * p, first.at_2p}, std::pair{3 * p, first.at_3p}}) {
        Plan shorter = plan;
        shorter.micro_batches = m;
        shorter.global_batch = (plan.global_batch > 0 ? plan.global_batch : ng.batch_binding()) / plan.micro_batches * m;
        const SimulationReport alone = simulate_plan_lean(*c.graph, shorter, *c.cluster, {}, options, &ng).report;
        EXPECT_EQ(step.step_time_s, alone.step_time_s) << what << " at " << m;
        ASSERT_EQ(step.stage_compute_s.size(), alone.stages.size()) << what << " at " << m;
        for (std::size_t s = 0; s < alone.stages.size(); ++s)
          EXPECT_EQ(step.stage_compute_s[s], alone.stages[s].compute_s) << what << " at " << m << " stage " << s;
      }
    }
    const SearchSimulation again = simulate_for_search(in_order, plan);
    EXPECT_EQ(again.step_time_s, whole.report.step_time_s) << what;
    for (std::size_t s = 0; s < whole.report.stages.size(); ++s)
      EXPECT_EQ(again.stage_compute_s.at(s), whole.report.stages[s].compute_s) << what << " stage " << s;
    // Given the shorter steps the refereeing simulated, only the 4p step is simulated again:
    // the same figures, to the bit.
    if (!steady.extended) continue;
    EXPECT_LT(steps.at_2p.step_time_s, steps.at_3p.step_time_s) << what;
    const SearchSimulation reused = simulate_periodic(on, plan, &steps);
    EXPECT_EQ(reused.extended, reported.extended) << what;
    EXPECT_EQ(reused.step_time_s, reported.step_time_s) << what;
    EXPECT_EQ(reused.fits, reported.fits) << what;
    EXPECT_EQ(reused.stage_compute_s, reported.stage_compute_s) << what;
    // Steps made for another micro-batch count are not taken for this plan's.
    ShorterSteps other = steps;
    other.micro_batches += other.p;
    other.at_3p.step_time_s *= 2;
    EXPECT_EQ(simulate_periodic(on, plan, &other).step_time_s, reported.step_time_s) << what;
  }
}

// A plan that does not fit does not fit when extended: the shorter steps hold as many
// micro-batches in flight as the whole one.
TEST(SearchSimulation, APlanOverMemoryStaysOverIt) {
  Graph llama = symtensor::testing::zoo_graph("llama2-7b", {}, 256, 4096);
  const hardware::Cluster l4 = symtensor::testing::cluster_of("pcie-l4", 1, 8);
  const Plan plan = make_megatron_plan(llama, l4, parse_megatron_knobs("tp=1,pp=8,mb=1"), StrategyOptions{});
  const NumericGraph ng(llama);
  sim::SimOptions options;
  options.record_trace = false;
  const PlanSimulation whole = simulate_plan_lean(llama, plan, l4, {}, options, &ng);
  SimulationAnalyzers on(llama, l4, ng);
  const SearchSimulation steady = simulate_shortened(on, plan);
  EXPECT_TRUE(steady.extended);
  EXPECT_FALSE(whole.report.fits);
  EXPECT_FALSE(steady.fits);
}

// The uneven pipeline stop 52 took for 0.8% short (an H100 stage of 10 layers, two A100 stages
// of 3, 24 micro-batches: too few for simulate_periodic): shortened, it is the whole step.
TEST(SearchSimulation, AnUnevenPipelineIsShortenedToTheWholeStep) {
  Graph graph = llama_16_layers_4k(48);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  Plan plan = make_megatron_plan(graph, fleet, parse_megatron_knobs("tp=2,pp=3,cp=2,dp=2,mb=1"), StrategyOptions{});
  plan = restage_layers(graph, std::move(plan), {10, 3, 3});
  ASSERT_EQ(plan.micro_batches, 24);
  const NumericGraph ng(graph);
  SimulationAnalyzers on(graph, fleet, ng);
  const SearchSimulation whole = simulate_for_search(on, plan);
  const SearchSimulation shortened = simulate_shortened(on, plan);
  EXPECT_TRUE(shortened.extended);
  EXPECT_EQ(shortened.fits, whole.fits);
  EXPECT_LT(relative(shortened.step_time_s, whole.step_time_s), kPeriodTolerance);
  const SearchSimulation reported = simulate_periodic(on, plan);
  EXPECT_FALSE(reported.extended);
  EXPECT_EQ(reported.step_time_s, whole.step_time_s);
}

// Uneven pipelines over an H100 stage and two A100 stages, at 48 micro-batches: whichever stage
// is the slowest, each split reaches its period by 2p, so the shortened step and the step a
// search reports are the whole step, to rounding.
TEST(SearchSimulation, UnevenPipelinesReachTheirPeriodBy2p) {
  Graph graph = llama_16_layers_4k(96);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const NumericGraph ng(graph);
  SimulationAnalyzers on(graph, fleet, ng);
  for (const std::vector<int>& split : std::vector<std::vector<int>>{{14, 1, 1}, {2, 7, 7}, {12, 1, 3}}) {
    for (const char* knobs : {"tp=2,pp=3,cp=2,dp=2,mb=1", "tp=4,pp=3,dp=2,mb=1,recompute=full"}) {
      Plan plan = make_megatron_plan(graph, fleet, parse_megatron_knobs(knobs), StrategyOptions{});
      plan = restage_layers(graph, std::move(plan), split);
      ASSERT_EQ(plan.micro_batches, 48);
      const std::string what = fmt::format("{} split {}", knobs, fmt::join(split, "/"));
      const SearchSimulation whole = simulate_for_search(on, plan);
      const SearchSimulation reported = simulate_periodic(on, plan);
      EXPECT_TRUE(reported.extended) << what;
      EXPECT_LT(relative(reported.step_time_s, whole.step_time_s), kPeriodTolerance) << what;
      EXPECT_EQ(reported.fits, whole.fits) << what;
      EXPECT_LT(relative(simulate_shortened(on, plan).step_time_s, whole.step_time_s), kPeriodTolerance) << what;
    }
  }
}

// The rule itself: figures growing evenly from 2p to 4p are extended; a step or a stage
// whose growth changes, or a fit that changes, is not.
TEST(SearchSimulation, OnlyEvenGrowthIsExtended) {
  auto steps = [](double step, double stage0, double stage1, bool fits = true) {
    SearchSimulation s;
    s.step_time_s = step, s.stage_compute_s = {stage0, stage1}, s.fits = fits;
    return s;
  };
  // p = 2: 4, 6 and 8 micro-batches; the plan runs 20.
  const std::optional<SearchSimulation> even = periodic_extension(steps(1.0, 0.5, 0.4), steps(1.3, 0.7, 0.55), steps(1.6, 0.9, 0.7), 2, 20);
  ASSERT_TRUE(even);
  EXPECT_DOUBLE_EQ(even->step_time_s, 1.6 + 6 * 0.3);
  EXPECT_DOUBLE_EQ(even->stage_compute_s[0], 0.9 + 6 * 0.2);
  EXPECT_DOUBLE_EQ(even->stage_compute_s[1], 0.7 + 6 * 0.15);
  EXPECT_TRUE(even->extended);
  EXPECT_FALSE(periodic_extension(steps(1.0, 0.5, 0.4), steps(1.3, 0.7, 0.55), steps(1.61, 0.9, 0.7), 2, 20));
  EXPECT_FALSE(periodic_extension(steps(1.0, 0.5, 0.4), steps(1.3, 0.7, 0.55), steps(1.6, 0.9, 0.71), 2, 20));
  EXPECT_FALSE(periodic_extension(steps(1.0, 0.5, 0.4), steps(1.3, 0.7, 0.55), steps(1.6, 0.9, 0.7, false), 2, 20));
  SearchSimulation fewer_stages = steps(1.6, 0.9, 0.7);
  fewer_stages.stage_compute_s.pop_back();
  EXPECT_FALSE(periodic_extension(steps(1.0, 0.5, 0.4), steps(1.3, 0.7, 0.55), fewer_stages, 2, 20));
}

}  // namespace
}  // namespace symtensor::compiler
