// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm, knob ep_overlap=1): the
// expert all-to-alls of one micro-batch run beside the adjacent micro-batch's compute. Checked
// on a tiny Mixtral whose expert group spans two nodes: the knob's rules as Megatron-Core
// checks them, the exchanges leaving the critical path in the estimate and the simulation,
// the plan file and the exports.
#include <string>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/export/export.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/export_searched.h"
#include "compiler/strategies/megatron.h"
#include "hardware/collectives.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

using testing::dgx;
using testing::zoo_graph;

std::string megatron_error(Graph& g, const hardware::Cluster& c, const std::string& knobs) {
  try {
    make_megatron_plan(g, c, parse_megatron_knobs(knobs), {});
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(MoeCommOverlap, KnobParsesPrintsAndKeepsMegatronCoresRules) {
  const MegatronKnobs k = parse_megatron_knobs("ep=4,etp=1,ep_overlap=1");
  EXPECT_TRUE(k.ep_overlap);
  EXPECT_EQ(parse_megatron_knobs(to_string(k)), k);
  EXPECT_EQ(to_string(parse_megatron_knobs("ep=4")).find("ep_overlap"), std::string::npos);
  EXPECT_THROW(parse_megatron_knobs("ep_overlap=2"), std::runtime_error);
  Graph g = zoo_graph("mixtral-8x7b-tiny", 8, 8);
  const hardware::Cluster c = dgx(2, 2);
  EXPECT_EQ(megatron_error(g, c, "ep_overlap=1"),
            "megatron: ep_overlap=1 needs ep > 1 (it overlaps the expert-parallel all-to-alls)");
  EXPECT_EQ(megatron_error(g, c, "pp=2,ep=2,ep_overlap=1"),
            "megatron: ep_overlap=1 with pp > 1 needs vp > 1 (Megatron-Core pairs virtual stages' passes)");
  EXPECT_EQ(megatron_error(g, c, "ep=4,recompute=full,ep_overlap=1"),
            "megatron: ep_overlap=1 with recompute=full: Megatron-Core does not combine them");
}

// Seconds of the expert all-to-alls of one micro-batch on stage 0 (forward, backward).
std::pair<double, double> expert_exchange_seconds(const PlanAnalysis& a) {
  double fwd = 0, bwd = 0;
  for (const OpWork& w : a.ops) {
    if (w.stage != 0) continue;
    for (const CommOp& c : w.fwd_comm)
      if (c.kind == hardware::Collective::all_to_all) fwd += c.seconds;
    for (const CommOp& c : w.bwd_comm)
      if (c.kind == hardware::Collective::all_to_all) bwd += c.seconds;
  }
  return {fwd, bwd};
}

TEST(MoeCommOverlap, ExpertExchangesLeaveTheCriticalPath) {
  // Tiny Mixtral, ep=4 over 2 nodes of 2 GPUs: every token exchange crosses InfiniBand.
  Graph g = zoo_graph("mixtral-8x7b-tiny", 64, 256);
  const hardware::Cluster c = dgx(2, 2);
  const Plan plain = make_megatron_plan(g, c, parse_megatron_knobs("ep=4,mb=4"), {});
  const Plan overlap = make_megatron_plan(g, c, parse_megatron_knobs("ep=4,mb=4,ep_overlap=1"), {});
  EXPECT_TRUE(overlap.moe_comm_overlap);
  const PlanAnalysis pa = analyze_plan(g, c, plain), oa = analyze_plan(g, c, overlap);
  const auto [fwd_a2a, bwd_a2a] = expert_exchange_seconds(pa);
  ASSERT_GT(fwd_a2a, 0);
  ASSERT_GT(bwd_a2a, 0);
  for (const OpWork& w : oa.ops)
    for (const CommOp& op : w.fwd_comm) EXPECT_EQ(op.beside_microbatch, op.kind == hardware::Collective::all_to_all);
  // The estimate: a pass exposes only what its exchanges take beyond its compute.
  const StageTotals p = stage_totals(pa, plain), o = stage_totals(oa, overlap);
  EXPECT_DOUBLE_EQ(o.fwd_compute[0], p.fwd_compute[0]);
  EXPECT_NEAR(o.fwd_comm[0], p.fwd_comm[0] - fwd_a2a + std::max(0.0, fwd_a2a - p.fwd_compute[0]), 1e-12);
  EXPECT_NEAR(o.bwd_comm[0], p.bwd_comm[0] - bwd_a2a + std::max(0.0, bwd_a2a - p.bwd_compute[0]), 1e-12);
  // The simulation: the step saves some of the communication it exposed, not more, and
  // exposes less of it; the compute stays.
  sim::SimOptions options;
  options.record_trace = false;
  const auto plain_r = simulate_plan(g, plain, c, {}, options).report;
  const auto overlap_r = simulate_plan(g, overlap, c, {}, options).report;
  EXPECT_LT(overlap_r.step_time_s, plain_r.step_time_s);
  EXPECT_LE(plain_r.step_time_s - overlap_r.step_time_s, plain_r.exposed_comm_s * (1 + 1e-9));
  EXPECT_LT(overlap_r.exposed_comm_s, plain_r.exposed_comm_s);
  EXPECT_NEAR(overlap_r.compute_s, plain_r.compute_s, 1e-9 * plain_r.compute_s);
}

TEST(MoeCommOverlap, PlanFileAndExportsCarryIt) {
  Graph g = zoo_graph("mixtral-8x7b-tiny", 8, 8);
  const hardware::Cluster c = dgx(2, 2);
  const Plan overlap = make_megatron_plan(g, c, parse_megatron_knobs("ep=4,ep_overlap=1"), {});
  const std::string yaml = plan_to_yaml(overlap, g, c);
  EXPECT_NE(yaml.find("\nmoe_comm_overlap: true\n"), std::string::npos) << yaml;
  EXPECT_TRUE(plan_from_yaml(yaml, "plan.yaml", g, c).moe_comm_overlap);
  const Plan plain = make_megatron_plan(g, c, parse_megatron_knobs("ep=4"), {});
  EXPECT_EQ(plan_to_yaml(plain, g, c).find("\nmoe_comm_overlap:"), std::string::npos);
  EXPECT_FALSE(plan_from_yaml(plan_to_yaml(plain, g, c), "plan.yaml", g, c).moe_comm_overlap);
  const std::string megatron = export_plan(ExportTarget::megatron, g, c, overlap).config;
  EXPECT_NE(megatron.find("--overlap-moe-expert-parallel-comm\n"), std::string::npos) << megatron;
  EXPECT_EQ(export_plan(ExportTarget::megatron, g, c, plain).config.find("overlap-moe"), std::string::npos);
  const std::string nemo = export_plan(ExportTarget::nemo, g, c, overlap).config;
  EXPECT_NE(nemo.find("overlap_moe_expert_parallel_comm=True"), std::string::npos) << nemo;
  EXPECT_TRUE(export_plan(ExportTarget::megatron, g, c, overlap).exact());
  // torchtitan exchanges tokens with its own all-to-all, in line: the plan is not what it runs.
  const ExportResult titan = export_plan(ExportTarget::torchtitan, g, c, overlap);
  ASSERT_FALSE(titan.exact());
  EXPECT_NE(titan.not_expressible.front().find("combined 1F1B"), std::string::npos) << titan.not_expressible.front();
  ASSERT_TRUE(titan.nearest.has_value());
  EXPECT_FALSE(titan.nearest->moe_comm_overlap);
  const Plan flex = make_megatron_plan(g, c, parse_megatron_knobs("ep=4,dispatcher=hybridep"), {});
  const ExportResult titan_flex = export_plan(ExportTarget::torchtitan, g, c, flex);
  ASSERT_FALSE(titan_flex.exact());
  EXPECT_NE(titan_flex.not_expressible.front().find("hybridep token dispatcher"), std::string::npos)
      << titan_flex.not_expressible.front();
}

}  // namespace
}  // namespace symtensor::compiler
