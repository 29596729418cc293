// The MoE token dispatcher as a plan knob (dispatcher=alltoall|deepep|hybridep): DeepEP and
// HybridEP send a token once to each other node holding one of its experts, Megatron's
// all-to-all once per expert. The inter-node share checked by hand, then on a tiny Mixtral
// whose expert group spans two nodes, in the plan file and in the exports.
#include <string>

#include <gtest/gtest.h>

#include "compiler/cost/moe_exchange.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/export/export.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/export_searched.h"
#include "compiler/strategies/megatron.h"
#include "hardware/collectives.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

using testing::dgx;
using testing::zoo_graph;

TEST(DeduplicatedShare, ExpectedNodesReachedOverExpertsElsewhereByHand) {
  // Qwen3 MoE (top-8 of 128) over 2 nodes: a token reaches the other node unless all 8 of its
  // experts are on its own, C(64,8)/C(128,8) = 4,426,165,368 / 1,429,702,652,400; 4 of its 8
  // experts are elsewhere on average.
  EXPECT_NEAR(deduplicated_share(128, 8, 2), (1 - 4426165368.0 / 1429702652400.0) / 4, 1e-12);
  // Top-2 of 4 over 2 nodes: C(2,2)/C(4,2) = 1/6 of tokens stay home; 1 expert elsewhere.
  EXPECT_NEAR(deduplicated_share(4, 2, 2), 5.0 / 6.0, 1e-12);
  // Top-1: nothing to share, the same bytes.
  EXPECT_NEAR(deduplicated_share(256, 1, 8), 1.0, 1e-12);
  EXPECT_EQ(deduplicated_share(128, 8, 1), 1.0);
  EXPECT_THROW(deduplicated_share(6, 2, 4), std::runtime_error);  // 4 nodes do not split 6 experts
}

TEST(DeduplicatedShare, GroupLimitedRoutingReachesFewerNodesByHand) {
  // DeepSeek-V3 (top-8 of 256 in the best 4 of 8 groups of 32) at EP over 8 nodes, a group per
  // node: another node is reached only if its group is picked (C(7,3)/C(8,4) = 1/2) and one of
  // the 8 experts chosen among the 128 open ones is its (1 - C(96,8)/C(128,8)); of 7 expected
  // remote experts, 3.18 remote nodes, where uniform routing reaches 4.63.
  const double miss = 132601016340.0 / 1429702652400.0;  // C(96,8) / C(128,8)
  EXPECT_NEAR(deduplicated_share(256, 8, 8, 8, 4), 7 * 0.5 * (1 - miss) / 7, 1e-12);
  // Two groups per node (4 nodes): one of them picked with chance 2·C(6,3)/C(8,4) = 40/70, both
  // 15/70; the node then holds 32 or 64 of the 128 open experts.
  const double miss_two = 4426165368.0 / 1429702652400.0;  // C(64,8) / C(128,8)
  EXPECT_NEAR(deduplicated_share(256, 8, 4, 8, 4), 3 * (40.0 / 70 * (1 - miss) + 15.0 / 70 * (1 - miss_two)) / 6, 1e-12);
  // Groups that do not sit whole on nodes (16 nodes, 8 groups), or no limit: as if uniform.
  EXPECT_DOUBLE_EQ(deduplicated_share(256, 8, 16, 8, 4), deduplicated_share(256, 8, 16));
  EXPECT_DOUBLE_EQ(deduplicated_share(256, 8, 8, 8, 8), deduplicated_share(256, 8, 8));
  EXPECT_LT(deduplicated_share(256, 8, 8, 8, 4), deduplicated_share(256, 8, 8));
}

TEST(MoeDispatcher, KnobParsesPrintsAndNeedsExpertParallelism) {
  const MegatronKnobs k = parse_megatron_knobs("ep=4,etp=1,dispatcher=hybridep");
  EXPECT_EQ(k.dispatcher, MoeDispatcher::hybridep);
  EXPECT_EQ(parse_megatron_knobs(to_string(k)), k);
  EXPECT_EQ(to_string(parse_megatron_knobs("ep=4")).find("dispatcher"), std::string::npos);
  try {
    parse_megatron_knobs("dispatcher=nccl");
    ADD_FAILURE() << "dispatcher=nccl accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("dispatcher=nccl"), std::string::npos) << e.what();
  }
  Graph g = zoo_graph("mixtral-8x7b-tiny", 8, 8);
  EXPECT_THROW(make_megatron_plan(g, dgx(1, 4), parse_megatron_knobs("dispatcher=deepep"), {}), std::runtime_error);
}

