// Fixed strategies (dp, zero3, megatron) on the zoo's GPT, LLaMA (GQA) and Mixtral, tiny
// and full size: complete, valid plans whose structure is Megatron's.
#include <algorithm>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/strategies/data_parallel.h"
#include "compiler/strategies/megatron.h"
#include "compiler/analysis/transformer_structure.h"
#include "hardware/device_mesh.h"
#include "tests/compiler/search_test_util.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

using testing::dgx;
using testing::expect_valid_plan;
using testing::zoo_graph;

int count_cut_on(const Plan& plan, int axis) {
  int n = 0;
  for (const auto& cut : plan.node_cuts)
    for (const auto& axes : cut.loop_axes) n += std::count(axes.begin(), axes.end(), axis) > 0;
  return n;
}

TEST(MegatronKnobs, ParsesEveryKnobAndRejectsBadOnes) {
  const MegatronKnobs k = parse_megatron_knobs("tp=8,pp=8,mb=1,vp=3,sp=1,recompute=selective,distopt=1");
  EXPECT_EQ(k.tp, 8);
  EXPECT_EQ(k.pp, 8);
  EXPECT_EQ(k.vp, 3);
  EXPECT_TRUE(k.sp);
  EXPECT_TRUE(k.distopt);
  EXPECT_EQ(k.recompute, RecomputePolicy::selective);
  EXPECT_EQ(parse_megatron_knobs(to_string(k)), k);
  EXPECT_EQ(parse_megatron_knobs(""), MegatronKnobs{});
  EXPECT_THROW(parse_megatron_knobs("tp=0"), std::runtime_error);
  EXPECT_THROW(parse_megatron_knobs("tp=two"), std::runtime_error);
  EXPECT_THROW(parse_megatron_knobs("zz=1"), std::runtime_error);
  EXPECT_THROW(parse_megatron_knobs("tp"), std::runtime_error);
  EXPECT_THROW(parse_megatron_knobs("sp=2"), std::runtime_error);
  EXPECT_THROW(parse_megatron_knobs("recompute=most"), std::runtime_error);
}

TEST(MegatronMesh, PipelineOverNodesDataThenTensorInsideANode) {
  // 4 nodes x 8 GPUs, tp=4, pp=2: node level [pp=2, dp=2], gpu level [dp=2, tp=4].
  const MegatronMesh m = megatron_mesh(dgx(4), parse_megatron_knobs("tp=4,pp=2"));
  EXPECT_EQ(m.factors, (std::vector<std::vector<int>>{{2, 2}, {2, 4}}));
  EXPECT_EQ(m.pipeline_axis, 0);
  EXPECT_EQ(m.dp_axes, (std::vector<int>{1, 2}));
  EXPECT_EQ(m.tp_axis, 3);
  // One node: the pipeline has to live inside it.
  const MegatronMesh one = megatron_mesh(dgx(1), parse_megatron_knobs("tp=2,pp=4"));
  EXPECT_EQ(one.factors, (std::vector<std::vector<int>>{{1}, {4, 2}}));
  EXPECT_EQ(one.pipeline_axis, 1);
  EXPECT_THROW(megatron_mesh(dgx(1), parse_megatron_knobs("tp=16")), std::runtime_error);
  EXPECT_THROW(megatron_mesh(dgx(1), parse_megatron_knobs("tp=3")), std::runtime_error);
  EXPECT_THROW(megatron_mesh(dgx(3), parse_megatron_knobs("tp=8,pp=2")), std::runtime_error);
  EXPECT_THROW(megatron_mesh(dgx(4), parse_megatron_knobs("tp=8,dp=3")), std::runtime_error);
}

