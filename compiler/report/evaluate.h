#pragma once
// Make one strategy's plan and price it analytically, for compare and sweep: "symtensor"
// runs the SymTensor search, "megatron" without knobs Megatron-LM's best-configuration
// search (compiler/search/), anything else goes through make_plan.
#include <string>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

struct EvaluatedPlan {
  std::string label;         // plan_label: "megatron tp=8 dp=2 pp=2 cp=1 ep=1, 16 micro-batches of 2 samples"
  Plan plan;
  PlanAnalysis analysis;
  StepEstimate estimate;
  double search_time_s = 0;  // making the plan (the whole search), wall time
  int evaluations = 1;       // plans priced by the search
};

// Throws (one line) when no plan can be made.
EvaluatedPlan evaluate_strategy(const std::string& strategy, Graph& graph, const hardware::Cluster& cluster,
                                const StrategyOptions& options);

}  // namespace symtensor::compiler
