#pragma once
// export_plan: a plan exported to a training framework (compiler/export/export.h), its
// nearest expressible plan searched inside the target: the SymTensor search bounded by the
// target (StrategyOptions::bound, the search of `compile --stack T`) on the plan's own
// graph (model and bindings), cluster (profile, size, stack), mode and precision.
#include "compiler/export/export.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// `inside`: the fastest plan inside `target`, when the caller's search found it already
// (StrategyOptions::target_plan_out); otherwise the export searches for it where it needs it.
ExportResult export_plan(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan,
                         const Plan* inside = nullptr);

}  // namespace symtensor::compiler
