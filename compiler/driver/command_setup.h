#pragma once
// The set-up that the planning commands share: which cluster (a profile scaled by --nodes
// and --gpus), the model imported with its --bind values, and the strategy options
// (--mode, --precision, --megatron, --plan).
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "compiler/ir/graph.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::driver {

struct ClusterChoice {
  std::string profile;  // a name, NAMExNODES or a .yaml path
  std::optional<int> nodes, gpus;
  hardware::Software software;  // --stack, --memory-headroom
};

// --cluster (required), --nodes, --gpus, and the software options (add_software_options).
void add_cluster_options(CLI::App* cmd, ClusterChoice& choice);
// --stack and --memory-headroom.
void add_software_options(CLI::App* cmd, hardware::Software& software);
// The profile scaled, with the stack applied and the headroom set.
hardware::Cluster load_cluster(const ClusterChoice& choice);

// --attention fused|materialized (default fused): the fusion pass's attention mode.
void add_attention_option(CLI::App* cmd, std::string& attention);
// --batch-dim and --seq-dim: which of the model's dims are the batch and the sequence.
void add_dim_options(CLI::App* cmd, std::string& batch_dim, std::string& sequence_dim);

// How the model is read: --bind, --attention, --batch-dim, --seq-dim.
struct ModelChoice {
  std::string path, bind, attention, batch_dim, sequence_dim;
};
void add_model_options(CLI::App* cmd, ModelChoice& choice, const std::string& bind_help);
compiler::Graph import_model(const ModelChoice& choice, bool warn_opaque);


// The strategy a command runs: --strategy, or megatron when only --megatron knobs are given
// (they imply it); throws "COMMAND: --megatron knobs need --strategy megatron" when another
// strategy is named beside them. Empty when neither is given.
std::string implied_strategy(const std::string& strategy, const std::string& megatron, const std::string& command);

// Strategy options from the command line; an empty mode or precision means train, bf16.
compiler::StrategyOptions strategy_options(const std::string& mode, const std::string& precision,
                                           const std::string& megatron, const std::string& plan_file);

}  // namespace symtensor::driver
