#pragma once
// A plan's model states and the memory bookkeeping around them, as the analysis of a plan
// (plan_analysis.h) counts them: the stack's bytes per parameter under each ZeRO stage, the
// largest working buffer, the optimizer's step, and the micro-batches a pipeline stage holds.
#include <vector>

#include "compiler/cost/plan_analysis.h"
#include "hardware/stack.h"

namespace symtensor::compiler::analyzer_internal {

// Bytes per parameter of mixed-precision Adam as the stack keeps them (hardware::StackMemory:
// Megatron 2 + 4 + 4 + 8, the ZeRO paper's DeepSpeed 2 + 2 + 4 + 8, FSDP2's fp32 shards
// 4 + 4 + 8), sharded over the data-parallel group N by ZeRO stage: 1 shards the master
// weights and the optimizer's moments, 2 also the gradients, 3 everything.
struct StateBytes {
  double params, grads, optimizer;
};
StateBytes model_state_bytes(const hardware::StackMemory& m, int zero_stage, double n);

// Keeps the larger of the stage's working buffer and the operator's.
void add_working_buffers(StageMemory& m, const OpWork& w);

// `extra_weight_bytes`: per element beside the stack's weights (FP8/FP4 copies), sharded as they are.
void add_model_state(StageMemory& m, const hardware::StackMemory& stack, double local_elements, int zero, double ways,
                     double extra_weight_bytes);

// Adam reads and writes weights, gradients and optimizer state once: bandwidth-bound. The
// slowest stage's step.
double optimizer_seconds(const std::vector<StageMemory>& memory, double hbm_bandwidth);

// Micro-batches' worth of activations stage s holds at its peak (StageMemory).
double micro_batches_in_flight(const Plan& plan, int s);

}  // namespace symtensor::compiler::analyzer_internal
