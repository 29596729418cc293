// symtensor export PLAN.yaml --to megatron|nemo|torchtitan|deepspeed|dtensor|jax -o FILE
//   [--model MODEL.onnx] [--cluster PROFILE] [--nodes N] [--gpus G] [--stack S] [--bind ..]
// Reads a plan and writes the launch arguments / config of a training framework that
// reproduce it (compiler/export/export.h); what the target cannot express is listed one line
// per item, and the nearest expressible plan (the fastest the target runs as written, searched
// as `compile --stack T` searches, or the plan adjusted item by item where that is better) is
// written beside (FILE.nearest.yaml) with its predicted step time next to the original's. The model, cluster, stack and bindings come
// from the plan's recorded inputs; an option given here wins, with a notice where it differs.
#include <filesystem>
#include <iostream>
#include <memory>

#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/recorded_inputs.h"
#include "compiler/export/export.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/export_searched.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct ExportOptions {
  ModelChoice input;
  std::string plan, to, out;
  ClusterChoice cluster;
  // The options whose presence decides between the command line and the plan.
  CLI::Option *model = nullptr, *profile = nullptr, *nodes = nullptr, *gpus = nullptr, *stack = nullptr,
              *headroom = nullptr, *bind = nullptr, *attention = nullptr, *batch_dim = nullptr, *seq_dim = nullptr;
};

void run_export(ExportOptions o) {
  const compiler::ExportTarget target = compiler::parse_export_target(o.to);
  const std::filesystem::path out(o.out);
  sim::check_output_dir(out.has_parent_path() ? out.parent_path().string() : ".", "-o");
  const auto given = [](const CLI::Option* opt) { return opt && opt->count() > 0; };
  merge_recorded_inputs(o.plan,
                        {given(o.model), given(o.profile), given(o.nodes), given(o.gpus), given(o.stack), given(o.headroom),
                         given(o.bind), given(o.attention), given(o.batch_dim), given(o.seq_dim)},
                        o.input, o.cluster);
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
  o->model = cmd->add_option("--model", o->input.path, "the ONNX model (default: the one the plan records)");
  o->profile = cmd->add_option("--cluster", o->cluster.profile, "cluster profile (default: the plan's)");
  o->nodes = cmd->add_option("--nodes", o->cluster.nodes, "number of nodes (default: the plan's)");
  o->gpus = cmd->add_option("--gpus", o->cluster.gpus, "GPUs used in each node (default: the plan's)");
  add_software_options(cmd, o->cluster.software);
  o->stack = cmd->get_option("--stack");
  o->headroom = cmd->get_option("--memory-headroom");
  add_model_options(cmd, o->input, "dim values as given to compile, e.g. batch=512,seq=2048 (default: the plan's)");
  o->bind = cmd->get_option("--bind");
  o->attention = cmd->get_option("--attention");
  o->batch_dim = cmd->get_option("--batch-dim");
  o->seq_dim = cmd->get_option("--seq-dim");
  cmd->add_option("--to", o->to, "megatron | nemo | torchtitan | deepspeed | dtensor | jax")->required();
  cmd->add_option("-o,--output", o->out, "the config file to write")->required();
  cmd->callback([o]() { run_export(*o); });
}

}  // namespace symtensor::driver
