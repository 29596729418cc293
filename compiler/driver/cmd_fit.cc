// symtensor fit MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G] [--bind batch=..,seq=..]
//   [--strategy symtensor] [--only micro-batch|sequence|devices] [--seq-step 64] [--stack S [--unbounded]]
// What fits: the largest micro-batch, the longest sequence and the fewest devices for which
// a plan fits, each with the fastest plan there and the next value, which does not fit
// (compiler/search/fit_search.h). --stack T bounds every query to the plans T runs as written,
// as on `compile` (bound_search); --unbounded lifts it.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/onnx_import/import.h"
#include "compiler/report/plan_label.h"
#include "compiler/report/results.h"
#include "compiler/base/units.h"
#include "compiler/search/fit_search.h"

namespace symtensor::driver {
namespace {

struct FitOptions {
  ModelChoice input;
  std::string strategy = "symtensor", only, mode, precision;
  ClusterChoice cluster;
  int seq_step = 64;
  bool unbounded = false;
  const CLI::Option* stack = nullptr;
  std::optional<double> moe_load;  // --moe-load-imbalance
};

std::string plan_text(const compiler::FitPlan& p) {
  const std::string impractical = compiler::describe_impractical_step(p.step_time_s);
  return fmt::format("{}: {} per step{}, {}, MFU {}, peak {} of {}", p.label, compiler::format_seconds(p.step_time_s),
                     impractical.empty() ? "" : " (" + impractical + ")",
                     compiler::format_throughput(p.samples_per_s, p.tokens_per_sample), compiler::format_percent(p.mfu),
                     compiler::format_bytes(p.peak_memory), compiler::format_bytes(p.capacity));
}

// "1 device", "8 devices" (`unit` is the plural).
std::string count_of(double value, const std::string& unit) {
  return fmt::format("{} {}", value, value == 1 ? unit.substr(0, unit.size() - 1) : unit);
}

void print(const std::string& what, const compiler::FitAnswer& a, const std::string& unit, bool smallest) {
  if (!a.found) {
    std::cout << fmt::format("{:<18}none fits{}\n", what,
                             a.next > 0 ? fmt::format(" (at {}: {})", count_of(a.next, unit), plan_text(a.next_plan)) : "");
    return;
  }
  std::cout << fmt::format("{:<18}{}  [{}]\n", what, count_of(a.value, unit), plan_text(a.plan));
  if (a.next > 0)
    std::cout << fmt::format("{:<18}{} does not fit: least memory {} ({})\n", "", count_of(a.next, unit),
                             compiler::format_bytes(a.next_plan.peak_memory), a.next_plan.label);
  else if (!smallest)
    std::cout << fmt::format("{:<18}(the search limit fits)\n", "");
}

void run_fit(const FitOptions& o) {
  if (!o.only.empty() && o.only != "micro-batch" && o.only != "sequence" && o.only != "devices")
    throw std::runtime_error("--only: expected micro-batch, sequence or devices, got '" + o.only + "'");
  if (o.seq_step < 1) throw std::runtime_error("--seq-step: expected a positive number of tokens");
  const hardware::Cluster cluster = load_cluster(o.cluster);
  compiler::FitQuery q;
  q.model = o.input.path;
  q.bind = o.input.bind;
  q.fusion.attention = compiler::parse_attention_mode(o.input.attention.empty() ? "fused" : o.input.attention);
  q.batch_dim = o.input.batch_dim;
  q.sequence_dim = o.input.sequence_dim;
  q.strategy = o.strategy;
  q.options = strategy_options(o.mode, o.precision, "", "");
  q.options.moe_load_imbalance = o.moe_load;
  const auto bound = bound_search(q.options, "", o.stack->count() > 0, cluster.stack.name, o.unbounded);
  q.seq_step = o.seq_step;
  q.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  q.label = [](compiler::Graph& g, const compiler::Plan& plan, const hardware::Cluster& c) {
    return compiler::plan_label_or(plan.strategy, g, plan, c, plan.strategy);
  };
  (void)import_model(o.input, false);  // a bad model or binding fails before the search
  std::cout << fmt::format("{:<18}{}\n{:<18}{} ({})\n", "model", o.input.path, "cluster", cluster.name,
                           compiler::describe_devices(compiler::device_kinds(cluster)));
  if (bound) std::cout << fmt::format("{:<18}{}\n", "search", bound_text(*bound));
  if (o.only.empty() || o.only == "micro-batch")
    print("micro-batch", compiler::largest_micro_batch(q, cluster), "samples", false);
  if (o.only.empty() || o.only == "sequence") print("sequence", compiler::longest_sequence(q, cluster), "tokens", false);
  if (o.only.empty() || o.only == "devices") print("devices", compiler::fewest_devices(q, cluster), "devices", true);
}

}  // namespace

void add_fit_command(CLI::App& app) {
  auto o = std::make_shared<FitOptions>();
  CLI::App* cmd = app.add_subcommand("fit", "What fits: the largest micro-batch, the longest sequence, the fewest devices");
  cmd->add_option("model", o->input.path, "ONNX model file")->required();
  add_cluster_options(cmd, o->cluster);
  add_moe_load_option(cmd, o->moe_load);
  o->stack = cmd->get_option("--stack");
  add_unbounded_option(cmd, o->unbounded);
  add_model_options(cmd, o->input, "dim values, e.g. batch=64,seq=2048 (batch and seq for the sequence and device queries)");
  cmd->add_option("--strategy", o->strategy, "planner for the sequence and device queries (default symtensor)");
  cmd->add_option("--only", o->only, "micro-batch | sequence | devices (default: all three)");
  cmd->add_option("--seq-step", o->seq_step, "granularity of the sequence answer in tokens (default 64)");
  cmd->add_option("--mode", o->mode, "train | infer (default train)");
  cmd->add_option("--precision", o->precision, "fp32 | tf32 | fp16 | bf16 | fp8 (per-tensor scaling) | mxfp8 | fp4 (NVFP4) (default bf16)");
  cmd->callback([o]() { run_fit(*o); });
}

}  // namespace symtensor::driver
