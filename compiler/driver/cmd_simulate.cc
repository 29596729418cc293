// symtensor simulate MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G] [--bind ...]
//   (--plan plan.yaml | --strategy NAME [--megatron KNOBS]) [--full] [--trace trace.json] [--ops] [--json]
#include <iostream>
#include <memory>
#include <optional>

#include "compiler/cost/memory_breakdown.h"
#include "compiler/cost/time_breakdown.h"
#include "compiler/driver/command_setup.h"
#include "compiler/driver/recorded_inputs.h"
#include "compiler/driver/commands.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/report/plan_label.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"
#include "simulator/stats/chrome_trace.h"

namespace symtensor::driver {
namespace {

struct SimulateOptions {
  ModelChoice input;
  std::string plan, strategy, megatron, trace, mode = "train", precision = "bf16";
  ClusterChoice cluster;
  CLI::Option *stack_option = nullptr, *headroom_option = nullptr, *cluster_option = nullptr;
  bool full = false, json = false, no_overlap = false, ops = false;
  double bucket_mb = 25;
  std::optional<double> moe_load;  // --moe-load-imbalance
};

void run_simulate(SimulateOptions o) {
  const std::string strategy = implied_strategy(o.strategy, o.megatron, "simulate");
  if (o.plan.empty() == strategy.empty())
    throw std::runtime_error("simulate: give exactly one of --plan FILE or --strategy NAME (or --megatron KNOBS)");
  if (o.bucket_mb <= 0) throw std::runtime_error("simulate: --bucket-mb must be positive");
  if (!o.plan.empty())
    take_recorded_software(o.plan, given_software(o.stack_option, o.headroom_option, o.cluster_option), o.cluster, o.input);
  const hardware::Cluster loaded = load_cluster(o.cluster);
  compiler::Graph graph = import_model(o.input, !o.json);
  compiler::StrategyOptions so = strategy_options(o.mode, o.precision, o.megatron, o.plan);
  so.moe_load_imbalance = o.moe_load;
  const compiler::Plan plan = compiler::make_plan(o.plan.empty() ? strategy : "file", graph, loaded, so);
  // On a mixed fleet the plan may run on one group alone (Megatron-best's (a)): simulate it there.
  const hardware::Cluster cluster = compiler::cluster_of_plan(loaded, plan);

  compiler::LoweringOptions lowering;
  lowering.bucket_bytes = o.bucket_mb * 1e6;
  lowering.overlap_grad_sync = !o.no_overlap;
  sim::SimOptions sim_options;
  sim_options.mode = o.full ? sim::SimMode::full : sim::SimMode::symmetric;
  sim_options.record_trace = !o.trace.empty();
  const compiler::PlanSimulation s = compiler::simulate_plan(graph, plan, cluster, lowering, sim_options);
  if (!o.trace.empty()) sim::write_chrome_trace(s.program, s.result, o.trace);
  if (o.json) {
    nlohmann::json j = compiler::report_to_json(s.report, plan);
    j["memory_breakdown"] = compiler::memory_breakdown_json(compiler::memory_breakdown(graph, plan, s.analysis));
    if (o.ops) j["time_breakdown"] = compiler::time_breakdown_json(compiler::time_breakdown(graph, plan, s.analysis));
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << compiler::report_text(s.report, plan, compiler::plan_label_or(plan.strategy, graph, plan, cluster, plan.strategy));
  if (o.ops) std::cout << compiler::time_breakdown_text(compiler::time_breakdown(graph, plan, s.analysis));
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training step of a plan: step time, MFU, breakdown, memory");
  cmd->add_option("model", o->input.path, "ONNX model file")->required();
  add_cluster_options(cmd, o->cluster);
  add_moe_load_option(cmd, o->moe_load);
  o->stack_option = cmd->get_option("--stack");
  o->headroom_option = cmd->get_option("--memory-headroom");
  o->cluster_option = cmd->get_option("--cluster");
  add_model_options(cmd, o->input, "bind dim symbols, e.g. batch=512,seq=2048 (batch = global batch)");
  cmd->add_option("--plan", o->plan, "plan.yaml to simulate");
  cmd->add_option("--strategy", o->strategy, "plan generator: dp, zero3, megatron, ...");
  cmd->add_option("--megatron", o->megatron, "Megatron knobs as constraints (the rest searched; tp, pp and mb given fix one plan), e.g. tp=8,pp=8,mb=1,vp=3,recompute=full");
  cmd->add_option("--mode", o->mode, "train or infer")->capture_default_str();
  cmd->add_option("--precision", o->precision, "fp32, tf32, fp16, bf16, fp8 (per-tensor scaling), mxfp8 or fp4 (NVFP4)")->capture_default_str();
  cmd->add_option("--bucket-mb", o->bucket_mb, "data-parallel gradient bucket size in MB")->capture_default_str();
  cmd->add_flag("--no-overlap", o->no_overlap, "reduce gradients after the whole backward (Megatron's local DDP)");
  cmd->add_flag("--full", o->full, "simulate every rank instead of one per pipeline stage");
  cmd->add_flag("--ops", o->ops, "print where each stage's time goes by operator class (kernels forward, backward, recomputed; exposed collectives; achieved TFLOP/s)");
  cmd->add_option("--trace", o->trace, "write a Chrome trace (Perfetto) to this file");
  cmd->add_flag("--json", o->json, "print JSON (keys documented in compiler/lowering/README.md)");
  cmd->callback([o] { run_simulate(*o); });
}

}  // namespace symtensor::driver
