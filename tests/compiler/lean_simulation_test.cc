// The searches lower plans straight into the simulator's lean form (lower_plan_lean,
// simulate_plan_lean). It must be the text program's twin: the same compiled form, task for
// task, and the same SimResult, field by field (exact doubles), on pipeline schedules,
// interleaving, context parallelism, ZeRO-3, MoE, a mixed fleet and full mode.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/lowering/lower_plan.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/strategies/megatron.h"
#include "hardware/stack.h"
#include "simulator/engine/compiled_program.h"
#include "simulator/engine/simulator.h"
#include "tests/compiler/search_test_util.h"
#include "tests/compiler/sim_result_compare.h"

namespace symtensor::compiler {
namespace {

// The engine's input, array for array.
void expect_same_compiled(const sim::CompiledProgram& a, const sim::CompiledProgram& b, const std::string& what) {
  EXPECT_EQ(a.class_of_rank, b.class_of_rank) << what;
  EXPECT_EQ(a.num_levels, b.num_levels) << what;
  ASSERT_EQ(a.classes.size(), b.classes.size()) << what;
  for (std::size_t c = 0; c < a.classes.size(); ++c) {
    const sim::CompiledClass& x = a.classes[c];
    const sim::CompiledClass& y = b.classes[c];
    const std::string at = what + " class " + std::to_string(c);
    EXPECT_EQ(x.streams, y.streams) << at;
    EXPECT_EQ(x.stream_tasks, y.stream_tasks) << at;
    EXPECT_EQ(x.task_stream, y.task_stream) << at;
    EXPECT_EQ(x.dep_count, y.dep_count) << at;
    EXPECT_EQ(x.dependent_start, y.dependent_start) << at;
    EXPECT_EQ(x.dependent_list, y.dependent_list) << at;
    EXPECT_EQ(x.duration_s, y.duration_s) << at;
    EXPECT_EQ(x.kind, y.kind) << at;
    EXPECT_EQ(x.bytes, y.bytes) << at;
    EXPECT_EQ(x.collective, y.collective) << at;
    EXPECT_EQ(x.algorithm, y.algorithm) << at;
    EXPECT_EQ(x.collective_id, y.collective_id) << at;
    EXPECT_EQ(x.group, y.group) << at;
    EXPECT_EQ(x.groups, y.groups) << at;
    EXPECT_EQ(x.peer_class, y.peer_class) << at;
    EXPECT_EQ(x.matched_recv, y.matched_recv) << at;
    EXPECT_EQ(x.rank_position, y.rank_position) << at;
    EXPECT_EQ(x.device_groups, y.device_groups) << at;
    ASSERT_EQ(x.tag.size(), y.tag.size()) << at;
    for (std::size_t i = 0; i < x.tag.size(); ++i) {
      ASSERT_EQ(x.tag[i] < 0, y.tag[i] < 0) << at << " task " << i;
      if (x.tag[i] >= 0) {
        EXPECT_EQ(x.tags[x.tag[i]], y.tags[y.tag[i]]) << at << " task " << i;
      }
    }
  }
}

Graph lean_sim_llama() {
  models::Overrides o;
  o.layers = 8;
  o.seq = 1024;
  return symtensor::testing::zoo_graph("llama2-7b", o, 16, 1024);
}

struct LeanCase {
  const hardware::Cluster* cluster;
  Graph* graph;
  std::string knobs;
  Schedule schedule = Schedule::one_f_one_b;  // gpipe: the plan's schedule replaced
  bool overlap_grad_sync = true;
  sim::SimMode mode = sim::SimMode::symmetric;
};

TEST(LeanSimulation, LoweredStraightIntoTheEngineFormSimulatesAsTheTextProgram) {
  Graph llama = lean_sim_llama();
  Graph mixtral = symtensor::testing::zoo_graph("mixtral-8x7b-tiny", {}, 64, 256);
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const hardware::Cluster group = hardware::group_cluster(fleet, 0);
  const std::vector<LeanCase> cases = {
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1"},
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1", Schedule::gpipe},
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1", Schedule::one_f_one_b, false},
      {&group, &llama, "tp=2,pp=4,mb=1,vp=2"},
      {&group, &llama, "tp=2,pp=2,cp=2,mb=1,recompute=full,distopt=1"},
      {&group, &llama, "tp=1,pp=2,dp=4,mb=2,fsdp=3"},
      {&group, &llama, "tp=2,pp=2,dp=2,mb=1", Schedule::one_f_one_b, true, sim::SimMode::full},
      {&group, &mixtral, "ep=4,mb=4"},
      {&group, &mixtral, "ep=4,mb=4,ep_overlap=1"},
      {&fleet, &llama, "tp=8,pp=3,mb=1,first=2,last=2"},
      {&fleet, &llama, "tp=4,pp=3,dp=2,mb=1,first=2,last=2,sp=1"},
  };
  for (const LeanCase& c : cases) {
    Plan plan = make_megatron_plan(*c.graph, *c.cluster, parse_megatron_knobs(c.knobs), StrategyOptions{});
    if (c.schedule == Schedule::gpipe) plan.schedule = Schedule::gpipe;
    const std::string what = c.knobs + (c.schedule == Schedule::gpipe ? " gpipe" : "") +
                             (c.overlap_grad_sync ? "" : " no-overlap") + (c.mode == sim::SimMode::full ? " full" : "");
    LoweringOptions lowering;
    lowering.overlap_grad_sync = c.overlap_grad_sync;
    sim::SimOptions options;
    options.mode = c.mode;  // with the trace recorded: slices compared too
    const PlanSimulation text = simulate_plan(*c.graph, plan, *c.cluster, lowering, options);
    const PlanSimulation lean = simulate_plan_lean(*c.graph, plan, *c.cluster, lowering, options);
    std::size_t tasks = 0;
    for (const sim::RankClass& rc : text.program.rank_classes) tasks += rc.tasks.size();
    EXPECT_GT(tasks, 50u) << what;
    EXPECT_GT(text.result.step_time_s, 0) << what;
    for (const sim::RankClass& rc : lean.program.rank_classes) EXPECT_TRUE(rc.tasks.empty()) << what;
    symtensor::testing::expect_identical_results(text.result, lean.result, what);
    EXPECT_EQ(text.report.step_time_s, lean.report.step_time_s) << what;
    EXPECT_EQ(text.report.fits, lean.report.fits) << what;
    ASSERT_EQ(text.report.stages.size(), lean.report.stages.size()) << what;
    for (std::size_t s = 0; s < text.report.stages.size(); ++s)
      EXPECT_EQ(text.report.stages[s].compute_s, lean.report.stages[s].compute_s) << what;

    if (c.cluster->mixed()) continue;  // the stage timing on each group's device is simulate_plan's
    // The compiled forms, task for task; the lean program with ids is the text program.
    LoweringOptions with_graph = lowering;
    with_graph.graph = c.graph;
    const PlanAnalysis analysis = analyze_plan(*c.graph, *c.cluster, plan);
    const hardware::DeviceMesh mesh = plan_mesh(plan, *c.cluster);
    const sim::Program program = lower_plan(analysis, plan, *c.cluster, mesh, with_graph);
    const sim::LeanProgram lean_program = lower_plan_lean(analysis, plan, *c.cluster, mesh, with_graph);
    expect_same_compiled(sim::compile_program(program, *c.cluster), sim::compile_program(lean_program, *c.cluster), what);
  }
}

TEST(LeanSimulation, ToProgramNeedsTheTaskIds) {
  sim::LeanProgram lean;
  lean.shape.rank_classes.resize(1);
  lean.classes.resize(1);
  lean.classes[0].push({}, {});
  EXPECT_THROW(sim::to_program(lean), std::logic_error);
  lean.classes[0].ids = {"a"};
  lean.classes[0].stream_index("compute");
  const sim::Program p = sim::to_program(lean);
  ASSERT_EQ(p.rank_classes.at(0).tasks.size(), 1u);
  EXPECT_EQ(p.rank_classes[0].tasks[0].id, "a");
  EXPECT_EQ(p.rank_classes[0].tasks[0].stream, "compute");
}

}  // namespace
}  // namespace symtensor::compiler
