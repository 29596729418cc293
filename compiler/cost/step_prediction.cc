#include "compiler/cost/step_prediction.h"

namespace symtensor::compiler {

PlanPrediction plan_prediction(const StepEstimate& step) {
  PlanPrediction prediction;
  prediction.step_time_s = step.step_time_s;
  prediction.samples_per_s = step.samples_per_s;
  prediction.mfu = step.mfu;
  prediction.stage_peak_memory = step.stage_peak_memory;
  prediction.memory_capacity = step.memory_capacity;
  prediction.fits = step.fits;
  prediction.breakdown_s = {{"compute", step.compute_s},     {"exposed_comm", step.exposed_comm_s},
                            {"bubble", step.bubble_s},       {"dp_exposed", step.dp_exposed_s},
                            {"optimizer", step.optimizer_s}, {"p2p", step.p2p_s}};
  return prediction;
}

}  // namespace symtensor::compiler
