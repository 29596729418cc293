// The search inside the target (issue #30): `compile --stack T` / `--export T` bound the
// symtensor and megatron strategies by what T runs as written (compiler/export/
// target_limits.h), so the plan found exports to T exactly; the bound only removes
// candidates, so the bounded plan is never faster than the unbounded one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/export.h"
#include "compiler/export/recipe_plan.h"
#include "compiler/export/target_limits.h"
#include "compiler/report/compare.h"
#include "compiler/report/plan_label.h"
#include "compiler/report/sweep.h"
#include "compiler/search/export_searched.h"
#include "compiler/search/fit_search.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

// `selective`: the policy the recipe's selective recomputation is priced with (the stack's).
bool within(ExportTarget t, const std::string& knobs, int layers = 4,
            hardware::SelectiveRecompute selective = hardware::SelectiveRecompute::attention_core) {
  MegatronKnobs k = parse_megatron_knobs(knobs);
  if (k.dp == 0) k.dp = 1;
  return recipe_within_target(t, megatron_layout_recipe(k, layers, selective));
}

TEST(TargetLimitsAsConstraints, EachTargetAdmitsWhatItWrites) {
  // Megatron-LM writes every knob of its layouts.
  for (const char* k : {"tp=2,sp=1,pp=2,vp=2,distopt=1", "tp=2,fsdp=3", "tp=2,cp=2,ep=2,etp=1,recompute=selective"})
    EXPECT_TRUE(within(ExportTarget::megatron, k)) << k;
  // NeMo's MegatronStrategy: no Megatron-FSDP.
  EXPECT_TRUE(within(ExportTarget::nemo, "tp=2,pp=2,distopt=1"));
  EXPECT_FALSE(within(ExportTarget::nemo, "tp=2,fsdp=2"));
  // torchtitan: TP with sequence-sharded norms, DDP or FSDP2 (ZeRO-0/3), even stages.
  EXPECT_TRUE(within(ExportTarget::torchtitan, "tp=2,sp=1,pp=2,vp=2"));
  EXPECT_TRUE(within(ExportTarget::torchtitan, "tp=2,sp=1,fsdp=3"));  // Megatron-FSDP's ZeRO-3 is FSDP2's
  EXPECT_FALSE(within(ExportTarget::torchtitan, "tp=2,sp=0"));
  EXPECT_FALSE(within(ExportTarget::torchtitan, "tp=1,dp=8,distopt=1"));
  EXPECT_FALSE(within(ExportTarget::torchtitan, "tp=1,dp=8,fsdp=2"));
  // 6 layers on 4 stages: 1,2,2,1, the embedding and the loss counted as layers.
  EXPECT_TRUE(within(ExportTarget::torchtitan, "tp=1,pp=4", 6));
  EXPECT_TRUE(within(ExportTarget::megatron, "tp=1,pp=4", 6));
  EXPECT_FALSE(within(ExportTarget::nemo, "tp=1,pp=4", 6));
  EXPECT_FALSE(within(ExportTarget::deepspeed, "tp=1,pp=4", 6));
  // DeepSpeed: AutoTP without a pipeline, ZeRO-0/1 under one, no CP, SP or selective.
  EXPECT_TRUE(within(ExportTarget::deepspeed, "tp=2,fsdp=3"));
  EXPECT_TRUE(within(ExportTarget::deepspeed, "tp=1,pp=2,distopt=1,recompute=full"));
  EXPECT_FALSE(within(ExportTarget::deepspeed, "tp=2,pp=2"));
  EXPECT_FALSE(within(ExportTarget::deepspeed, "tp=1,pp=2,fsdp=2"));
  EXPECT_FALSE(within(ExportTarget::deepspeed, "tp=2,sp=1"));
  EXPECT_FALSE(within(ExportTarget::deepspeed, "tp=1,cp=2"));
  EXPECT_FALSE(within(ExportTarget::deepspeed, "tp=1,recompute=selective"));
  // Selective recomputation is written as it is priced: Megatron-LM's and NeMo's selective
  // mode recomputes the attention core, torchtitan's (option op) all but every other matmul.
  constexpr auto kOpLevel = hardware::SelectiveRecompute::every_other_matmul;
  EXPECT_FALSE(within(ExportTarget::torchtitan, "tp=2,sp=1,recompute=selective"));
  EXPECT_TRUE(within(ExportTarget::torchtitan, "tp=2,sp=1,recompute=selective", 4, kOpLevel));
  EXPECT_TRUE(within(ExportTarget::torchtitan, "tp=2,sp=1,recompute=full"));
  EXPECT_FALSE(within(ExportTarget::megatron, "tp=2,recompute=selective", 4, kOpLevel));
  EXPECT_FALSE(within(ExportTarget::nemo, "tp=2,recompute=selective", 4, kOpLevel));
  EXPECT_TRUE(within(ExportTarget::megatron, "tp=2,recompute=full", 4, kOpLevel));
  // JAX: no pipeline, ZeRO-0 or 3; its selective policy (dots_with_no_batch_dims_saveable) is
  // neither stack's.
  EXPECT_FALSE(within(ExportTarget::jax, "tp=2,sp=1,recompute=selective"));
  EXPECT_FALSE(within(ExportTarget::jax, "tp=2,sp=1,recompute=selective", 4, kOpLevel));
  EXPECT_TRUE(within(ExportTarget::jax, "tp=2,sp=1,recompute=full"));
  EXPECT_TRUE(within(ExportTarget::jax, "tp=2,sp=1,fsdp=3"));
  EXPECT_FALSE(within(ExportTarget::jax, "tp=2,pp=2"));
  EXPECT_FALSE(within(ExportTarget::jax, "tp=1,dp=8,distopt=1"));
}

