// Compile speed of the searches. The headline: the SymTensor search for GPT-3 175B (96
// layers, zoo preset gpt3-175b, batch 1536, seq 2048) on 1024 GPUs (dgx-a100 scaled to 128
// nodes) must stay under 1 s on one core (issue #32), and the fleet search of LLaMA-2 70B
// (batch 768, seq 4096) on a two-type fleet of 96 GPUs (dgx-h100x4+dgx-a100x8, Megatron-LM's
// stack) under 5 s; the SymTensor search for DeepSeek-V3 (zoo preset deepseek-v3: 61 layers, 256
// routed experts, batch 8192 x 4096 as NeMo's H100 recipe) on 2048 H100 (dgx-h100 scaled to 256
// nodes) under 1 s (issue #31). Import is measured apart (it is not the search).
#include <benchmark/benchmark.h>

#include "compiler/cost/numeric_graph.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/megatron.h"
#include "onnx_models/model_zoo.h"
#include "hardware/stack.h"
#include "onnx_models/presets.h"

namespace {

using namespace symtensor;

// The vocabulary padded to 51,200 as Megatron-LM pads it (a multiple of 128 x TP), so that
// Megatron's vocabulary-parallel head splits evenly: the judge at its best.
compiler::Graph import_preset(const std::string& preset, double batch, double seq) {
  compiler::ImportOptions o;
  o.bindings = {{"batch", batch}, {"seq", seq}};
  o.warn_opaque = false;
  models::ModelConfig config = models::preset_config(preset);
  config.vocab = 51200;
  return compiler::import_onnx_model(models::build_model(config), preset, o);
}

compiler::Graph& gpt3() {
  static compiler::Graph g = import_preset("gpt3-175b", 1536, 2048);
  return g;
}

const hardware::Cluster& cluster_1024() {
  static const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 128, std::nullopt);
  return c;
}

void BM_ImportGpt3_175B(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(import_preset("gpt3-175b", 1536, 2048));
}
BENCHMARK(BM_ImportGpt3_175B)->Unit(benchmark::kSecond)->Iterations(1);

void BM_NumericGraphGpt3_175B(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(compiler::NumericGraph(gpt3()));
}
BENCHMARK(BM_NumericGraphGpt3_175B)->Unit(benchmark::kSecond)->Iterations(1);

void BM_SymTensorSearchGpt3_175B_1024Gpus(benchmark::State& state) {
  compiler::SearchResult r;
  for (auto _ : state) r = compiler::symtensor_search(gpt3(), cluster_1024(), compiler::StrategyOptions{});
  state.counters["evaluations"] = r.evaluations;
  state.counters["step_s"] = r.estimate.step_time_s;
  state.counters["mfu"] = r.estimate.mfu;
  state.counters["refine_moves"] = r.refine_moves;
  state.counters["refine_kept"] = r.refine_kept;
  state.SetLabel(r.summary);
}
BENCHMARK(BM_SymTensorSearchGpt3_175B_1024Gpus)->Unit(benchmark::kSecond)->Iterations(1);

void BM_MegatronSearchGpt3_175B_1024Gpus(benchmark::State& state) {
  compiler::MegatronSearchResult r;
  for (auto _ : state) r = compiler::megatron_search(gpt3(), cluster_1024(), compiler::StrategyOptions{});
  state.counters["evaluations"] = r.evaluations;
  state.counters["step_s"] = r.estimate.step_time_s;
  state.SetLabel(compiler::to_string(r.knobs));
}
BENCHMARK(BM_MegatronSearchGpt3_175B_1024Gpus)->Unit(benchmark::kSecond)->Iterations(1);

compiler::Graph& llama2_70b() {
  static compiler::Graph g = [] {
    compiler::ImportOptions o;
    o.bindings = {{"batch", 768}, {"seq", 4096}};
    o.warn_opaque = false;
    return compiler::import_onnx_model(models::build_model(models::preset_config("llama2-70b")), "llama2-70b", o);
  }();
  return g;
}

void BM_FleetSearchLlama2_70B_96Gpus(benchmark::State& state) {
  const hardware::Cluster fleet = hardware::with_software(hardware::load_cluster("dgx-h100x4+dgx-a100x8"), hardware::Software{});
  compiler::Graph& g = llama2_70b();  // imported before the clock starts
  compiler::FleetSearchResult r;
  for (auto _ : state) r = compiler::fleet_search(g, fleet, compiler::StrategyOptions{});
  state.counters["simulations"] = r.simulations;
  state.counters["step_s"] = r.plan.step_time_s;
  state.counters["megatron_best_s"] = r.megatron.best().step_time_s;
  state.counters["ceiling_share"] = r.ceiling_share;
  state.SetLabel(r.plan.label);
}
BENCHMARK(BM_FleetSearchLlama2_70B_96Gpus)->Unit(benchmark::kSecond)->Iterations(1);

