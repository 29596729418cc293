#pragma once
// The set-up that the planning commands share: which cluster (a profile scaled by --nodes
// and --gpus), the model imported with its --bind values, and the strategy options
// (--mode, --precision, --megatron, --plan).
#include <optional>
#include <string>
#include <vector>

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

// `--without K node` (or `K nodes`, or `K GROUP`: K nodes of that group of a mixed fleet): the
// cluster without K failed nodes (hardware::without_nodes; on a fleet, by default from the
// group with the most nodes). Throws one line naming the flag ("--without 5 node: cluster
// 'dgx-h100' has 4 nodes; ...") on bad input.
hardware::Cluster cluster_without(const hardware::Cluster& cluster, const std::vector<std::string>& without);
// The K of --without's tokens (checked as cluster_without does).
int nodes_lost(const std::vector<std::string>& without);

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

// The bound of the searches (issue #30), shared by compile, sweep, fit and compare: the target
// `export_to` names (compile --export) when given, else the framework of the stack when --stack
// was given (`stack_given`; compiler::stack_export_target of `stack_name`, the loaded stack's
// name); none otherwise. It is set as StrategyOptions::bound (the symtensor and megatron
// strategies return the fastest plan the target runs as written), or with `unbounded` as
// StrategyOptions::target_seed (every plan searched, the fastest inside priced among them).
// Returns the bound set (none when unbounded).
std::optional<compiler::ExportTarget> bound_search(compiler::StrategyOptions& options, const std::string& export_to,
                                                    bool stack_given, const std::string& stack_name, bool unbounded);
// --unbounded, for the commands whose search --stack bounds; `target` names what bounds it.
void add_unbounded_option(CLI::App* cmd, bool& unbounded, const std::string& target = "--stack framework");
// The line the commands print when their search is bounded: "inside T: the fastest plan it runs ...".
std::string bound_text(compiler::ExportTarget target);

// --moe-load-imbalance F (StrategyOptions::moe_load_imbalance): the busiest expert rank's
// routed tokens over the mean, >= 1 (compiler/cost/moe_load.h); checked as CLI11 reads it.
void add_moe_load_option(CLI::App* cmd, std::optional<double>& imbalance);

// Strategy options from the command line; an empty mode or precision means train, bf16.
compiler::StrategyOptions strategy_options(const std::string& mode, const std::string& precision,
                                           const std::string& megatron, const std::string& plan_file);

}  // namespace symtensor::driver
