#pragma once
// A synthetic transformer training step (tensor x pipeline x data parallel) as a step
// program: per micro-batch forward/backward of each layer split in two halves, each
// followed by a tensor-parallel all-reduce; pipeline send/recv between stages; per-layer
// data-parallel gradient all-reduces overlapping the last backward; an optimizer task;
// activations allocated per micro-batch and freed after its backward. Used by tests, the
// benchmark and as a worked example of what the lowering produces.
#include "simulator/program/program.h"

namespace symtensor::sim {

enum class PipelineSchedule { gpipe, one_f_one_b };

struct SyntheticConfig {
  int tp = 1, pp = 1, dp = 1;
  int gpus_per_node = 8;
  int micro_batches = 1;
  int layers = 1;  // in all; must divide by pp
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  double layer_forward_flops = 1e12;  // per rank, per micro-batch; backward is twice
  double layer_forward_seconds = 0;   // when > 0, explicit durations instead of flops
  hardware::Precision precision = hardware::Precision::bf16;
  double tp_allreduce_bytes = 0;      // each of the 4 all-reduces per layer per micro-batch
  double p2p_bytes = 0;               // per micro-batch per stage boundary and direction
  double layer_grad_bytes = 0;        // data-parallel all-reduce per layer
  double layer_activation_bytes = 0;  // saved per layer per micro-batch
  double optimizer_seconds = 0;
  StaticMemory static_memory;
};

// Mesh axes: tp innermost on level 0, then the parts of dp and pp that still fit in a
// node ("dp_local", "pp_local"), then "pp" and "dp" on level 1. Rank class "stage<k>" holds
// the ranks of pipeline stage k.
Program synthetic_pipeline_program(const SyntheticConfig& config);

}  // namespace symtensor::sim