TEST(TargetLimitsAsConstraints, StacksNameTheirTargets) {
  EXPECT_EQ(stack_export_target("torchtitan"), ExportTarget::torchtitan);
  EXPECT_EQ(stack_export_target("nemo"), ExportTarget::nemo);
  EXPECT_EQ(stack_export_target("vllm"), std::nullopt);
  EXPECT_EQ(stack_export_target("dtensor"), std::nullopt);  // a script, not a stack
}

// A small LLaMA-like model (Llama 3.2 1B's shape, 4 layers, a 32k vocabulary, its LM head untied
// as torchtitan's llama3 builds it) on one DGX H100.
Graph small_llama() {
  models::Overrides o;
  o.layers = 4, o.hidden = 2048, o.heads = 32, o.kv_heads = 8, o.intermediate = 8192, o.vocab = 32000;
  return symtensor::testing::zoo_graph("llama3-8b", o, 32, 2048);
}

double step_of(Graph& g, const hardware::Cluster& c, const Plan& p) {
  return estimate_step(analyze_plan(g, c, p), p, c).step_time_s;
}

class SearchInsideTarget : public ::testing::TestWithParam<const char*> {};

TEST_P(SearchInsideTarget, ExportsExactlyAndIsNeverFasterThanUnbounded) {
  const std::string stack = GetParam();
  Graph g = small_llama();
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 1, 8), {stack});
  const ExportTarget t = *stack_export_target(stack);
  for (const char* strategy : {"symtensor", "megatron"}) {
    SCOPED_TRACE(strategy);
    StrategyOptions bounded;
    bounded.bound = t;
    const Plan inside = make_plan(strategy, g, c, bounded);
    const ExportResult e = export_plan(t, g, c, inside);
    EXPECT_TRUE(e.exact()) << ::testing::PrintToString(e.not_expressible);
    std::string written = e.config;  // DeepSpeed's JSON has no comments: its header is in the pipeline script
    for (const auto& [name, text] : e.extra) written += text;
    EXPECT_THAT(written, ::testing::HasSubstr("the plan is expressed exactly"));
    EXPECT_TRUE(target_items(t, g, c, inside).empty());
    const double inside_s = step_of(g, c, inside);
    // Unbounded (compile --unbounded --stack T): every plan, the bounded search's among them.
    StrategyOptions unbounded;
    unbounded.target_seed = t;
    const Plan any = make_plan(strategy, g, c, unbounded);
    const double any_s = step_of(g, c, any);
    EXPECT_GE(inside_s, any_s * (1 - 1e-9)) << "bounded " << inside_s << " s, unbounded " << any_s << " s";
    std::cout << stack << " " << strategy << ": bounded " << inside_s * 1e3 << " ms, unbounded " << any_s * 1e3 << " ms"
              << (target_items(t, g, c, any).empty() ? " (unbounded plan exact too)" : "") << "\n";
  }
}

