#include "compiler/strategies/strategy.h"

#include <stdexcept>

#include "compiler/onnx_import/import.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/ilp_search.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/data_parallel.h"
#include "compiler/strategies/megatron.h"

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

Plan make_plan(const std::string& strategy, Graph& graph, const hardware::Cluster& cluster,
               const StrategyOptions& options) {
  if (strategy == "dp") return make_data_parallel_plan(graph, cluster, options, 0);
  if (strategy == "zero3") return make_data_parallel_plan(graph, cluster, options, 3);
  // A mixed fleet: Megatron-best as issue #32 defines it (its fastest group alone or every GPU
  // at the slowest pace), and the search that places layers by speed. A plan on one group
  // alone names that group's cluster (Plan::cluster).
  if (cluster.mixed() && strategy == "megatron" && options.megatron.empty())
    return megatron_fleet_best(graph, cluster, options).best().plan;
  if (cluster.mixed() && strategy == "symtensor") return fleet_search(graph, cluster, options).plan.plan;
  if (strategy == "megatron") return make_megatron_best_plan(graph, cluster, options);
  if (strategy == "file") {
    if (options.plan_file.empty()) throw std::runtime_error("strategy 'file' needs a plan file (--plan plan.yaml)");
    return read_plan_yaml(options.plan_file, graph, cluster);
  }
  if (strategy == "symtensor") return make_symtensor_plan(graph, cluster, options);
  if (strategy == "ilp") return make_ilp_plan(graph, cluster, options);
  std::string known;
  for (const auto& name : strategy_names()) known += (known.empty() ? "" : ", ") + name;
  throw std::runtime_error("unknown strategy '" + strategy + "' (known: " + known + ")");
}

}  // namespace symtensor::compiler
