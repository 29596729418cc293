// SymTensor's level step against the exact optimum of the same per-level problems
// (CBC), on a 2-layer MLP and a 1-layer GPT training graph over 8 devices: the greedy
// objective stays within 5% of the ILP's, level by level and in total. Both solve the
// very CutProblems build_level_problem makes, so the numbers compare like for like.
#include <gtest/gtest.h>

#include "compiler/search/ilp_search.h"
#include "compiler/search/ilp_solver.h"
#include "compiler/search/search_common.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct GapCase {
  const char* name;
  int nodes, gpus;
  double micro_batch;
  int micro_batches;
};

void expect_within_five_percent(Graph& g, const hardware::Cluster& cluster, double micro_batch, int m) {
  NumericGraph ng(g);
  const FoldedGraph folded = fold_graph(ng);
  ASSERT_FALSE(folded.heavy.empty());
  Plan plan;
  plan.mesh_factors = search_mesh_factors(cluster, 1);
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  LevelContext ctx;
  ctx.ng = &ng, ctx.folded = &folded, ctx.cluster = &cluster, ctx.mesh = &mesh;
  ctx.micro_batch = micro_batch, ctx.micro_batches = m;
  std::vector<int> axes;
  for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a)
    if (mesh.axes()[a].size > 1) axes.push_back(a);
  const LevelSearchResult greedy = search_levels(ctx, axes, LevelSolver::greedy);
  const LevelSearchResult exact = search_levels(ctx, axes, LevelSolver::ilp);
  ASSERT_EQ(greedy.problems.size(), axes.size());
  // Level 1 is the same problem for both: compare it directly.
  const double g1 = greedy.problems[0].objective(greedy.choices[0]);
  const double e1 = solve_cut_problem_ilp(greedy.problems[0]).objective;
  EXPECT_LE(e1, g1 * (1 + 1e-9));
  EXPECT_LE(g1, e1 * 1.05) << "level 1";
  // Every greedy level against the exact optimum of that same problem.
  for (std::size_t l = 0; l < greedy.problems.size(); ++l) {
    const double gl = greedy.problems[l].objective(greedy.choices[l]);
    const double el = solve_cut_problem_ilp(greedy.problems[l]).objective;
    EXPECT_LE(gl, el * 1.05) << "level " << l;
  }
  // Whole level recursion: the greedy path against the exact path.
  EXPECT_LE(greedy.objective, exact.objective * 1.05);
  EXPECT_GT(greedy.objective, 0);
}

TEST(SearchIlpGap, TwoLayerMlpOnEightDevices) {
  Graph g = testing::import_bound(testing::mlp_model(2, 1024), "mlp", 64);
  expect_within_five_percent(g, testing::cluster_of("dgx-a100", 1, 8), 64, 1);
}

TEST(SearchIlpGap, TwoLayerMlpOnTwoNodesOfFour) {
  Graph g = testing::import_bound(testing::mlp_model(2, 4096), "mlp", 16);
  expect_within_five_percent(g, testing::cluster_of("dgx-a100", 2, 4), 16, 1);
}

TEST(SearchIlpGap, OneLayerTransformerOnEightDevices) {
  Graph g = testing::import_bound(testing::gpt_training_layer(1024, 16), "layer", 8, 1024);
  expect_within_five_percent(g, testing::cluster_of("dgx-a100", 1, 8), 8, 1);
}

TEST(SearchIlpGap, WholeSearchStepTimeMatchesIlpStrategy) {
  // The full searches (stages, micro-batches, memory ladder) around the two level solvers.
  Graph g = testing::import_bound(testing::gpt_training_layer(1024, 16), "layer", 8, 1024);
  const hardware::Cluster cluster = testing::cluster_of("dgx-a100", 1, 8);
  StrategyOptions o;
  SearchOptions s;
  s.refine = false;
  const SearchResult greedy = symtensor_search(g, cluster, o, s);
  const SearchResult exact = ilp_search(g, cluster, o);
  EXPECT_TRUE(greedy.estimate.fits);
  EXPECT_LE(greedy.estimate.step_time_s, exact.estimate.step_time_s * 1.05);
  EXPECT_EQ(exact.plan.strategy, "ilp");
}

TEST(SearchIlpGap, TheExactSearchRefusesGraphsAboveItsHeavyOperatorBound) {
  // Heavy operators (GEMMs of the 2-layer MLP) counted by kind; a bound one below refuses it.
  Graph g = testing::import_bound(testing::mlp_model(2, 1024), "mlp", 64);
  int heavy = 0;
  const NumericGraph ng(g);
  for (const IterationSpace& space : ng.spaces()) heavy += is_heavy(space.kind) ? 1 : 0;
  ASSERT_GE(heavy, 2);
  SearchOptions s;
  s.solver = LevelSolver::ilp;
  s.max_heavy_operators = heavy - 1;
  try {
    symtensor_search(g, testing::cluster_of("dgx-a100", 1, 8), StrategyOptions{}, s);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string expected = "has " + std::to_string(heavy) + " heavy operators, above the limit of " + std::to_string(heavy - 1);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  s.max_heavy_operators = heavy;
  EXPECT_NO_THROW(symtensor_search(g, testing::cluster_of("dgx-a100", 1, 8), StrategyOptions{}, s));
}

}  // namespace
}  // namespace symtensor::compiler
