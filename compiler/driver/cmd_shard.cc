// `symtensor shard MODEL.onnx -o DIR --pp P --dp D --tp T [--sp]`: sharded ONNX files for a
// hand-built plan (compiler/rewrite/hand_plans.h), for checking the rewrite with
// `symtensor verify` before the plan generators exist. `--mutate` is test-only.
#include <iostream>
#include <memory>
#include <string>

#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/onnx_import/proto_reading.h"
#include "compiler/rewrite/hand_plans.h"
#include "compiler/rewrite/sharded_onnx.h"
#include "hardware/cluster.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct ShardOptions {
  ModelChoice input;
  std::string output, cluster = "dgx-a100", mutate = "none";
  compiler::HandPlanSpec spec;
};

void run_shard(const ShardOptions& o) {
  sim::check_output_dir(o.output, "-o");
  compiler::Graph graph = import_model(o.input, false);
  onnx::ModelProto original = compiler::read_model_file(o.input.path);
  compiler::inline_external_data(original, o.input.path);
  const int devices = o.spec.pipeline * o.spec.data * o.spec.tensor;
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster(o.cluster), 1, devices);
  const compiler::Plan plan = compiler::make_hand_plan(graph, cluster, o.spec);
  const auto summary = compiler::write_sharded_onnx(original, graph, plan, cluster, o.output,
                                                    compiler::parse_mutation(o.mutate));
  std::cout << "wrote " << summary.files.size() << " files to " << o.output << " (" << summary.stages << " stages, "
            << summary.collectives << " collectives):";
  for (const auto& f : summary.files) std::cout << " " << f;
  std::cout << "\n";
}

}  // namespace

void add_shard_command(CLI::App& app) {
  auto o = std::make_shared<ShardOptions>();
  CLI::App* cmd = app.add_subcommand("shard", "Write sharded ONNX files for a hand-built pipeline/data/tensor-parallel plan");
  cmd->add_option("model", o->input.path, "ONNX model")->required();
  cmd->add_option("-o,--output", o->output, "output directory")->required();
  cmd->add_option("--cluster", o->cluster, "cluster profile (one node of it is used)");
  cmd->add_option("--pp", o->spec.pipeline, "pipeline stages");
  cmd->add_option("--dp", o->spec.data, "data-parallel ways");
  cmd->add_option("--tp", o->spec.tensor, "tensor-parallel ways");
  cmd->add_flag("--sp", o->spec.sequence_parallel, "sequence parallelism over the tensor axis");
  add_model_options(cmd, o->input, "dim values, e.g. batch=2,seq=8 (every dim must be bound)");
  cmd->add_option("--mutate", o->mutate, "test-only wrong sharding: drop-all-reduce or wrong-weight-slice");
  cmd->callback([o] { run_shard(*o); });
}

}  // namespace symtensor::driver