// A mixture of experts (Mixtral 8x7B's layers, 4 of them, one DGX H100): the exhaustive search
// inside a recipe target finds expert-parallel layouts the SymTensor search's cheap Megatron seed
// does not walk to, and the unbounded search prices that plan too, so it stays the faster.
TEST_P(SearchInsideTarget, ExpertModelNeverFasterThanUnbounded) {
  const std::string stack = GetParam();
  models::Overrides o;
  o.layers = 4;
  Graph g = symtensor::testing::zoo_graph("mixtral-8x7b", o, 16, 4096);
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 1, 8), {stack});
  const ExportTarget t = *stack_export_target(stack);
  StrategyOptions bounded, unbounded;
  bounded.bound = t;
  unbounded.target_seed = t;
  const Plan inside = make_plan("symtensor", g, c, bounded), any = make_plan("symtensor", g, c, unbounded);
  EXPECT_TRUE(target_items(t, g, c, inside).empty()) << ::testing::PrintToString(target_items(t, g, c, inside));
  EXPECT_GE(step_of(g, c, inside), step_of(g, c, any) * (1 - 1e-9));
}

INSTANTIATE_TEST_SUITE_P(Stacks, SearchInsideTarget, ::testing::Values("megatron", "nemo", "torchtitan", "deepspeed", "jax"));

// ---- The nearest expressible plan is searched (issue #30) ----------------------------------

// The plan adjusted item by item, as export_plan builds it (recover_recipe, then the target's
// limits, then the recipe's Megatron layout), priced; nullopt when it has no layout.
std::optional<StepEstimate> adjusted_estimate(ExportTarget t, Graph& g, const hardware::Cluster& c, const Plan& p) {
  ParallelRecipe r = recover_recipe(g, c, p);
  (void)apply_target_limits(t, p.mode, r);
  const RecipePlan adjusted = build_recipe_plan(g, c, p, r);
  if (!adjusted.plan) return std::nullopt;
  return estimate_step(analyze_plan(g, c, *adjusted.plan), *adjusted.plan, c);
}

Plan megatron_plan(Graph& g, const hardware::Cluster& c, const std::string& knobs) {
  StrategyOptions so;
  so.megatron = knobs;
  return make_plan("megatron", g, c, so);
}

