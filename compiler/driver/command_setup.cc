#include "compiler/driver/command_setup.h"

#include <stdexcept>

#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "compiler/onnx_import/import.h"
#include "hardware/cluster_loss.h"
#include "hardware/names.h"

namespace symtensor::driver {

void add_cluster_options(CLI::App* cmd, ClusterChoice& choice) {
  cmd->add_option("--cluster", choice.profile, "cluster profile (see `hardware list`), NAMExNODES or a .yaml path")
      ->required();
  cmd->add_option("--nodes", choice.nodes, "number of nodes (size of the outermost level)");
  cmd->add_option("--gpus", choice.gpus, "GPUs used in each node");
  add_software_options(cmd, choice.software);
}

void add_software_options(CLI::App* cmd, hardware::Software& software) {
  cmd->add_option("--stack", software.stack,
                  "the software that runs the plan: megatron (default), torchtitan, deepspeed, jax or a .yaml path "
                  "(its memory conventions and kernel speed; hardware/stacks/README.md)")
      ->transform([](std::string name) {  // a bundled name in any case is that stack, as recorded and compared
        const std::string bundled = hardware::name_in_any_case(name, hardware::list_stacks());
        return bundled.empty() ? name : bundled;
      });
  cmd->add_option("--memory-headroom", software.memory_headroom,
                  "share of device memory a plan leaves free, beside the profile's reserve (default 0.05)");
}

hardware::Cluster load_cluster(const ClusterChoice& choice) {
  return hardware::with_software(hardware::scale_cluster(hardware::load_cluster(choice.profile), choice.nodes, choice.gpus),
                                 choice.software);
}

namespace {

std::string without_text(const std::vector<std::string>& without) {
  std::string text;
  for (const std::string& t : without) text += (text.empty() ? "" : " ") + t;
  return "--without " + text;
}

}  // namespace

int nodes_lost(const std::vector<std::string>& without) {
  const std::string flag = without_text(without);
  if (without.size() != 2) throw std::runtime_error(flag + ": expected a count and 'node' (--without 1 node)");
  std::size_t used = 0;
  int k = -1;
  try {
    k = std::stoi(without[0], &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != without[0].size() || k < 1)
    throw std::runtime_error(flag + ": expected a positive count of nodes (--without 1 node)");
  return k;
}

hardware::Cluster cluster_without(const hardware::Cluster& cluster, const std::vector<std::string>& without) {
  const int k = nodes_lost(without);
  const std::string& unit = without[1];
  const std::string group = unit == "node" || unit == "nodes" ? "" : unit;
  try {
    return hardware::without_nodes(cluster, k, group);
  } catch (const std::exception& e) {
    throw std::runtime_error(without_text(without) + ": " + e.what());
  }
}

void add_attention_option(CLI::App* cmd, std::string& attention) {
  cmd->add_option("--attention", attention,
                  "attention as a fused kernel (FlashAttention: no score tensor, backward recomputes) or "
                  "materialized as written (MatMul, Softmax, MatMul)")
      ->check(CLI::IsMember({"fused", "materialized"}))
      ->default_val("fused");
}

void add_model_options(CLI::App* cmd, ModelChoice& choice, const std::string& bind_help) {
  cmd->add_option("--bind", choice.bind, bind_help);
  add_attention_option(cmd, choice.attention);
  add_dim_options(cmd, choice.batch_dim, choice.sequence_dim);
}

void add_dim_options(CLI::App* cmd, std::string& batch_dim, std::string& sequence_dim) {
  cmd->add_option("--batch-dim", batch_dim,
                  "the input dim that is the batch (default: `batch`, else the inputs' leading symbolic dim)");
  cmd->add_option("--seq-dim", sequence_dim, "the dim that is the sequence, tokens per sample (default: `seq`)");
}

compiler::Graph import_model(const ModelChoice& choice, bool warn_opaque) {
  compiler::ImportOptions options;
  options.bindings = compiler::parse_bindings(choice.bind);
  options.warn_opaque = warn_opaque;
  options.fusion.attention = compiler::parse_attention_mode(choice.attention.empty() ? "fused" : choice.attention);
  options.batch_dim = choice.batch_dim;
  options.sequence_dim = choice.sequence_dim;
  return compiler::import_onnx_file(choice.path, options);
}

std::string implied_strategy(const std::string& strategy, const std::string& megatron, const std::string& command) {
  if (megatron.empty()) return strategy;
  if (strategy.empty() || strategy == "megatron") return "megatron";
  throw std::runtime_error(command + ": --megatron knobs need --strategy megatron (they imply it when --strategy is not given)");
}

std::optional<compiler::ExportTarget> bound_search(compiler::StrategyOptions& options, const std::string& export_to,
                                                    bool stack_given, const std::string& stack_name, bool unbounded) {
  std::optional<compiler::ExportTarget> target;
  if (!export_to.empty()) target = compiler::parse_export_target(export_to);
  else if (stack_given) target = compiler::stack_export_target(stack_name);
  (unbounded ? options.target_seed : options.bound) = target;
  return unbounded ? std::nullopt : target;
}

void add_unbounded_option(CLI::App* cmd, bool& unbounded, const std::string& target) {
  cmd->add_flag("--unbounded", unbounded, "search every plan, not only those the " + target + " runs as written");
}

std::string bound_text(compiler::ExportTarget target) {
  return fmt::format("inside {}: the fastest plan it runs as written (--unbounded: every plan)", compiler::to_string(target));
}

void add_moe_load_option(CLI::App* cmd, std::optional<double>& imbalance) {
  cmd->add_option("--moe-load-imbalance", imbalance,
                  "MoE routing load: the busiest expert-parallel rank's routed tokens over the mean (default 1, "
                  "token-count balanced); dropless routing prices that rank's expert work, exchanges and memory, "
                  "capacity routing reports the tokens it drops")
      ->check([](const std::string& text) {
        try {
          std::size_t used = 0;
          const double f = std::stod(text, &used);
          if (used != text.size()) return text + " is not a number";
          return compiler::moe_load_imbalance_problem(f);
        } catch (const std::invalid_argument&) {
          return text + " is not a number";
        } catch (const std::out_of_range&) {
          return text + " is out of range";
        }
      });
}

compiler::StrategyOptions strategy_options(const std::string& mode, const std::string& precision,
                                           const std::string& megatron, const std::string& plan_file) {
  compiler::StrategyOptions options;
  options.mode = compiler::parse_execution_mode(mode.empty() ? "train" : mode);
  const auto parsed = hardware::parse_precision(precision.empty() ? "bf16" : precision);
  if (!parsed) throw std::runtime_error("--precision: unknown precision '" + precision + "'");
  options.precision = *parsed;
  options.megatron = megatron;
  options.plan_file = plan_file;
  return options;
}

}  // namespace symtensor::driver