TEST(MegatronMesh, StagesOutermostAsMegatronRanksThemEvenAcrossRacks) {
  // Megatron's rank order (tp-cp-ep-dp-pp): stage = rank / 32 for pp=8 on 4 racks of 64, so
  // every rack holds two stages and the 32-GPU expert groups stay inside one NVLink domain.
  const hardware::Cluster racks = symtensor::testing::cluster_of("gb200-nvl72", 4, 64);
  const MegatronMesh m = megatron_mesh(racks, parse_megatron_knobs("tp=1,pp=8,ep=32"));
  EXPECT_EQ(m.factors, (std::vector<std::vector<int>>{{8}, {32}}));
  EXPECT_EQ(m.pipeline_axis, 0);
  EXPECT_EQ(m.ep_axes, (std::vector<int>{1}));
  const hardware::DeviceMesh mesh = hardware::DeviceMesh::factored(racks, m.factors);
  const hardware::MeshAxis& stages = mesh.axes()[0];
  EXPECT_EQ(stages.stride, 32);
  EXPECT_EQ(stages.inner_part, 2);
  EXPECT_EQ(mesh.group_of(40, std::vector<int>{1}).front(), 32);  // rank 40's expert group: 32..63
  EXPECT_EQ(mesh.group_shape(std::vector<int>{1}).ranks_per_level, (std::vector<int>{32, 1}));
  EXPECT_EQ(mesh.group_shape(std::vector<int>{0}).ranks_per_level, (std::vector<int>{2, 4}));
  // Stages 0 -> 1 share a rack (NVLink); 1 -> 2 cross racks (InfiniBand).
  EXPECT_EQ(stages.level_between(0, 1), 0);
  EXPECT_EQ(stages.level_between(1, 2), 1);
  // Two DGX nodes, tp=2, pp=4: two stages per node, each of dp=2 x tp=2.
  const MegatronMesh two = megatron_mesh(dgx(2), parse_megatron_knobs("tp=2,pp=4"));
  EXPECT_EQ(two.factors, (std::vector<std::vector<int>>{{4}, {2, 2}}));
  // Three racks cannot hold pp=2 outermost: the stages go inside each rack.
  const MegatronMesh three = megatron_mesh(symtensor::testing::cluster_of("gb200-nvl72", 3, 64), parse_megatron_knobs("pp=2"));
  EXPECT_EQ(three.factors, (std::vector<std::vector<int>>{{3}, {2, 32}}));
  // A factor list that reaches into the next level must leave it whole blocks.
  EXPECT_THROW(hardware::DeviceMesh::factored(racks, {{8}, {64}}), std::runtime_error);
  EXPECT_THROW(hardware::DeviceMesh::factored(racks, {{12}, {16}}), std::runtime_error);
}

struct StructureCase {
  const char* preset;
  int layers, columns_per_layer, rows_per_layer, attention_per_layer;
};

class Structure : public ::testing::TestWithParam<StructureCase> {};

// GPT: fused QKV + FC1 column, proj + FC2 row. LLaMA: q, k, v, gate, up column, o, down
// row. Mixtral: q, k, v, w1, w3 column, o, w2 row (the router stays replicated). One fused
// attention per layer.
TEST_P(Structure, FindsMegatronsColumnAndRowGemmsAndTheLayers) {
  const StructureCase c = GetParam();
  Graph g = zoo_graph(c.preset, 8, 16);
  const auto spaces = node_iteration_spaces(g);
  const TransformerStructure s = find_transformer_structure(g, spaces);
  EXPECT_EQ(s.layers(), c.layers);
  EXPECT_EQ(static_cast<int>(s.column.size()), c.layers * c.columns_per_layer);
  EXPECT_EQ(static_cast<int>(s.row.size()), c.layers * c.rows_per_layer);
  EXPECT_EQ(static_cast<int>(s.attention.size()), c.layers * c.attention_per_layer);
  EXPECT_EQ(s.vocab_heads.size(), 1u);
  EXPECT_EQ(static_cast<int>(s.norm_anchors.size()), 2 * c.layers + 1);
}

INSTANTIATE_TEST_SUITE_P(Zoo, Structure,
                         ::testing::Values(StructureCase{"gpt2-small-tiny", 2, 2, 2, 1},
                                           StructureCase{"llama2-70b-tiny", 2, 5, 2, 1},
                                           StructureCase{"mixtral-8x7b-tiny", 2, 5, 2, 1},
                                           StructureCase{"gpt-1.7b", 24, 2, 2, 1},
                                           StructureCase{"llama2-70b", 80, 5, 2, 1}));

struct PlanCase {
  const char* preset;
  const char* strategy;  // dp, zero3 or megatron knobs
  int nodes, gpus;
  double batch, seq;
};

class Generators : public ::testing::TestWithParam<PlanCase> {};

