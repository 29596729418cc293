// How the compiler and the simulator scale, with the fitted growth exponent k of each
// series (time ∝ n^k, least squares on log time vs log n) printed after the runs; with
// --benchmark_repetitions the fastest run of each n is fitted.
//
// Model series (GPT family, seq 2048, head dim 128):
//   layers 12 → 128 at hidden 2048;  hidden 2048 → 25600 at 24 layers.
//   import: ONNX checker + strict shape inference + symbolic pass.
//   compile: the Megatron strategy (TP 8, PP 4, micro-batch 1) and its analytic
//     evaluation (analyze_plan + estimate_step) on 64 A100s, global batch 64.
//   search: the SymTensor search (`--strategy symtensor`, everything it prices) for the
//     same model and cluster.
//   simulate: the Megatron plan lowered to a step program and simulated (symmetric mode).
// Cluster series: 8 → 4096 A100s (dgx-a100 with 1 → 512 nodes), GPT 24 layers at hidden
//   4096, weak scaling (global batch 8 per 8 GPUs): evaluate (make_plan + analyze +
//   estimate of TP 8, DP the rest), the SymTensor search, and simulate.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/lowering/lower_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"
#include "simulator/engine/simulator.h"

namespace {

using namespace symtensor;

models::ModelConfig gpt(std::int64_t layers, std::int64_t hidden) {
  models::Overrides o;
  o.layers = layers;
  o.hidden = hidden;
  o.heads = hidden / 128;
  return models::apply_overrides(models::preset_config("gpt-1.7b"), o);
}

compiler::Graph import_gpt(std::int64_t layers, std::int64_t hidden, double batch) {
  compiler::ImportOptions options;
  options.warn_opaque = false;
  options.bindings = {{"batch", batch}, {"seq", 2048}};
  return compiler::import_onnx_model(models::build_model(gpt(layers, hidden)), "gpt", options);
}

// Imported graphs, kept for the compile and simulate series (import is measured apart).
compiler::Graph& cached_graph(std::int64_t layers, std::int64_t hidden) {
  static std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<compiler::Graph>> cache;
  auto& slot = cache[{layers, hidden}];
  if (!slot) slot = std::make_unique<compiler::Graph>(import_gpt(layers, hidden, 64));
  return *slot;
}

const hardware::Cluster& a100_nodes(int nodes) {
  static std::map<int, hardware::Cluster> cache;
  auto it = cache.find(nodes);
  if (it == cache.end())
    it = cache.emplace(nodes, hardware::scale_cluster(hardware::load_cluster("dgx-a100"), nodes, std::nullopt)).first;
  return it->second;
}

compiler::StrategyOptions megatron(const char* knobs) {
  compiler::StrategyOptions options;
  options.megatron = knobs;
  return options;
}

double evaluate(compiler::Graph& graph, const hardware::Cluster& cluster, const compiler::Plan& plan) {
  return compiler::estimate_step(compiler::analyze_plan(graph, cluster, plan), plan, cluster).step_time_s;
}

std::size_t simulate(compiler::Graph& graph, const hardware::Cluster& cluster, const compiler::Plan& plan) {
  const compiler::PlanAnalysis analysis = compiler::analyze_plan(graph, cluster, plan);
  compiler::LoweringOptions lowering;
  lowering.graph = &graph;
  const sim::Program program =
      compiler::lower_plan(analysis, plan, cluster, compiler::plan_mesh(plan, cluster), lowering);
  sim::SimOptions options;
  options.record_trace = false;
  return sim::simulate(program, cluster, options).events;
}

void set_n(benchmark::State& state, double n) { state.counters["n"] = n; }

// ---- model growth -------------------------------------------------------------------

void BM_Import_Layers(benchmark::State& state) {
  const onnx::ModelProto model = models::build_model(gpt(state.range(0), 2048));
  compiler::ImportOptions options;
  options.warn_opaque = false;
  for (auto _ : state) {
    compiler::Graph g = compiler::import_onnx_model(model, "gpt", options);
    benchmark::DoNotOptimize(g.nodes().data());
  }
  set_n(state, static_cast<double>(state.range(0)));
}
BENCHMARK(BM_Import_Layers)->Arg(12)->Arg(24)->Arg(48)->Arg(96)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_Import_Hidden(benchmark::State& state) {
  const onnx::ModelProto model = models::build_model(gpt(24, state.range(0)));
  compiler::ImportOptions options;
  options.warn_opaque = false;
  for (auto _ : state) {
    compiler::Graph g = compiler::import_onnx_model(model, "gpt", options);
    benchmark::DoNotOptimize(g.nodes().data());
  }
  set_n(state, static_cast<double>(state.range(0)));
}
BENCHMARK(BM_Import_Hidden)->Arg(2048)->Arg(4096)->Arg(8192)->Arg(12288)->Arg(25600)->Unit(benchmark::kMillisecond);

constexpr const char* kModelKnobs = "tp=8,pp=4,mb=1";

void BM_Compile_Layers(benchmark::State& state) {
  compiler::Graph& graph = cached_graph(state.range(0), 2048);
  const hardware::Cluster& cluster = a100_nodes(8);
  double step = 0;
  for (auto _ : state) {
    const compiler::Plan plan = compiler::make_plan("megatron", graph, cluster, megatron(kModelKnobs));
    step = evaluate(graph, cluster, plan);
    benchmark::DoNotOptimize(step);
  }
  set_n(state, static_cast<double>(state.range(0)));
  state.counters["step_s"] = step;
}
BENCHMARK(BM_Compile_Layers)->Arg(12)->Arg(24)->Arg(48)->Arg(96)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_Compile_Hidden(benchmark::State& state) {
  compiler::Graph& graph = cached_graph(24, state.range(0));
  const hardware::Cluster& cluster = a100_nodes(8);
  double step = 0;
  for (auto _ : state) {
    const compiler::Plan plan = compiler::make_plan("megatron", graph, cluster, megatron(kModelKnobs));
    step = evaluate(graph, cluster, plan);
    benchmark::DoNotOptimize(step);
  }
  set_n(state, static_cast<double>(state.range(0)));
  state.counters["step_s"] = step;
}
BENCHMARK(BM_Compile_Hidden)->Arg(2048)->Arg(4096)->Arg(8192)->Arg(12288)->Arg(25600)->Unit(benchmark::kMillisecond);

// The SymTensor search, timed; n is the series' size.
void time_search(benchmark::State& state, compiler::Graph& graph, const hardware::Cluster& cluster) {
  compiler::SearchResult r;
  for (auto _ : state) r = compiler::symtensor_search(graph, cluster, compiler::StrategyOptions{});  // read below: kept
  set_n(state, static_cast<double>(state.range(0)));
  state.counters["step_s"] = r.estimate.step_time_s;
  state.counters["evaluations"] = r.evaluations;
}

void BM_Search_Layers(benchmark::State& state) { time_search(state, cached_graph(state.range(0), 2048), a100_nodes(8)); }
BENCHMARK(BM_Search_Layers)->Arg(12)->Arg(24)->Arg(48)->Arg(96)->Arg(128)->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_Simulate_Layers(benchmark::State& state) {
  compiler::Graph& graph = cached_graph(state.range(0), 2048);
  const hardware::Cluster& cluster = a100_nodes(8);
  const compiler::Plan plan = compiler::make_plan("megatron", graph, cluster, megatron(kModelKnobs));
  std::size_t events = 0;
  for (auto _ : state) {
    events = simulate(graph, cluster, plan);
    benchmark::DoNotOptimize(events);
  }
  set_n(state, static_cast<double>(state.range(0)));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_Simulate_Layers)->Arg(12)->Arg(24)->Arg(48)->Arg(96)->Arg(128)->Unit(benchmark::kMillisecond);

// ---- cluster growth -----------------------------------------------------------------

compiler::Graph& cluster_series_graph() {
  static compiler::Graph graph = import_gpt(24, 4096, 8);
  return graph;
}

// Weak scaling: 8 samples per data-parallel replica (TP 8 inside a node).
compiler::Plan weak_scaling_plan(compiler::Graph& graph, const hardware::Cluster& cluster) {
  const int dp = cluster.num_devices() / 8;
  graph.symbols.bind("batch", 8.0 * dp);
  return compiler::make_plan("megatron", graph, cluster, megatron("tp=8,pp=1,mb=1"));
}

void BM_Evaluate_Gpus(benchmark::State& state) {
  compiler::Graph& graph = cluster_series_graph();
  const hardware::Cluster& cluster = a100_nodes(static_cast<int>(state.range(0) / 8));
  double step = 0;
  for (auto _ : state) {
    const compiler::Plan plan = weak_scaling_plan(graph, cluster);
    step = evaluate(graph, cluster, plan);
    benchmark::DoNotOptimize(step);
  }
  set_n(state, static_cast<double>(state.range(0)));
  state.counters["step_s"] = step;
}
BENCHMARK(BM_Evaluate_Gpus)->RangeMultiplier(8)->Range(8, 4096)->Unit(benchmark::kMillisecond);

void BM_Search_Gpus(benchmark::State& state) {
  compiler::Graph& graph = cluster_series_graph();
  graph.symbols.bind("batch", static_cast<double>(state.range(0)));  // 8 samples per 8 GPUs
  time_search(state, graph, a100_nodes(static_cast<int>(state.range(0) / 8)));
}
BENCHMARK(BM_Search_Gpus)->RangeMultiplier(8)->Range(8, 4096)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Simulate_Gpus(benchmark::State& state) {
  compiler::Graph& graph = cluster_series_graph();
  const hardware::Cluster& cluster = a100_nodes(static_cast<int>(state.range(0) / 8));
  const compiler::Plan plan = weak_scaling_plan(graph, cluster);
  std::size_t events = 0;
  for (auto _ : state) {
    events = simulate(graph, cluster, plan);
    benchmark::DoNotOptimize(events);
  }
  set_n(state, static_cast<double>(state.range(0)));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_Simulate_Gpus)->RangeMultiplier(8)->Range(8, 4096)->Unit(benchmark::kMillisecond);

// ---- the fit --------------------------------------------------------------------------

// Keeps, by benchmark function and n, the fastest seconds per iteration among the runs
// (with --benchmark_repetitions: the estimate a shared, noisy machine disturbs least).
class FitReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::map<double, double>> series;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration || run.iterations == 0) continue;
      const auto n = run.counters.find("n");
      if (n == run.counters.end()) continue;
      const double seconds = run.real_accumulated_time / static_cast<double>(run.iterations);
      auto [it, added] = series[run.run_name.function_name].try_emplace(n->second.value, seconds);
      if (!added) it->second = std::min(it->second, seconds);
    }
  }
};

// Least-squares slope of log(t) against log(n).
double fitted_exponent(const std::vector<std::pair<double, double>>& points) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double m = static_cast<double>(points.size());
  for (const auto& [n, t] : points) {
    const double x = std::log(n), y = std::log(t);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double denominator = m * sxx - sx * sx;
  return denominator == 0 ? 0 : (m * sxy - sx * sy) / denominator;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  FitReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nFitted growth exponents (time ∝ n^k, least squares on log-log):\n");
  for (const auto& [name, by_n] : reporter.series) {
    const std::vector<std::pair<double, double>> points(by_n.begin(), by_n.end());
    if (points.size() < 2) continue;
    std::printf("  %-22s k = %5.2f  (%zu points, n %g → %g, %.3g s → %.3g s)\n", name.c_str(),
                fitted_exponent(points), points.size(), points.front().first, points.back().first,
                points.front().second, points.back().second);
  }
  benchmark::Shutdown();
  return 0;
}
