// symtensor sweep MODEL.onnx --clusters dgx-a100,dgx-h100 [--gpus 8..1024] [--bind ...]
//                 [--tokens 1e12] [--strategies ...] [--price GPU=USD/h] [--jobs N] [--stack S [--unbounded]] -o DIR
// sweep MODEL.onnx --cluster C --fail-nodes 0..2 [--bind ...] -o DIR: throughput as nodes are lost (#32).
// --stack T (a framework: megatron, nemo, torchtitan, deepspeed, jax) bounds the searches as on
// `compile` (command_setup.h bound_search); --unbounded lifts it.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <tuple>

#include "compiler/driver/cli_lists.h"
#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/sweep_serve.h"
#include "compiler/report/failure_report.h"
#include "hardware/cluster_loss.h"
#include "compiler/report/process_pool.h"
#include "compiler/report/report_files.h"
#include "compiler/report/sweep.h"
#include "compiler/base/units.h"
#include "hardware/cluster.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct SweepCli {
  compiler::SweepOptions options;
  std::string clusters;
  std::string gpus = "8..256";
  std::string strategies = "symtensor";
  int jobs = compiler::default_jobs();
  std::string attention;
  std::string shard = "1/1";
  std::vector<std::string> prices;  // --price, each "GPU=USD/h[,...]"
  std::string out;
  bool unbounded = false;
  const CLI::Option* stack = nullptr;
  SweepServeFlags serve;              // --serve and its flags (sweep_serve.h)
  const CLI::App* cmd = nullptr;
  std::string cluster;     // --cluster: the one cluster of --fail-nodes
  std::string fail_nodes;  // --fail-nodes A..B: throughput as nodes are lost (#32)
};

// sweep --cluster C --fail-nodes A..B: SymTensor's plan and Megatron-best's largest valid grid
// on what is left of C without A, ..., B nodes (compiler/report/failure_report.h).
void run_fail_nodes(SweepCli& cli) {
  if (cli.cluster.empty()) throw std::runtime_error("--fail-nodes: give the cluster that loses nodes with --cluster");
  if (!cli.clusters.empty()) throw std::runtime_error("--fail-nodes: give one cluster with --cluster, not --clusters");
  const auto [from, to] = compiler::parse_fail_nodes(cli.fail_nodes);
  const hardware::Cluster cluster = hardware::with_software(hardware::load_cluster(cli.cluster), cli.options.software);
  for (int lost : {from, to}) {  // a loss the cluster cannot take fails now, naming the flag
    try {
      (void)hardware::without_nodes(cluster, lost);
    } catch (const std::exception& e) {
      throw std::runtime_error("--fail-nodes " + cli.fail_nodes + ": " + e.what());
    }
  }
  if (const auto bound = bound_search(cli.options.strategy, "", cli.stack->count() > 0, cluster.stack.name, cli.unbounded))
    std::cout << "search: " << bound_text(*bound) << "\n";
  sim::check_output_dir(cli.out, "-o");
  const ModelChoice model{cli.options.model, cli.options.bind, cli.attention, cli.options.batch_dim, cli.options.sequence_dim};
  compiler::Graph graph = import_model(model, false);
  compiler::FailureSweep sweep = compiler::run_failure_sweep(graph, cluster, from, to, "", cli.options.strategy,
                                                             [](const std::string& line) { std::cerr << line << "\n"; });
  sweep.model = cli.options.model;
  sim::write_files_atomically(cli.out, compiler::failure_sweep_files(sweep));
  std::cout << compiler::failure_table(sweep)
            << "report: " << cli.out << "/report.md (and results.csv, results.json)\n";
}

// sweep --serve: the serving search per cluster and its cost per million output tokens.
void run_serve(const SweepCli& cli) {
  for (const char* flag : {"--strategies", "--tokens", "--shard", "--unbounded", "--jobs"})
    if (cli.cmd->get_option(flag)->count() > 0) throw std::runtime_error(std::string("sweep --serve: ") + flag + " is for training sweeps");
  SweepServeRun run{ModelChoice{cli.options.model, cli.options.bind, cli.attention, cli.options.batch_dim, cli.options.sequence_dim},
                    split_list(cli.clusters, "--clusters"), {}, cli.prices, cli.stack->count() > 0 ? cli.options.software.stack : "trtllm",
                    cli.out};
  if (cli.cmd->get_option("--gpus")->count() > 0) run.gpus = compiler::parse_gpu_counts(cli.gpus);
  run_sweep_serve(cli.serve, run);
}

