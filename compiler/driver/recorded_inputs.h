#pragma once
// The command-line choices plan.yaml records (compiler/plan/plan_inputs.h), and how
// `export` takes them back with its own options over them.
#include <string>

#include "compiler/driver/command_setup.h"
#include "compiler/plan/plan_inputs.h"

namespace symtensor::driver {

// compile: what it was given, paths absolute, the model's checksum taken.
compiler::PlanInputs recorded_inputs(const ModelChoice& model, const ClusterChoice& cluster, const hardware::Cluster& loaded);

// Which of export's options the command line gave (the rest come from the plan).
struct GivenOptions {
  bool model = false, cluster = false, nodes = false, gpus = false, stack = false, headroom = false;
  bool bind = false, attention = false, batch_dim = false, seq_dim = false;
};

// The model and cluster to export for: the plan's recorded inputs, each given option over
// its entry with a one-line notice on stderr where they differ. Throws a one-line error
// naming the plan file when it records nothing the command line lacks, or when the
// recorded model is missing or has changed since (its SHA-256) and --model is not given.
void merge_recorded_inputs(const std::string& plan_path, const GivenOptions& given, ModelChoice& model, ClusterChoice& cluster);

// simulate/compile --plan: the stack, headroom and --bind the plan was made for unless the
// command line gives them (a notice where it gives other stack or headroom values, or binds
// a dim other than the batch to another value), and a notice when --cluster names another
// profile than the plan's. Plans without recorded inputs change nothing.
GivenOptions given_software(const CLI::Option* stack, const CLI::Option* headroom, const CLI::Option* cluster);
void take_recorded_software(const std::string& plan_path, const GivenOptions& given, ClusterChoice& cluster, ModelChoice& model);

}  // namespace symtensor::driver
