// Speed of the discrete-event simulator on synthetic 1F1B training steps.
// Targets: 1024 GPUs (TP 8 x PP 16 x DP 8, 64 micro-batches, 96 layers) in symmetric mode
// under 5 s; 64 GPUs in full mode (every rank simulated) under 10 s.
#include <benchmark/benchmark.h>

#include "hardware/cluster.h"
#include "simulator/engine/simulator.h"
#include "simulator/program/synthetic.h"

namespace {

using namespace symtensor;

// GPT-3-like layer (h = 12288, s = 2048, micro-batch 1) split 8 ways by tensor parallelism.
sim::SyntheticConfig gpt_like(int tp, int pp, int dp, int micro_batches, int layers) {
  const double h = 12288, s = 2048;
  sim::SyntheticConfig cfg;
  cfg.tp = tp;
  cfg.pp = pp;
  cfg.dp = dp;
  cfg.micro_batches = micro_batches;
  cfg.layers = layers;
  cfg.layer_forward_flops = 24 * s * h * h / tp;
  cfg.tp_allreduce_bytes = 2 * s * h;
  cfg.p2p_bytes = 2 * s * h;
  cfg.layer_grad_bytes = 2 * 12 * h * h / tp;
  cfg.layer_activation_bytes = s * h * 34 / tp;
  cfg.optimizer_seconds = 0.05;
  double params = 12 * h * h * layers / pp / tp;
  cfg.static_memory = {2 * params, 2 * params, 12 * params};
  return cfg;
}

void run(benchmark::State& state, const sim::SyntheticConfig& cfg, int nodes, sim::SimMode mode) {
  sim::Program program = sim::synthetic_pipeline_program(cfg);
  hardware::Cluster cluster = hardware::load_cluster("dgx-a100x" + std::to_string(nodes));
  size_t tasks = 0;
  for (const auto& c : program.rank_classes) tasks += c.tasks.size();
  sim::SimOptions options;
  options.mode = mode;
  options.record_trace = false;
  sim::SimResult result;
  for (auto _ : state) {
    result = sim::simulate(program, cluster, options);
    benchmark::DoNotOptimize(result.events);  // an integer: the "+m,r" constraint mangles doubles with GCC
  }
  state.counters["step_time_s"] = result.step_time_s;
  state.counters["events"] = static_cast<double>(result.events);
  state.counters["program_tasks"] = static_cast<double>(tasks);
  state.counters["simulated_ranks"] = result.simulated_ranks;
}

void BM_Symmetric1024Gpus1F1B(benchmark::State& state) {
  run(state, gpt_like(8, 16, 8, 64, 96), 128, sim::SimMode::symmetric);
}
BENCHMARK(BM_Symmetric1024Gpus1F1B)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Full64Gpus1F1B(benchmark::State& state) {
  run(state, gpt_like(8, 4, 2, 16, 32), 8, sim::SimMode::full);
}
BENCHMARK(BM_Full64Gpus1F1B)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Symmetric64Gpus1F1B(benchmark::State& state) {
  run(state, gpt_like(8, 4, 2, 16, 32), 8, sim::SimMode::symmetric);
}
BENCHMARK(BM_Symmetric64Gpus1F1B)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