double all_to_all_bytes(const PlanAnalysis& a, double* seconds) {
  double bytes = 0;
  *seconds = 0;
  for (const OpWork& w : a.ops)
    for (const auto* comm : {&w.fwd_comm, &w.bwd_comm})
      for (const CommOp& c : *comm)
        if (c.kind == hardware::Collective::all_to_all) bytes += c.bytes, *seconds += c.seconds;
  return bytes;
}

TEST(MoeDispatcher, HybridEpSendsATokenOncePerRemoteNode) {
  // Tiny Mixtral (top-2 of 4 experts), ep=4 over 2 nodes of 2 GPUs: every exchange crosses
  // nodes, and HybridEP moves 5/6 of the all-to-all's bytes (above), in less time.
  Graph g = zoo_graph("mixtral-8x7b-tiny", 8, 8);
  const hardware::Cluster two_nodes = dgx(2, 2);
  const Plan plain = make_megatron_plan(g, two_nodes, parse_megatron_knobs("ep=4"), {});
  const Plan flex = make_megatron_plan(g, two_nodes, parse_megatron_knobs("ep=4,dispatcher=hybridep"), {});
  EXPECT_EQ(flex.moe_dispatcher, MoeDispatcher::hybridep);
  double plain_s = 0, flex_s = 0;
  const double plain_b = all_to_all_bytes(analyze_plan(g, two_nodes, plain), &plain_s);
  const double flex_b = all_to_all_bytes(analyze_plan(g, two_nodes, flex), &flex_s);
  ASSERT_GT(plain_b, 0);
  EXPECT_NEAR(flex_b / plain_b, 5.0 / 6.0, 1e-9);
  EXPECT_LT(flex_s, plain_s);
  // Inside one node there is no network to spare: the same exchange.
  const hardware::Cluster one_node = dgx(1, 4);
  double a_s = 0, b_s = 0;
  EXPECT_DOUBLE_EQ(all_to_all_bytes(analyze_plan(g, one_node, make_megatron_plan(g, one_node, parse_megatron_knobs("ep=4"), {})), &a_s),
                   all_to_all_bytes(analyze_plan(g, one_node, make_megatron_plan(g, one_node, parse_megatron_knobs("ep=4,dispatcher=deepep"), {})), &b_s));
  // DeepSeek-V3's group-limited routing, read from the graph (the top-2 of 4 experts from the
  // best 1 of 2 groups): with a group per node, a token reaches the other node half the time,
  // where uniform routing reaches it 5/6 of the time.
  Graph ds = zoo_graph("deepseek-v3-tiny", 8, 8);
  int dispatches = 0;
  for (const Node& n : ds.nodes())
    if (n.op_type == "MoeDispatch") {
      ++dispatches;
      EXPECT_EQ(n.attr_int("expert_groups", 0), 2) << n.name;
      EXPECT_EQ(n.attr_int("top_groups", 0), 1) << n.name;
    }
  EXPECT_GT(dispatches, 0);
  double ds_plain_s = 0, ds_flex_s = 0;
  const double ds_plain = all_to_all_bytes(analyze_plan(ds, two_nodes, make_megatron_plan(ds, two_nodes, parse_megatron_knobs("ep=4"), {})), &ds_plain_s);
  const double ds_flex = all_to_all_bytes(
      analyze_plan(ds, two_nodes, make_megatron_plan(ds, two_nodes, parse_megatron_knobs("ep=4,dispatcher=hybridep"), {})), &ds_flex_s);
  ASSERT_GT(ds_plain, 0);
  EXPECT_NEAR(ds_flex / ds_plain, 0.5, 1e-9);
  // The plan file keeps it, and the exports launch it.
  const Plan back = plan_from_yaml(plan_to_yaml(flex, g, two_nodes), "plan.yaml", g, two_nodes);
  EXPECT_EQ(back.moe_dispatcher, MoeDispatcher::hybridep);
  EXPECT_EQ(plan_from_yaml(plan_to_yaml(plain, g, two_nodes), "plan.yaml", g, two_nodes).moe_dispatcher, MoeDispatcher::alltoall);
  const std::string nemo = export_plan(ExportTarget::nemo, g, two_nodes, flex).config;
  EXPECT_NE(nemo.find("moe_token_dispatcher_type=\"flex\""), std::string::npos) << nemo;
  EXPECT_NE(nemo.find("moe_flex_dispatcher_backend=\"hybridep\""), std::string::npos) << nemo;
}

}  // namespace
}  // namespace symtensor::compiler
