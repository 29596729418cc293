// symtensor compile MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G] [--bind batch=..,seq=..]
//   [--strategy symtensor|megatron|dp|zero3|ilp] [--megatron tp=..,pp=..] [--plan plan.yaml]
//   [--mode train|infer] [--precision bf16] [--allow-oom] [--onnx] [--export T] [--stack S] [--unbounded] -o DIR
// Builds a plan, prices it (analyze_plan + estimate_step), writes DIR/plan.yaml (and with
// --onnx the sharded program) and prints a summary. A plan that does not fit device memory
// is an error naming the memory needed, the capacity and about how many devices it would
// take, and nothing is written, unless --allow-oom is given.
// The search is bounded (issue #30) by what the export target runs as written (--export T), else
// by the stack's framework when --stack names one (megatron, nemo, torchtitan, deepspeed, jax):
// the symtensor and megatron strategies return the fastest plan inside it. --unbounded searches
// every plan (the export then writes the nearest expressible one beside it, both priced).
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "compiler/cost/memory_breakdown.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/cost/step_prediction.h"
#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/recorded_inputs.h"
#include "compiler/export/export.h"
#include "compiler/onnx_import/proto_reading.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/rewrite/sharded_onnx.h"
#include "compiler/report/plan_label.h"
#include "compiler/base/units.h"
#include "compiler/search/export_searched.h"
#include "compiler/report/failure_report.h"
#include "compiler/search/failure_plans.h"
#include "compiler/search/fleet_estimate.h"
#include "compiler/search/fleet_search.h"
#include "hardware/cluster_loss.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct CompileOptions {
  ModelChoice input;
  std::string strategy, megatron, plan, mode, precision, out, export_to;
  std::vector<std::string> without;  // --without K node: the what-if after a failure (#32)
  ClusterChoice cluster;
  CLI::Option *stack_option = nullptr, *headroom_option = nullptr, *cluster_option = nullptr;
  bool allow_oom = false, onnx = false, unbounded = false;
  std::optional<double> moe_load;  // --moe-load-imbalance
};

std::string mesh_text(const compiler::Plan& plan, const hardware::DeviceMesh& mesh) {
  std::string s;
  for (std::size_t a = 0; a < mesh.axes().size(); ++a) {
    s += (s.empty() ? "" : " x ") + mesh.axes()[a].name + "=" + std::to_string(mesh.axes()[a].size);
    if (static_cast<int>(a) == plan.pipeline_axis) s += " (pipeline)";
  }
  return s;
}

