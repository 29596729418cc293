#include "compiler/cost/model_state.h"

#include <algorithm>

namespace symtensor::compiler::analyzer_internal {

StateBytes model_state_bytes(const hardware::StackMemory& m, int zero_stage, double n) {
  const double optimizer = m.master_weights + m.optimizer;
  switch (zero_stage) {
    case 0: return {m.weights, m.gradients, optimizer};
    case 1: return {m.weights, m.gradients, optimizer / n};
    case 2: return {m.weights, m.gradients / n, optimizer / n};
    default: return {m.weights / n, m.gradients / n, optimizer / n};
  }
}

void add_working_buffers(StageMemory& m, const OpWork& w) {
  if (w.buffer_bytes > m.working_buffers) m.working_buffers = w.buffer_bytes, m.working_buffers_node = w.node;
}

void add_model_state(StageMemory& m, const hardware::StackMemory& stack, double local_elements, int zero, double ways,
                     double extra_weight_bytes) {
  const StateBytes b = model_state_bytes(stack, zero, ways);
  m.parameters += local_elements * (b.params + (zero >= 3 ? extra_weight_bytes / ways : extra_weight_bytes));
  m.gradients += local_elements * b.grads;
  m.optimizer += local_elements * b.optimizer;
}

double optimizer_seconds(const std::vector<StageMemory>& memory, double hbm_bandwidth) {
  double slowest = 0;
  for (const StageMemory& m : memory) slowest = std::max(slowest, 2 * (m.parameters + m.gradients + m.optimizer) / hbm_bandwidth);
  return slowest;
}

double micro_batches_in_flight(const Plan& plan, int s) {
  const int stages = plan.pipeline_stages();
  const int m = plan.micro_batches;
  switch (plan.schedule) {
    case Schedule::gpipe: return m;
    case Schedule::one_f_one_b: return std::min(m, stages - s);
    case Schedule::interleaved_1f1b: {
      // Megatron-LM's interleaved schedule warms up with 2(p-s-1) + (v-1)p chunk
      // forwards before its first backward, and holds one more chunk in steady state. The
      // mean chunk's worth: the analysis counts a stage's chunks one by one where it can
      // (Analyzer::chunked_in_flight); this is for a step the schedule cannot run (micro-
      // batches not a multiple of the stages).
      const int v = std::max(plan.virtual_stages, 1);
      const int chunks = std::min(m * v, 2 * (stages - s - 1) + (v - 1) * stages + 1);
      return static_cast<double>(chunks) / v;
    }
  }
  return m;
}

}  // namespace symtensor::compiler::analyzer_internal
