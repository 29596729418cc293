// symtensor export PLAN.yaml --model MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G]
//   [--bind batch=..,seq=..] --to megatron|nemo|torchtitan|deepspeed|dtensor|jax -o FILE
// Reads a plan and writes the launch arguments / config of a training framework that
// reproduce it (compiler/export/export.h); what the target cannot express is listed one line
// per item, and the nearest expressible plan is written beside (FILE.nearest.yaml) with its
// predicted step time next to the original's.
#include <filesystem>
#include <iostream>
#include <memory>

#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/export/export.h"
#include "compiler/plan/plan_yaml.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct ExportOptions {
  ModelChoice input;
  std::string plan, to, out;
  ClusterChoice cluster;
};

void run_export(const ExportOptions& o) {
  const compiler::ExportTarget target = compiler::parse_export_target(o.to);
  const std::filesystem::path out(o.out);
  sim::check_output_dir(out.has_parent_path() ? out.parent_path().string() : ".", "-o");
  const hardware::Cluster cluster = load_cluster(o.cluster);
  compiler::Graph graph = import_model(o.input, false);
  const compiler::Plan plan = compiler::read_plan_yaml(o.plan, graph, cluster);
  const compiler::ExportResult result = compiler::export_plan(target, graph, cluster, plan);
  compiler::write_export(result, o.out);
  std::cout << compiler::export_summary(result, o.out);
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "Write a plan as a training framework's launch arguments or config");
  cmd->add_option("plan", o->plan, "plan.yaml (from `compile`)")->required();
  cmd->add_option("--model", o->input.path, "the ONNX model the plan was made for")->required();
  add_cluster_options(cmd, o->cluster);
  add_model_options(cmd, o->input, "dim values as given to compile, e.g. batch=512,seq=2048");
  cmd->add_option("--to", o->to, "megatron | nemo | torchtitan | deepspeed | dtensor | jax")->required();
  cmd->add_option("-o,--output", o->out, "the config file to write")->required();
  cmd->callback([o]() { run_export(*o); });
}

}  // namespace symtensor::driver