TEST_P(Generators, ProduceCompleteValidPlansThatTheCostModelAccepts) {
  const PlanCase c = GetParam();
  Graph g = zoo_graph(c.preset, c.batch, c.seq);
  const hardware::Cluster cluster = dgx(c.nodes, c.gpus);
  const std::string strategy = c.strategy;
  StrategyOptions o;
  Plan plan;
  if (strategy == "dp" || strategy == "zero3") {
    plan = make_data_parallel_plan(g, cluster, o, strategy == "zero3" ? 3 : 0);
    EXPECT_EQ(plan.zero_stage, strategy == "zero3" ? 3 : 0);
    EXPECT_EQ(plan.pipeline_axis, -1);
  } else {
    const MegatronKnobs k = parse_megatron_knobs(strategy);
    plan = make_megatron_plan(g, cluster, k, o);
    EXPECT_EQ(plan.pipeline_stages(), k.pp);
    const int dp = cluster.num_devices() / (k.tp * k.pp);
    EXPECT_EQ(plan.micro_batches, static_cast<int>(c.batch) / (dp * k.mb));
    EXPECT_EQ(plan.schedule, k.vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b);
    const MegatronMesh m = megatron_mesh(cluster, k);
    if (k.tp > 1) {
      EXPECT_GT(count_cut_on(plan, m.tp_axis), 0);
    }
    // Every stage gets work, and the last stage holds the head.
    for (int s = 0; s < k.pp; ++s) EXPECT_GT(std::count(plan.stage_of_node.begin(), plan.stage_of_node.end(), s), 0) << s;
  }
  EXPECT_EQ(plan.global_batch, c.batch);
  expect_valid_plan(g, cluster, plan);
  const PlanAnalysis a = analyze_plan(g, cluster, plan);
  EXPECT_EQ(static_cast<int>(a.stage_memory.size()), plan.pipeline_stages());
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, Generators,
    ::testing::Values(PlanCase{"gpt2-small-tiny", "dp", 1, 4, 8, 16}, PlanCase{"gpt2-small-tiny", "zero3", 2, 2, 8, 16},
                      PlanCase{"gpt2-small-tiny", "tp=4,pp=2,mb=1", 2, 4, 8, 16},
                      PlanCase{"gpt2-small-tiny", "tp=2,pp=2,vp=1,sp=1,recompute=selective", 1, 8, 8, 16},
                      PlanCase{"llama2-70b-tiny", "tp=2,pp=2,sp=1", 1, 8, 8, 16},
                      PlanCase{"mixtral-8x7b-tiny", "tp=2,pp=2", 1, 8, 8, 16},
                      PlanCase{"mixtral-8x7b-tiny", "dp", 1, 8, 8, 16},
                      PlanCase{"gpt-1.7b", "dp", 4, 8, 512, 2048},
                      PlanCase{"gpt-18.4b", "tp=8,pp=1,mb=8", 32, 8, 1024, 2048},
                      PlanCase{"llama2-70b", "tp=8,pp=8,mb=1,vp=5,sp=1,recompute=selective,distopt=1", 16, 8, 512, 4096},
                      PlanCase{"mixtral-8x7b", "tp=8,pp=4,mb=1", 8, 8, 256, 4096}));

TEST(Megatron, ErrorsNameTheKnobAndTheModel) {
  Graph g = zoo_graph("gpt2-small-tiny", 8, 16);  // 4 heads, 2 layers
  StrategyOptions o;
  try {
    make_megatron_plan(g, dgx(1, 8), parse_megatron_knobs("tp=8"), o);  // 8 does not divide 4 heads
    FAIL() << "tp=8 accepted with 4 heads";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("attention heads"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_megatron_plan(g, dgx(1, 4), parse_megatron_knobs("pp=4"), o), std::runtime_error);  // 2 layers
  EXPECT_THROW(make_megatron_plan(g, dgx(1, 8), parse_megatron_knobs("tp=2,mb=3"), o), std::runtime_error);  // 8 % (4*3)
}

TEST(DataParallel, BatchNotDivisibleByDevicesIsAnError) {
  Graph g = zoo_graph("gpt2-small-tiny", 6, 16);
  EXPECT_THROW(make_data_parallel_plan(g, dgx(1, 4), StrategyOptions{}, 0), std::runtime_error);
}

TEST(Propagation, FindsTheBatchLoopAlsoWhenFlattenedWithTheSequence) {
  Graph g = zoo_graph("gpt2-small-tiny", 8, 16);
  IterationSpace space;
  space.loops = {{"x", GiNaC::ex(7)}, {"bs", g.symbols.get("batch") * g.symbols.get("seq")}};
  EXPECT_EQ(loop_with_symbol(g, space, "batch"), 1);
  space.loops.push_back({"b", g.symbols.get("batch")});
  EXPECT_EQ(loop_with_symbol(g, space, "batch"), 2);  // an exact match wins
  space.loops = {{"s1", g.symbols.get("seq") + 1}};
  EXPECT_EQ(loop_with_symbol(g, space, "seq"), -1);   // seq + 1 does not have seq as a factor
  EXPECT_EQ(loop_with_symbol(g, space, "nosuchdim"), -1);
}

}  // namespace
}  // namespace symtensor::compiler
