// symtensor compare MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G] [--bind ...]
//                   [--strategies symtensor,megatron,dp,zero3] [--megatron KNOBS] [--stack S [--unbounded]] -o DIR
// --stack T bounds the symtensor and megatron searches as on `compile` (bound_search); --unbounded lifts it.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>

#include "compiler/driver/cli_lists.h"
#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/report/compare.h"
#include "compiler/report/report_files.h"
#include "compiler/base/units.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct CompareCli {
  compiler::CompareOptions options;
  ClusterChoice cluster;
  std::string strategies = "symtensor,megatron,dp,zero3";
  bool no_simulate = false;
  std::string attention;
  std::string out;
  bool unbounded = false;
  const CLI::Option* stack = nullptr;
};

void run(CompareCli& cli) {
  cli.options.strategies = strategy_list(cli.strategies, "--strategies", true);
  sim::check_output_dir(cli.out, "-o");
  cli.options.simulate = !cli.no_simulate;
  cli.options.fusion.attention = compiler::parse_attention_mode(cli.attention.empty() ? "fused" : cli.attention);
  if (isatty(STDERR_FILENO)) cli.options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const hardware::Cluster cluster = load_cluster(cli.cluster);
  if (const auto bound = bound_search(cli.options.strategy, "", cli.stack->count() > 0, cluster.stack.name, cli.unbounded))
    std::cout << "search: " << bound_text(*bound) << "\n";
  if (!cli.options.simulate && compiler::compare_simulates(cli.options, cluster))
    std::cout << "--no-simulate: not on a mixed fleet, whose rows are simulated all the same (the estimate prices "
                 "the links at the fleet's uniform view; the simulation plays each rank on its own GPUs and NIC)\n";
  const compiler::CompareResults r = compiler::run_compare(cli.options, cluster);
  compiler::write_compare_report(r, cli.out);
  for (const auto& s : r.strategies) {
    if (!s.ok) {
      std::cout << s.strategy << ": no plan: " << s.error << "\n";
      continue;
    }
    std::cout << s.label << ": " << compiler::format_seconds(s.step_time_s()) << " per step, "
              << compiler::format_si(s.samples_per_s(), "samples/s") << ", " << compiler::kExactMfuLabel << " "
              << compiler::format_percent(s.mfu()) << ", " << compiler::palm_mfu_label(r.palm) << " "
              << compiler::format_percent(s.mfu_6n()) << ", peak " << compiler::format_bytes(s.peak_memory_bytes())
              << (s.fits() ? "" : " (does not fit)") << " [" << s.evaluator() << "]\n";
  }
  for (const auto& s : r.strategies)
    if (s.ok && s.simulated && s.simulation.moe_load.told()) {
      std::cout << "MoE load: " << compiler::describe_moe_load(s.simulation.moe_load) << "\n";
      break;
    }
  if (r.step_lower_bound_s > 0) std::cout << "bound: " << compiler::describe_step_lower_bound(r) << "\n";
  std::cout << (r.chosen >= 0 ? "chosen: " + r.strategies[r.chosen].label : std::string("no plan fits")) << "\n"
            << "report: " << cli.out << "/report.html (and report.md, results.csv, results.json)\n";
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto cli = std::make_shared<CompareCli>();
  CLI::App* cmd = app.add_subcommand("compare", "Plan, estimate and simulate each strategy; write the report");
  cmd->add_option("model", cli->options.model, "ONNX model")->required();
  add_cluster_options(cmd, cli->cluster);
  add_moe_load_option(cmd, cli->options.strategy.moe_load_imbalance);
  cli->stack = cmd->get_option("--stack");
  add_unbounded_option(cmd, cli->unbounded);
  cmd->add_option("--bind", cli->options.bind, "dim values, e.g. batch=8,seq=2048");
  add_attention_option(cmd, cli->attention);
  add_dim_options(cmd, cli->options.batch_dim, cli->options.sequence_dim);
  cmd->add_option("--strategies", cli->strategies, "comma-separated: symtensor,megatron,dp,zero3 (megatron-mimo: a vision-language model as Megatron MIMO runs it, the vision tower on GPUs of its own; symtensor-mimo: the same split, each side also planned by the SymTensor search)");
  cmd->add_option("--megatron", cli->options.megatron,
                  "Megatron knobs as constraints (tp=8,pp=2,...; the rest searched, tp, pp and mb given fix one plan); default: Megatron's best");
  cmd->add_flag("--no-simulate", cli->no_simulate, "analytic estimate only (a mixed fleet's rows are simulated all the same)");
  cmd->add_option("-o,--output", cli->out, "report folder")->required();
  cmd->callback([cli] { run(*cli); });
}

}  // namespace symtensor::driver
