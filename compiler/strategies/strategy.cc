#include "compiler/strategies/strategy.h"

#include <stdexcept>

#include "compiler/onnx_import/import.h"

namespace symtensor::compiler {

std::vector<std::string> strategy_names() { return {"symtensor", "megatron", "dp", "zero3", "ilp", "file"}; }

Plan plan_skeleton(const std::string& strategy, const Graph& graph, const hardware::Cluster& cluster,
                   const StrategyOptions& options) {
  Plan plan;
  plan.strategy = strategy;
  plan.model = graph.source;
  plan.cluster = cluster.name;
  plan.stack = cluster.stack.name;
  plan.mode = options.mode;
  plan.precision = options.precision;
  plan.moe_load_imbalance = options.moe_load_imbalance.value_or(1);
  if (graph.batch_dim.empty()) {
    const auto why = graph.metadata.find(kStaticBatchMetadataKey);
    throw std::runtime_error(strategy + ": '" + graph.source + "' has no batch dim: " +
                             (why != graph.metadata.end() ? why->second
                                                          : std::string("its inputs have no symbolic leading dim")) +
                             "; export it with a dynamic batch, or name the dim with --batch-dim NAME");
  }
  const auto batch = graph.symbols.bindings().find(graph.batch_dim);
  if (batch == graph.symbols.bindings().end())
    throw std::runtime_error(strategy + ": the batch dim '" + graph.batch_dim + "' of '" + graph.source +
                             "' is not bound (use --bind " + graph.batch_dim + "=N)");
  plan.global_batch = batch->second;
  return plan;
}

}  // namespace symtensor::compiler
