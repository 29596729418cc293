#pragma once
// The order in which one pipeline stage runs its forward and backward units (one unit =
// one micro-batch through one model chunk) under GPipe, 1F1B and interleaved 1F1B.
#include <vector>

#include "compiler/plan/plan.h"

namespace symtensor::compiler {

struct PipelineUnit {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this device (virtual stage = chunk * stages + stage)
  friend bool operator==(const PipelineUnit&, const PipelineUnit&) = default;
};

// Units of `stage` (0-based of `stages`), every (micro-batch, chunk) once forward and once
// backward, forward before backward. Interleaved 1F1B follows Megatron-LM's order (warm-up
// of 2·(p−s−1) + (v−1)·p units, micro-batches in groups of p) and needs micro_batches to be
// a multiple of stages; it is plain 1F1B when chunks == 1. Throws on bad sizes.
std::vector<PipelineUnit> pipeline_order(Schedule schedule, int stages, int stage, int micro_batches, int chunks);

}  // namespace symtensor::compiler
