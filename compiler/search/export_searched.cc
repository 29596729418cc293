#include "compiler/search/export_searched.h"

#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

ExportResult export_plan(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan,
                         const Plan* inside) {
  return export_plan_with(target, graph, cluster, plan, [&]() -> Plan {
    if (inside) return *inside;
    StrategyOptions options;
    options.mode = plan.mode;
    options.precision = plan.precision;
    options.moe_load_imbalance = plan.moe_load_imbalance;  // the nearest plan priced at the same load
    options.bound = target;
    return make_plan("symtensor", graph, cluster, options);
  });
}

}  // namespace symtensor::compiler
