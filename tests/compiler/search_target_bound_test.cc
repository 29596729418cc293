// The search inside the target (issue #30): `compile --stack T` / `--export T` bound the
// symtensor and megatron strategies by what T runs as written (compiler/export/
// target_limits.h), so the plan found exports to T exactly; the bound only removes
// candidates, so the bounded plan is never faster than the unbounded one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/export.h"
#include "compiler/export/target_limits.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

bool within(ExportTarget t, const std::string& knobs, int layers = 4) {
  MegatronKnobs k = parse_megatron_knobs(knobs);
  if (k.dp == 0) k.dp = 1;
  return recipe_within_target(t, megatron_layout_recipe(k, layers));
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
  // JAX: no pipeline, ZeRO-0 or 3.
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

// A small LLaMA-like model (Llama 3.2 1B with 4 layers and a 32k vocabulary) on one DGX H100.
Graph small_llama() {
  models::Overrides o;
  o.layers = 4;
  o.vocab = 32000;
  return symtensor::testing::zoo_graph("llama3.2-1b", o, 32, 2048);
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

}  // namespace
}  // namespace symtensor::compiler
