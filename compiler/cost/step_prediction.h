#pragma once
// A step estimate as plan.yaml's `predicted` section.
#include "compiler/cost/step_estimate.h"
#include "compiler/plan/plan_yaml.h"

namespace symtensor::compiler {

PlanPrediction plan_prediction(const StepEstimate& step);

}  // namespace symtensor::compiler