// The complaint: Llama 3 8B on one DGX H100 at 64 x 8k fits under Megatron-FSDP
// (ZeRO-3); NeMo's MegatronStrategy has no ZeRO-3, and the plan adjusted to the distributed
// optimizer (ZeRO-1) needs ~100 GiB of 70.8. The export writes the search's plan, which fits.
TEST(NearestPlanSearched, NemoExportOfAPlanWhoseAdjustedPlanDoesNotFitIsAFittingPlan) {
  Graph g = symtensor::testing::zoo_graph("llama3-8b", {}, 64, 8192);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  const Plan p = megatron_plan(g, c, "tp=1,pp=1,mb=1,fsdp=3");
  ASSERT_TRUE(estimate_step(analyze_plan(g, c, p), p, c).fits);
  {
    const ExportTarget t = ExportTarget::nemo;
    const std::optional<StepEstimate> adjusted = adjusted_estimate(t, g, c, p);
    ASSERT_TRUE(adjusted.has_value());
    EXPECT_FALSE(adjusted->fits) << adjusted->peak_memory / (1 << 30) << " GiB";
    const ExportResult e = export_plan(t, g, c, p);
    ASSERT_FALSE(e.exact());
    EXPECT_TRUE(e.searched);
    ASSERT_TRUE(e.nearest.has_value());
    EXPECT_EQ(e.nearest_way, ExportResult::NearestWay::searched);
    EXPECT_TRUE(e.nearest_fits);
    EXPECT_TRUE(e.nothing_fits.empty());
    EXPECT_TRUE(target_items(t, g, c, *e.nearest).empty()) << ::testing::PrintToString(target_items(t, g, c, *e.nearest));
    EXPECT_TRUE(estimate_step(analyze_plan(g, c, *e.nearest), *e.nearest, c).fits);
    EXPECT_EQ(e.nearest->inputs.model, p.inputs.model);
    // Both predictions and the way, in the file and the summary.
    EXPECT_THAT(e.config, ::testing::HasSubstr("# predicted step time of the plan: "));
    EXPECT_THAT(e.config, ::testing::HasSubstr("# nearest plan searched inside nemo"));
    const std::string summary = export_summary(e, "nemo.py");
    EXPECT_THAT(summary, ::testing::HasSubstr("fits as nemo.py.nearest.yaml"));
    EXPECT_THAT(summary, ::testing::ContainsRegex("nearest found +searched inside nemo .*adjusted item by item: .*does not fit"));
    // The file writes the searched plan's recipe; the summary and the header say the plan's own
    // too (Megatron-FSDP over the 8 GPUs), not only the nearest plan's.
    EXPECT_EQ(e.recipe.tp, recover_recipe(g, c, *e.nearest).tp);
    EXPECT_EQ(e.plan_recipe.zero_stage, 3);
    EXPECT_THAT(summary, ::testing::ContainsRegex("\nrecipe +tp=1 pp=1 vp=1 cp=1 dp=8 .* zero=3 "));
    EXPECT_THAT(summary, ::testing::ContainsRegex("\nnearest recipe +tp=" + std::to_string(e.recipe.tp) + " pp=" +
                                                  std::to_string(e.recipe.pp) + " .* zero=" + std::to_string(e.recipe.zero_stage) + " "));
    EXPECT_THAT(e.config, ::testing::ContainsRegex("# recipe of the plan itself: tp=1 pp=1 vp=1 cp=1 dp=8 .* zero=3 "));
    std::cout << "NeMo: plan " << e.original_step_s << " s; adjusted " << adjusted->step_time_s << " s, "
              << adjusted->peak_memory / (1 << 30) << " GiB (does not fit); searched " << e.nearest_step_s << " s, "
              << estimate_step(analyze_plan(g, c, *e.nearest), *e.nearest, c).peak_memory / (1 << 30) << " GiB\n";
  }
}

// compile --export T --unbounded: the unbounded search prices the fastest plan inside T (its
// target seed) and hands it over (StrategyOptions::target_plan_out); the export takes it for its
// nearest plan instead of searching again. It is the bounded search's plan, so the export is
// the same either way. Measured (Llama 3 8B, 4 DGX H100, 64 x 8k, --export nemo --unbounded):
// 2.45 s of CPU before, 1.47 s after.
TEST(NearestPlanSearched, UnboundedSearchHandsItsPlanInsideToTheExport) {
  Graph g = symtensor::testing::zoo_graph("llama3-8b", {}, 64, 8192);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  const ExportTarget t = ExportTarget::nemo;
  StrategyOptions unbounded, bounded;
  unbounded.target_seed = t;
  unbounded.target_plan_out = std::make_shared<std::optional<Plan>>();
  bounded.bound = t;
  const Plan any = make_plan("symtensor", g, c, unbounded);
  ASSERT_TRUE(unbounded.target_plan_out->has_value());
  const Plan& handed = **unbounded.target_plan_out;
  const Plan inside = make_plan("symtensor", g, c, bounded);
  EXPECT_EQ(handed.node_cuts, inside.node_cuts);
  EXPECT_EQ(handed.stage_of_node, inside.stage_of_node);
  EXPECT_EQ(handed.mesh_factors, inside.mesh_factors);
  EXPECT_EQ(handed.micro_batches, inside.micro_batches);
  EXPECT_EQ(handed.recompute, inside.recompute);
  EXPECT_EQ(handed.zero_stage, inside.zero_stage);
  EXPECT_EQ(handed.distributed_optimizer, inside.distributed_optimizer);
  EXPECT_EQ(handed.strategy, inside.strategy);
  const ExportResult searched = export_plan(t, g, c, any), given = export_plan(t, g, c, any, &handed);
  ASSERT_FALSE(searched.exact());  // the unbounded plan is outside NeMo: the nearest plan is needed
  ASSERT_TRUE(searched.nearest.has_value());
  EXPECT_EQ(given.nearest_way, searched.nearest_way);
  EXPECT_EQ(given.nearest_yaml, searched.nearest_yaml);
  EXPECT_EQ(given.config, searched.config);
}