void run(SweepCli& cli) {
  if (cli.serve.serve) return run_serve(cli);
  if (!cli.fail_nodes.empty()) return run_fail_nodes(cli);
  if (!cli.cluster.empty()) throw std::runtime_error("--cluster: a sweep over sizes takes --clusters; --cluster goes with --fail-nodes");
  if (cli.clusters.empty()) throw std::runtime_error("--clusters: required (or --cluster C --fail-nodes A..B)");
  cli.options.clusters = split_list(cli.clusters, "--clusters");
  for (const auto& name : cli.options.clusters) hardware::load_cluster(name);  // a bad name fails now, not per point
  const hardware::Cluster first = hardware::with_software(hardware::load_cluster(cli.options.clusters.front()),
                                                          cli.options.software);  // so does a bad stack
  if (const auto bound = bound_search(cli.options.strategy, "", cli.stack->count() > 0, first.stack.name, cli.unbounded))
    std::cout << "search: " << bound_text(*bound) << "\n";
  for (const auto& text : cli.prices)
    for (const auto& [cluster, usd] : compiler::parse_prices(text, cli.options.clusters)) cli.options.prices[cluster] = usd;
  cli.options.strategies = strategy_list(cli.strategies, "--strategies");
  sim::check_output_dir(cli.out, "-o");
  cli.options.gpus = compiler::parse_gpu_counts(cli.gpus);
  if (!(cli.options.tokens > 0)) throw std::runtime_error("--tokens: expected a positive number");
  if (cli.jobs < 1) throw std::runtime_error("--jobs: expected a positive number of worker processes");
  cli.options.jobs = cli.jobs;
  std::tie(cli.options.shard_index, cli.options.shard_count) = compiler::parse_shard(cli.shard);
  cli.options.fusion.attention = compiler::parse_attention_mode(cli.attention.empty() ? "fused" : cli.attention);
  // Progress always goes to stderr: a sweep is long enough to want it even when logged.
  cli.options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const compiler::SweepResults r = compiler::run_sweep(cli.options);
  compiler::write_sweep_report(r, cli.out);
  std::cout << "swept " << r.points.size() << " points in " << compiler::format_seconds(r.elapsed_s) << "\n"
            << "report: " << cli.out << "/report.html (and report.md, results.csv, results.json)\n";
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto cli = std::make_shared<SweepCli>();
  CLI::App* cmd = app.add_subcommand("sweep", "Best plan per cluster type and size: throughput, time and cost to train");
  cmd->add_option("model", cli->options.model, "ONNX model")->required();
  cmd->add_option("--clusters", cli->clusters, "comma-separated hardware profiles (required, but with --fail-nodes)");
  cmd->add_option("--cluster", cli->cluster, "with --fail-nodes: the cluster that loses nodes (a profile, NAMExNODES or a fleet a+b)");
  cmd->add_option("--fail-nodes", cli->fail_nodes,
                  "what-if after failures: A..B nodes lost (0..2), SymTensor's plan on what is left beside Megatron-best "
                  "on its largest valid grid, throughput and GPUs used (a fleet loses them from its largest group)");
  cmd->add_option("--gpus", cli->gpus, "GPU counts: 8,16,64 or 8..1024 (powers of two)");
  cmd->add_option("--bind", cli->options.bind, "dim values, e.g. batch=1024,seq=4096");
  add_software_options(cmd, cli->options.software);
  add_moe_load_option(cmd, cli->options.strategy.moe_load_imbalance);
  cli->stack = cmd->get_option("--stack");
  add_unbounded_option(cmd, cli->unbounded);
  add_attention_option(cmd, cli->attention);
  add_dim_options(cmd, cli->options.batch_dim, cli->options.sequence_dim);
  cmd->add_option("--tokens", cli->options.tokens, "tokens to train (default 1e12)");
  cmd->add_option("--strategies", cli->strategies,
                  "comma-separated: symtensor,megatron,dp,zero3 (default symtensor, whose search starts from "
                  "Megatron-LM's and data-parallel layouts)");
  cmd->add_option("--price", cli->prices,
                  "your price per GPU-hour in USD, GPU=USD/h: a swept profile or its GPU (dgx-h100=2.5, "
                  "H100-SXM5-80GB=2.5); comma-separated or repeated; the others keep the profiles' illustrative prices")
      ->allow_extra_args(false);  // one GPU=USD/h per --price: the model after it stays the model
  cmd->add_option("--jobs", cli->jobs, "worker processes (default: one per processor)");
  cmd->add_option("--shard", cli->shard, "K/N: compute only every N-th point from the K-th (a job array's task); "
                                         "join the N folders with `symtensor merge`");
  cmd->add_option("-o,--output", cli->out, "report folder")->required();
  add_sweep_serve_options(cmd, cli->serve);
  cli->cmd = cmd;
  cmd->callback([cli] { run(*cli); });
}

}  // namespace symtensor::driver
