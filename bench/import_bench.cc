// Speed of ONNX import on a GPT-3 175B-sized graph (96 layers, hidden 12288, 96 heads),
// built in memory by the model zoo without weight data (parameters are graph inputs).
// Import = ONNX checker + strict shape inference + SymTensor's symbolic shape pass and
// parameter classification. Target (issue 2): under 2 s. Also: the same from a file on
// disk, and the compiled numeric form (NumericGraph) the cost model builds once per graph.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

#include <onnx/onnx_pb.h>

#include "compiler/cost/numeric_graph.h"
#include "compiler/onnx_import/import.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace {

using namespace symtensor;

const onnx::ModelProto& gpt3_proto() {
  static const onnx::ModelProto model = models::build_model(models::preset_config("gpt3-175b"));
  return model;
}

compiler::ImportOptions quiet_options(bool bind) {
  compiler::ImportOptions options;
  options.warn_opaque = false;
  if (bind) options.bindings = {{"batch", 1536}, {"seq", 2048}};
  return options;
}

void count_graph(benchmark::State& state, const compiler::Graph& graph) {
  state.counters["nodes"] = static_cast<double>(graph.nodes().size());
  state.counters["tensors"] = static_cast<double>(graph.tensors().size());
}

// Reference point: writing the graph with the zoo (not part of import).
void BM_BuildGpt3_175B_Proto(benchmark::State& state) {
  const models::ModelConfig config = models::preset_config("gpt3-175b");
  for (auto _ : state) {
    onnx::ModelProto model = models::build_model(config);
    benchmark::DoNotOptimize(model.graph().node_size());
  }
}
BENCHMARK(BM_BuildGpt3_175B_Proto)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ImportGpt3_175B_InMemory(benchmark::State& state) {
  const onnx::ModelProto& model = gpt3_proto();
  const bool bind = state.range(0) != 0;
  compiler::Graph graph;
  for (auto _ : state) {
    graph = compiler::import_onnx_model(model, "gpt3-175b", quiet_options(bind));
    benchmark::DoNotOptimize(graph.nodes().data());
  }
  count_graph(state, graph);
}
// Arg 0: symbolic batch/seq; arg 1: bound (batch=1536, seq=2048).
BENCHMARK(BM_ImportGpt3_175B_InMemory)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ImportGpt3_175B_FromFile(benchmark::State& state) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("symtensor_import_bench_" + std::to_string(::getpid()) + ".onnx");
  models::save_model(gpt3_proto(), path.string());
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  compiler::Graph graph;
  for (auto _ : state) {
    graph = compiler::import_onnx_file(path.string(), quiet_options(true));
    benchmark::DoNotOptimize(graph.nodes().data());
  }
  std::filesystem::remove(path);
  count_graph(state, graph);
}
BENCHMARK(BM_ImportGpt3_175B_FromFile)->Unit(benchmark::kMillisecond)->Iterations(3);

// The cost model's compiled form: every extent, FLOP count and tensor size as a + b*batch.
void BM_NumericGraphGpt3_175B(benchmark::State& state) {
  compiler::Graph graph = compiler::import_onnx_model(gpt3_proto(), "gpt3-175b", quiet_options(true));
  for (auto _ : state) {
    compiler::NumericGraph numeric(graph);
    benchmark::DoNotOptimize(numeric.batch_binding());
  }
  count_graph(state, graph);
}
BENCHMARK(BM_NumericGraphGpt3_175B)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