// Nothing inside NeMo fits a device just big enough for a model fully sharded (ZeRO-3) over 8
// GPUs: 7 layers of 7 heads leave NeMo no tensor or pipeline cut of 8 GPUs, so its plans keep
// whole model states (at least 6 bytes per parameter against ZeRO-3's 2). The export says so in
// one line and marks the plan it writes as not fitting.
TEST(NearestPlanSearched, NothingInsideTheTargetFitsIsSaidAndMarked) {
  models::Overrides o;
  o.layers = 7, o.hidden = 3584, o.heads = 7, o.kv_heads = 7, o.intermediate = 14336;
  Graph g = symtensor::testing::zoo_graph("llama3-8b", o, 8, 128);
  hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  const Plan p = megatron_plan(g, c, "tp=1,pp=1,mb=1,fsdp=3,recompute=full");
  for (int i = 0; i < 3; ++i) {  // the device's memory shrunk to 0.3% above the plan's need
    const StepEstimate e = estimate_step(analyze_plan(g, c, p), p, c);
    c.device.memory_bytes *= e.peak_memory * 1.003 / e.memory_capacity;
  }
  ASSERT_TRUE(estimate_step(analyze_plan(g, c, p), p, c).fits);
  const ExportResult e = export_plan(ExportTarget::nemo, g, c, p);
  ASSERT_TRUE(e.nearest.has_value());
  EXPECT_TRUE(e.searched);
  EXPECT_FALSE(e.nearest_fits);
  EXPECT_FALSE(estimate_step(analyze_plan(g, c, *e.nearest), *e.nearest, c).fits);
  EXPECT_THAT(e.nothing_fits, ::testing::StartsWith("no plan inside nemo fits device memory: the nearest plan written does not fit ("));
  EXPECT_EQ(e.nothing_fits.find('\n'), std::string::npos);
  const std::string summary = export_summary(e, "nemo.py");
  EXPECT_THAT(summary, ::testing::HasSubstr("DOES NOT FIT, written as nemo.py.nearest.yaml"));
  EXPECT_THAT(summary, ::testing::HasSubstr(e.nothing_fits + "\n"));
  EXPECT_THAT(e.config, ::testing::HasSubstr("# " + e.nothing_fits + "\n"));
  EXPECT_THAT(e.nearest_yaml, ::testing::HasSubstr("fits: false"));
}