// The same search without the batch-shares shape (fleet_shares.h): what that shape adds.
void BM_FleetSearchLlama2_70B_96Gpus_NoBatchShares(benchmark::State& state) {
  const hardware::Cluster fleet = hardware::with_software(hardware::load_cluster("dgx-h100x4+dgx-a100x8"), hardware::Software{});
  compiler::Graph& g = llama2_70b();
  compiler::FleetSearchResult r;
  for (auto _ : state) r = compiler::fleet_search(g, fleet, compiler::StrategyOptions{}, false);
  state.counters["simulations"] = r.simulations;
  state.counters["step_s"] = r.plan.step_time_s;
}
BENCHMARK(BM_FleetSearchLlama2_70B_96Gpus_NoBatchShares)->Unit(benchmark::kSecond)->Iterations(1);

// The fleet search's costliest simulation alone: Megatron-best on the fleet's dgx-h100x4 group
// (its knobs as the search finds them), lowered and simulated (about 1.4M tasks): the
// lowering, the engine's compilation of the program and the discrete-event run. The first
// repetition pays for faulting the program's memory in (about 1.7 s of its 2.4 s here); the
// fleet search's first simulation does too. 2026-12-05, the shared 2-core machine: 913-984 ms
// warm before the commit add8e0a's collective ids and indexes, 699-765 ms after. /0 validates
// the program (simulate_plan's default), /1 trusts it (SimOptions::trusted_program), as the
// fleet search did until d2ff4ea: 2026-12-06, warm 796-834 ms /0, 696-710 ms /1 (load 2-3);
// on a quiet machine (load 0.8) 716-772 ms /0, 630-643 ms /1, the first repetition 2.12 s
// (2.48 s before 663475c's fuller reserve). /2 lowers the plan straight into the engine's
// form, as the fleet search does (simulate_plan_lean; the search's simulate_plan_report the same
// with its kept analyzers: no text program, ids or index):
// 2026-12-06, load 2-3, 283-305 ms warm against 605-638 ms for /1 in the same process.
void BM_SimulateMegatronPlanLlama2_70B_32H100(benchmark::State& state) {
  const hardware::Cluster fleet = hardware::with_software(hardware::load_cluster("dgx-h100x4+dgx-a100x8"), hardware::Software{});
  const hardware::Cluster group = hardware::group_cluster(fleet, 0);
  compiler::Graph& g = llama2_70b();
  const compiler::Plan plan = compiler::make_megatron_plan(
      g, group, compiler::parse_megatron_knobs("tp=2,pp=4,cp=2,dp=2,mb=1,vp=1,sp=1,recompute=none,distopt=1,fsdp=2"),
      compiler::StrategyOptions{});
  sim::SimOptions options;
  options.record_trace = false;
  options.trusted_program = state.range(0) != 0;  // /1: without validate_program
  const bool lean = state.range(0) == 2;          // /2: lowered straight into the engine's form, as the fleet search does
  compiler::PlanSimulation s;
  for (auto _ : state)
    s = lean ? compiler::simulate_plan_lean(g, plan, group, {}, options) : compiler::simulate_plan(g, plan, group, {}, options);
  std::size_t tasks = 0;
  for (const auto& c : s.program.rank_classes) tasks += c.tasks.size();
  if (!lean) state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["step_s"] = s.report.step_time_s;
}
BENCHMARK(BM_SimulateMegatronPlanLlama2_70B_32H100)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

compiler::Graph& deepseek_v3() {
  static compiler::Graph g = [] {
    compiler::ImportOptions o;
    o.bindings = {{"batch", 8192}, {"seq", 4096}};
    o.warn_opaque = false;
    return compiler::import_onnx_model(models::build_model(models::preset_config("deepseek-v3")), "deepseek-v3", o);
  }();
  return g;
}

void BM_SymTensorSearchDeepSeekV3_2048Gpus(benchmark::State& state) {
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 256, std::nullopt);
  compiler::Graph& g = deepseek_v3();  // imported before the clock starts
  compiler::SearchResult r;
  for (auto _ : state) r = compiler::symtensor_search(g, cluster, compiler::StrategyOptions{});
  state.counters["evaluations"] = r.evaluations;
  state.counters["step_s"] = r.estimate.step_time_s;
  state.counters["mfu"] = r.estimate.mfu;
  state.SetLabel(r.summary);
}
BENCHMARK(BM_SymTensorSearchDeepSeekV3_2048Gpus)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
