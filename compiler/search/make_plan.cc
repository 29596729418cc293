// make_plan: the dispatcher lives above the searches it names (compiler/README.md's ladder).
#include "compiler/search/make_plan.h"

#include <stdexcept>
#include <string>

#include "compiler/plan/plan_yaml.h"
#include "compiler/search/fleet_search.h"
#include "compiler/search/ilp_search.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/data_parallel.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

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
    Plan plan = read_plan_yaml(options.plan_file, graph, cluster);
    if (options.moe_load_imbalance) plan.moe_load_imbalance = *options.moe_load_imbalance;
    return plan;
  }
  if (strategy == "symtensor") return make_symtensor_plan(graph, cluster, options);
  if (strategy == "ilp") return make_ilp_plan(graph, cluster, options);
  std::string known;
  for (const auto& name : strategy_names()) known += (known.empty() ? "" : ", ") + name;
  throw std::runtime_error("unknown strategy '" + strategy + "' (known: " + known + ")");
}

}  // namespace symtensor::compiler