// Over plans every target cannot write as they are: the nearest plan is never slower than the
// plan adjusted item by item when both fit, and a searched nearest plan is written exactly.
TEST(NearestPlanSearched, NeverSlowerThanTheAdjustedPlanWhenBothFit) {
  Graph g = small_llama();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  std::vector<Plan> plans = {make_plan("symtensor", g, c, StrategyOptions{}), megatron_plan(g, c, "tp=2,pp=2,mb=1,vp=2,distopt=1"),
                             megatron_plan(g, c, "tp=1,pp=1,mb=1,fsdp=2"),
                             megatron_plan(g, c, "tp=2,pp=1,mb=2,sp=0,recompute=selective")};
  int searched_won = 0, compared = 0;
  for (const Plan& p : plans) {
    for (ExportTarget t : {ExportTarget::megatron, ExportTarget::nemo, ExportTarget::torchtitan, ExportTarget::deepspeed,
                           ExportTarget::dtensor, ExportTarget::jax}) {
      const ExportResult e = export_plan(t, g, c, p);
      if (e.exact()) continue;
      SCOPED_TRACE(std::string(to_string(t)) + " " + ::testing::PrintToString(e.not_expressible));
      ASSERT_TRUE(e.nearest.has_value());
      EXPECT_TRUE(e.searched);
      if (e.nearest_way == ExportResult::NearestWay::searched) {
        ++searched_won;
        EXPECT_TRUE(target_items(t, g, c, *e.nearest).empty());
      }
      const std::optional<StepEstimate> adjusted = adjusted_estimate(t, g, c, p);
      if (!adjusted || !adjusted->fits) continue;
      ++compared;
      EXPECT_TRUE(e.nearest_fits);
      EXPECT_LE(e.nearest_step_s, adjusted->step_time_s * (1 + 1e-12));
    }
  }
  EXPECT_GT(compared, 5);
  EXPECT_GT(searched_won, 0);
}

// A plan the target writes exactly is written as it is: no nearest plan, no search.
TEST(NearestPlanSearched, ExactPlanIsExportedUnchangedWithoutASearch) {
  Graph g = small_llama();
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-h100", 1, 8);
  const Plan p = megatron_plan(g, c, "tp=2,pp=2,mb=1");
  const ExportResult e = export_plan(ExportTarget::megatron, g, c, p);
  EXPECT_TRUE(e.exact());
  EXPECT_FALSE(e.searched);
  EXPECT_FALSE(e.nearest.has_value());
  EXPECT_EQ(e.nearest_way, ExportResult::NearestWay::none);
  EXPECT_EQ(e.recipe.tp, 2);
  EXPECT_EQ(e.recipe.pp, 2);
  EXPECT_THAT(e.config, ::testing::HasSubstr("--tensor-model-parallel-size 2\n"));
  EXPECT_THAT(e.config, ::testing::HasSubstr("--pipeline-model-parallel-size 2\n"));
  EXPECT_EQ(export_files(e, "m.args").size(), 1u);  // no m.args.nearest.yaml
  EXPECT_THAT(export_summary(e, "m.args"), ::testing::Not(::testing::HasSubstr("nearest")));
}

// ---- The stack bounds sweep, fit and compare as it bounds compile (issue #30) --------------

