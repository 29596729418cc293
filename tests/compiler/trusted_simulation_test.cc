// The searches simulate lowered plans with SimOptions::trusted_program (no validate_program):
// the lowering's programs pass the validation anyway, and the trusted path gives the same
// results, number for number, as the validated one.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/lowering/lower_plan.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/strategies/megatron.h"
#include "hardware/stack.h"
#include "simulator/engine/simulator.h"
#include "simulator/program/task_factory.h"
#include "simulator/program/validate.h"
#include "tests/compiler/search_test_util.h"
#include "tests/compiler/sim_result_compare.h"

namespace symtensor::compiler {
namespace {

Graph trusted_sim_llama() {
  models::Overrides o;
  o.layers = 8;
  o.seq = 1024;
  return symtensor::testing::zoo_graph("llama2-7b", o, 16, 1024);
}

TEST(TrustedSimulation, LoweredPlansValidateAndSimulateAlikeBothWays) {
  Graph graph = trusted_sim_llama();
  const hardware::Cluster fleet = symtensor::testing::h100_a100_fleet();
  const hardware::Cluster group = hardware::group_cluster(fleet, 0);
  struct Case {
    const hardware::Cluster* cluster;
    std::string knobs;
  };
  const std::vector<Case> cases = {
      {&group, "tp=2,pp=2,dp=2,mb=1"},
      {&group, "tp=2,pp=4,mb=1,vp=2"},
      {&group, "tp=2,pp=2,cp=2,mb=1,recompute=full,distopt=1"},
      {&group, "tp=1,pp=2,dp=4,mb=2,fsdp=3"},
      {&fleet, "tp=8,pp=3,mb=1,first=2,last=2"},
      {&fleet, "tp=4,pp=3,dp=2,mb=1,first=2,last=2,sp=1"},
  };
  for (const Case& c : cases) {
    const Plan plan = make_megatron_plan(graph, *c.cluster, parse_megatron_knobs(c.knobs), StrategyOptions{});
    sim::SimOptions checked;
    checked.record_trace = false;
    sim::SimOptions trusted = checked;
    trusted.trusted_program = true;
    const PlanSimulation a = simulate_plan(graph, plan, *c.cluster, {}, checked);
    const PlanSimulation b = simulate_plan(graph, plan, *c.cluster, {}, trusted);
    EXPECT_NO_THROW(sim::validate_program(b.program)) << c.knobs;
    std::size_t tasks = 0;
    for (const sim::RankClass& rc : b.program.rank_classes) tasks += rc.tasks.size();
    EXPECT_GT(tasks, 50u) << c.knobs;
    EXPECT_GT(a.result.step_time_s, 0) << c.knobs;
    symtensor::testing::expect_identical_results(a.result, b.result, c.knobs);
    EXPECT_EQ(a.report.step_time_s, b.report.step_time_s) << c.knobs;
  }
}

// Trusted skips the checks, not the indexing: a dependency on no task still throws.
TEST(TrustedSimulation, UnknownDependencyStillThrows) {
  const hardware::Cluster cluster = symtensor::testing::h100_a100_fleet();
  const hardware::Cluster group = hardware::group_cluster(cluster, 0);
  sim::Program p;
  p.mesh = {hardware::MeshAxis{"dp", group.num_devices(), 0, 1}};
  sim::RankClass rc;
  rc.name = "all";
  for (int r = 0; r < group.num_devices(); ++r) rc.ranks.push_back(r);
  rc.tasks.push_back(sim::timed_task("a", 1e-3));
  rc.tasks.push_back(sim::timed_task("b", 1e-3, {"nowhere"}));
  p.rank_classes.push_back(rc);
  sim::SimOptions trusted;
  trusted.trusted_program = true;
  EXPECT_ANY_THROW(sim::simulate(p, group, trusted));
  EXPECT_THROW(sim::simulate(p, group, {}), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
