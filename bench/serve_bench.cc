// Speed of the serving layout search (issue #33: `serve --slo-...` on Llama-3-70B over H100
// and H200 answers in under 10 s). Llama-3-70B (zoo preset llama3-70b) in FP8 with an FP8 KV
// cache on TensorRT-LLM, one node of each, aggregated and disaggregated layouts searched, at
// two workloads: 4 requests/s of 1000 -> 200 tokens under TTFT <= 0.5 s, TPOT <= 50 ms, and
// 2 requests/s of 8000 -> 400 tokens under TTFT <= 2 s, TPOT <= 20 ms (tight TPOT, long prompts).
// Import is measured apart (it is not the search).
#include <benchmark/benchmark.h>

#include "compiler/onnx_import/import.h"
#include "compiler/serve/serve_search.h"
#include "compiler/serve/serving_model.h"
#include "hardware/serving_engine.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace {

using namespace symtensor;

compiler::ServingModel import_llama3_70b() {
  compiler::ImportOptions io;
  io.bindings = {{"batch", 1.0}, {"seq", 1000.0}};
  io.warn_opaque = false;
  compiler::Graph graph = compiler::import_onnx_model(models::build_model(models::preset_config("llama3-70b")), "llama3-70b", io);
  return compiler::read_serving_model(graph, "llama3-70b");
}

const compiler::ServingModel& llama3_70b() {
  static const compiler::ServingModel m = import_llama3_70b();
  return m;
}

void BM_ImportLlama3_70B(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(import_llama3_70b());
}
BENCHMARK(BM_ImportLlama3_70B)->Unit(benchmark::kSecond)->Iterations(1);

// state.range(0): 0 the short-prompt workload, 1 the long-prompt one.
void serve_search_on(benchmark::State& state, const char* profile) {
  const hardware::ServingEngine engine = hardware::load_serving_engine("trtllm");
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster(profile), 1, std::nullopt);
  const compiler::ServingPrecision fp8{hardware::Precision::fp8, hardware::Precision::fp8};
  compiler::ServeSearchOptions o;
  if (state.range(0) == 0) {
    o.rate = 4;
    o.input_tokens = 1000;
    o.output_tokens = 200;
    o.slo = sim::ServingSlo{0.5, 0.05};
  } else {
    o.rate = 2;
    o.input_tokens = 8000;
    o.output_tokens = 400;
    o.slo = sim::ServingSlo{2.0, 0.02};
  }
  compiler::ServeSearchResult r;
  for (auto _ : state) r = compiler::search_serving(llama3_70b(), fp8, cluster, engine, o);
  int simulations = 0;
  for (const auto& c : r.disaggregated) simulations += c.simulations;
  state.counters["disaggregated_simulations"] = simulations;
  if (const auto a = compiler::serve_answer(r)) {
    state.counters["gpus"] = a->gpus;
    state.SetLabel(a->layout);
  } else {
    state.SetLabel("no layout meets the SLOs");
  }
}

void BM_ServeSearchLlama3_70B_H100(benchmark::State& state) { serve_search_on(state, "dgx-h100"); }
BENCHMARK(BM_ServeSearchLlama3_70B_H100)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1);

void BM_ServeSearchLlama3_70B_H200(benchmark::State& state) { serve_search_on(state, "hgx-h200"); }
BENCHMARK(BM_ServeSearchLlama3_70B_H200)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