// LLaMA-2 13B on two nodes of 8 L4 at 64 x 2k under DeepSpeed: the unbounded search recomputes
// 36 of the 40 layers (--recompute-num-layers has no DeepSpeed key: the config checkpoints every
// layer); the search inside DeepSpeed recomputes all of them.
class BoundedCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("symtensor_bound_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    models::ModelConfig config = models::preset_config("llama2-13b");
    config.weights = models::Weights::none;
    path_ = (dir_ / "llama2_13b.onnx").string();
    models::save_model(models::build_model(config), path_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static StrategyOptions options(bool bounded) {
    StrategyOptions so;
    (bounded ? so.bound : so.target_seed) = ExportTarget::deepspeed;
    return so;
  }
  // A 6% headroom: L4's memory tight enough at this batch that recomputation is needed.
  hardware::Software software() const { return {"deepspeed", 0.06}; }
  std::filesystem::path dir_;
  std::string path_;
  const std::string bind_ = "batch=64,seq=2048";
};

TEST_F(BoundedCommands, SweepSearchesInsideTheStack) {
  SweepPoint points[2];
  for (bool bounded : {true, false}) {
    SweepOptions o;
    o.model = path_;
    o.bind = bind_;
    o.clusters = {"pcie-l4"};
    o.gpus = {16};
    o.software = software();
    o.strategy = options(bounded);
    const SweepResults r = run_sweep(o);
    ASSERT_EQ(r.points.size(), 1u);
    ASSERT_TRUE(r.points[0].ok) << r.points[0].error;
    points[bounded ? 0 : 1] = r.points[0];
  }
  EXPECT_THAT(points[0].strategy, ::testing::HasSubstr("recompute full"));
  EXPECT_THAT(points[0].strategy, ::testing::Not(::testing::HasSubstr("(layers")));
  EXPECT_THAT(points[1].strategy, ::testing::HasSubstr("recompute full (layers"));
  EXPECT_LT(points[1].step_time_s, points[0].step_time_s);
}

TEST_F(BoundedCommands, FitSearchesInsideTheStack) {
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("pcie-l4", 2, 8), software());
  FitPlan plans[2];
  for (bool bounded : {true, false}) {
    FitQuery q;
    q.model = path_;
    q.bind = bind_;
    q.options = options(bounded);
    q.label = [](Graph& g, const Plan& plan, const hardware::Cluster& cluster) {  // as `symtensor fit` names plans
      return plan_label_or(plan.strategy, g, plan, cluster, plan.strategy);
    };
    plans[bounded ? 0 : 1] = fit_strategy(q, c, {});
    ASSERT_TRUE(plans[bounded ? 0 : 1].fits) << plans[bounded ? 0 : 1].label;
  }
  EXPECT_THAT(plans[0].label, ::testing::HasSubstr("recompute full,"));
  EXPECT_THAT(plans[1].label, ::testing::HasSubstr("recompute full (layers"));
  EXPECT_LT(plans[1].step_time_s, plans[0].step_time_s);
  // The micro-batch query walks Megatron layouts: inside DeepSpeed none with selective
  // recomputation or tensor parallelism beside a pipeline.
  FitQuery q;
  q.model = path_;
  q.bind = bind_;
  q.options = options(true);
  q.label = [](Graph& g, const Plan& plan, const hardware::Cluster& cluster) {
    return plan_label_or(plan.strategy, g, plan, cluster, plan.strategy);
  };
  const FitPlan mb = fit_micro_batch(q, hardware::with_software(symtensor::testing::cluster_of("pcie-l4", 1, 8), software()), 1);
  EXPECT_THAT(mb.label, ::testing::Not(::testing::HasSubstr("recompute=selective")));
  // Named by its degrees (tp, dp, pp and cp), as fit's other answers, with its knobs beside them.
  EXPECT_THAT(mb.label, ::testing::MatchesRegex("megatron tp=[0-9]+ dp=[0-9]+ pp=[0-9]+ cp=1 ep=1, .* \\(--megatron tp=.*\\)"));
  const std::size_t knobs_at = mb.label.find("(--megatron ") + 12;
  const MegatronKnobs k = parse_megatron_knobs(mb.label.substr(knobs_at, mb.label.size() - knobs_at - 1));
  EXPECT_FALSE(k.tp > 1 && k.pp > 1) << mb.label;
  EXPECT_FALSE(k.sp) << mb.label;
}

TEST_F(BoundedCommands, CompareSearchesInsideTheStack) {
  const hardware::Cluster c = hardware::with_software(symtensor::testing::cluster_of("pcie-l4", 2, 8), software());
  ImportOptions io;
  io.bindings = parse_bindings(bind_);
  io.warn_opaque = false;
  Graph g = import_onnx_file(path_, io);
  double step[2] = {0, 0};
  for (bool bounded : {true, false}) {
    CompareOptions o;
    o.model = path_;
    o.bind = bind_;
    o.strategies = {"symtensor"};
    o.simulate = false;
    o.strategy = options(bounded);
    const CompareResults r = run_compare(o, c);
    ASSERT_EQ(r.strategies.size(), 1u);
    ASSERT_TRUE(r.strategies[0].ok) << r.strategies[0].error;
    ASSERT_TRUE(r.strategies[0].plan.has_value());
    EXPECT_EQ(target_items(ExportTarget::deepspeed, g, c, *r.strategies[0].plan).empty(), bounded);
    step[bounded ? 0 : 1] = r.strategies[0].step_time_s();
  }
  EXPECT_LT(step[1], step[0]);
}

}  // namespace
}  // namespace symtensor::compiler