void run_compile(CompileOptions o) {
  if (!o.plan.empty())
    take_recorded_software(o.plan, given_software(o.stack_option, o.headroom_option, o.cluster_option), o.cluster, o.input);
  const hardware::Cluster loaded = o.without.empty() ? load_cluster(o.cluster) : cluster_without(load_cluster(o.cluster), o.without);
  compiler::StrategyOptions so = strategy_options(o.mode, o.precision, o.megatron, o.plan);
  so.moe_load_imbalance = o.moe_load;
  std::string strategy = o.strategy;
  if (!o.plan.empty()) {
    if (!strategy.empty() && strategy != "file") throw std::runtime_error("--plan and --strategy " + strategy + " exclude each other");
    strategy = "file";
  }
  strategy = implied_strategy(strategy, o.megatron, "compile");
  if (strategy.empty()) strategy = "symtensor";

  // Refuse an unusable output folder before the (slower) import and planning.
  sim::check_output_dir(o.out, "-o");
  if (!o.export_to.empty()) (void)compiler::parse_export_target(o.export_to);
  bound_search(so, o.export_to, o.stack_option && o.stack_option->count() > 0, loaded.stack.name, o.unbounded);
  // --export T --unbounded: the search prices the fastest plan inside T; the export takes it
  // as its nearest candidate instead of searching again.
  if (so.target_seed && !o.export_to.empty()) so.target_plan_out = std::make_shared<std::optional<compiler::Plan>>();
  const bool bounded = so.bound && (strategy == "symtensor" || strategy == "megatron");

  compiler::Graph graph = import_model(o.input, true);
  // A mixed fleet (#32): the search that places layers by speed, beside Megatron-best's two
  // plans; the plan may run on one group alone (its cluster is then that group).
  std::optional<compiler::FleetSearchResult> fleet;
  // After a failure (--without), SymTensor's plan on what is left beside Megatron-best on its
  // largest valid grid, each with the GPUs it uses (compiler/search/failure_plans.h).
  std::optional<compiler::FailurePlans> after_loss;
  std::optional<hardware::Cluster> on;  // the cluster the plan runs on, where the what-if chose it
  compiler::Plan plan;
  if (loaded.mixed() && strategy == "symtensor") {
    fleet = compiler::fleet_search(graph, loaded, so);
    plan = fleet->plan.plan;
    if (!o.without.empty()) after_loss = compiler::failure_plans_of_fleet(*fleet, loaded);
  } else if (!o.without.empty() && !loaded.mixed() && (strategy == "symtensor" || strategy == "megatron")) {
    after_loss = compiler::plans_after_loss(graph, loaded, so);
    const compiler::GridPlan& chosen = strategy == "symtensor" ? after_loss->symtensor : after_loss->megatron;
    if (!chosen.found) throw std::runtime_error(o.input.path + ": " + chosen.note);
    plan = chosen.plan;
    on = chosen.cluster;
  } else {
    plan = compiler::make_plan(strategy, graph, loaded, so);
  }
  const hardware::Cluster cluster = on ? *on : compiler::cluster_of_plan(loaded, plan);
  ClusterChoice recorded = o.cluster;  // after a loss: the cluster left, as --cluster/--nodes would give it
  if (!o.without.empty() && loaded.mixed()) recorded.profile = loaded.name, recorded.nodes.reset();
  if (!o.without.empty() && !loaded.mixed() && cluster.levels.size() > 1) recorded.nodes = hardware::node_count(cluster);
  plan.inputs = recorded_inputs(o.input, recorded, cluster);  // `export plan.yaml` needs nothing else
  if (strategy == "file") {  // a plan file keeps its mode and precision unless the command line sets them
    if (!o.mode.empty()) plan.mode = so.mode;
    if (!o.precision.empty()) plan.precision = so.precision;
  }
  const compiler::PlanAnalysis analysis = compiler::analyze_plan(graph, cluster, plan);
  const compiler::StepEstimate step =
      cluster.mixed() ? compiler::fleet_step_estimate(graph, cluster, plan) : compiler::estimate_step(analysis, plan, cluster);

  const compiler::PlanPrediction prediction = compiler::plan_prediction(step);
  if (!step.fits && !o.allow_oom) {
    // Nothing is written: memory per device falls about as 1/devices under the sharding
    // a bigger cluster allows (ZeRO-3 and data parallelism split every byte), so this is
    // the count to try next.
    const int devices_needed = static_cast<int>(std::ceil(cluster.num_devices() * step.peak_memory / step.memory_capacity));
    throw std::runtime_error(fmt::format(
        "{}: the {} plan does not fit: {} per device at least, {} available on {}; about {} devices of this kind "
        "would be needed (or pass --allow-oom to write the plan anyway)",
        o.input.path, plan.strategy, compiler::format_bytes(step.peak_memory), compiler::format_bytes(step.memory_capacity),
        cluster.name, devices_needed));
  }
  std::vector<std::pair<std::string, std::string>> files = {
      {"plan.yaml", compiler::plan_to_yaml(plan, graph, cluster, &prediction)}};
  std::optional<compiler::ExportResult> exported;
  if (!o.export_to.empty()) {
    const compiler::Plan* inside =
        so.target_plan_out && *so.target_plan_out && strategy == "symtensor" ? &**so.target_plan_out : nullptr;
    exported = fleet ? compiler::export_fleet_plan(compiler::parse_export_target(o.export_to), graph, loaded, *fleet)
                     : compiler::export_plan(compiler::parse_export_target(o.export_to), graph, cluster, plan, inside);
    const auto more = compiler::export_files(*exported, compiler::default_export_file(exported->target));
    files.insert(files.end(), more.begin(), more.end());
  }
  std::vector<std::string> written;
  if (o.onnx) {
    onnx::ModelProto original = compiler::read_model_file(o.input.path);
    compiler::inline_external_data(original, o.input.path);
    written = compiler::write_sharded_onnx(original, graph, plan, cluster, o.out, compiler::Mutation::none).files;
  }
  const std::string path = (std::filesystem::path(o.out) / "plan.yaml").string();
  sim::write_files_atomically(o.out, files);

  const hardware::DeviceMesh mesh = compiler::plan_mesh(plan, cluster);
  std::cout << fmt::format("{:<18}{}\n", "model", o.input.path);
  std::cout << fmt::format("{:<18}{} ({} devices)\n", "cluster", cluster.name, cluster.num_devices());
  std::cout << fmt::format("{:<18}{}{}\n", "strategy", plan.strategy, strategy == "file" ? " (from " + o.plan + ")" : "");
  if (bounded)
    std::cout << fmt::format("{:<18}{}\n", "search", bound_text(*so.bound));
  std::cout << fmt::format("{:<18}{}\n", "mesh", mesh_text(plan, mesh));
  std::cout << fmt::format("{:<18}{}\n", "plan", compiler::plan_label_or(plan.strategy, graph, plan, cluster, plan.strategy));
  std::cout << fmt::format("{:<18}{}, batch {}, {} micro-batch{}, {}{}\n", "mode", compiler::to_string(plan.mode),
                           plan.global_batch, plan.micro_batches, plan.micro_batches == 1 ? "" : "es",
                           compiler::to_string(plan.schedule), plan.virtual_stages > 1 ? fmt::format(" x{}", plan.virtual_stages) : "");
  std::cout << fmt::format("{:<18}{}{}\n", "step time", compiler::describe_step_time(step.step_time_s),
                           cluster.mixed() ? " (analytic: each stage on its group's device; simulated below)" : "");
  std::cout << fmt::format("{:<18}{}\n", "throughput",
                           compiler::describe_throughput(step.samples_per_s, compiler::bound_sequence_length(graph)));
  std::cout << fmt::format("{:<18}{}\n", "MFU", compiler::format_percent(step.mfu));
  if (analysis.moe_load.told()) std::cout << fmt::format("{:<18}{}\n", "MoE load", compiler::describe_moe_load(analysis.moe_load));
  std::cout << "memory per device (peak vs capacity):\n";
  for (std::size_t s = 0; s < step.stage_peak_memory.size(); ++s) {
    const double need = step.stage_peak_memory[s];
    const double capacity = step.stage_capacity(s);
    std::cout << fmt::format("  stage {:<4}{:>12} / {:<12}{}\n", s, compiler::format_bytes(need), compiler::format_bytes(capacity),
                             need > capacity ? "DOES NOT FIT" : "ok");
  }
  std::cout << "memory per device, part by part:\n"
            << compiler::memory_breakdown_text(compiler::memory_breakdown(graph, plan, analysis));
  if (fleet) std::cout << compiler::describe_fleet_result(*fleet, loaded);
  if (after_loss)
    std::cout << compiler::describe_after_loss(*after_loss, nodes_lost(o.without), compiler::bound_sequence_length(graph));
  std::cout << "plan written to " << path << "\n";
  if (!written.empty()) {
    std::cout << "sharded ONNX written to " << o.out << ":";
    for (const auto& f : written) std::cout << " " << f;
    std::cout << "\n";
  }
  if (exported)
    std::cout << compiler::export_summary(*exported,
                                          (std::filesystem::path(o.out) / compiler::default_export_file(exported->target)).string());
  if (!step.fits)
    std::cerr << fmt::format("symtensor: warning: the plan does not fit: {} per device needed, {} available (--allow-oom)\n",
                             compiler::format_bytes(step.peak_memory), compiler::format_bytes(step.memory_capacity));
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand("compile", "Plan a model on a cluster, price the plan and write DIR/plan.yaml");
  cmd->add_option("model", o->input.path, "ONNX model file")->required();
  add_cluster_options(cmd, o->cluster);
  add_moe_load_option(cmd, o->moe_load);
  o->stack_option = cmd->get_option("--stack");
  o->headroom_option = cmd->get_option("--memory-headroom");
  o->cluster_option = cmd->get_option("--cluster");
  add_model_options(cmd, o->input, "dim values, e.g. batch=512,seq=2048 (batch is required)");
  cmd->add_option("--strategy", o->strategy, "symtensor (default) | megatron | dp | zero3 | ilp");
  cmd->add_option("--megatron", o->megatron, "Megatron knobs as constraints (the rest searched; tp, pp and mb given fix one plan): tp=8,pp=8,mb=1,vp=3,sp=1,recompute=selective,distopt=1");
  cmd->add_option("--without", o->without,
                  "what-if after a failure: plan on what is left without K nodes, `--without 1 node` (a fleet: from its "
                  "largest group, or `--without 1 dgx-a100`); prints the GPUs SymTensor's plan and Megatron-best's "
                  "largest valid grid use and idle")
      ->expected(2);
  cmd->add_option("--plan", o->plan, "read the plan from this plan.yaml instead of making one");
  cmd->add_option("--mode", o->mode, "train | infer (default train; a plan file's own)");
  cmd->add_option("--precision", o->precision, "fp32 | tf32 | fp16 | bf16 | fp8 (per-tensor scaling) | mxfp8 | fp4 (NVFP4) (default bf16; a plan file's own)");
  cmd->add_flag("--allow-oom", o->allow_oom, "write the plan even when it does not fit device memory");
  cmd->add_flag("--onnx", o->onnx, "also write the sharded program: stage_<k>.onnx, emulation.onnx, manifest.json "
                                   "(every dim must be bound; check it with `symtensor verify`)");
  cmd->add_option("--export", o->export_to, "also write the plan for a training framework: megatron | nemo | torchtitan | "
                                            "deepspeed | dtensor | jax (see `symtensor export`); the search stays inside "
                                            "what it runs as written");
  add_unbounded_option(cmd, o->unbounded, "--export target (else the --stack framework)");
  cmd->add_option("-o,--output", o->out, "output directory (created if missing)")->required();
  cmd->callback([o]() { run_compile(*o); });
}

}  // namespace symtensor::driver
