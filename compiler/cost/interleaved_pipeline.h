#pragma once
// What an interleaved 1F1B pipeline holds and sends, as the lowering runs it.
//
// The activations a stage holds at its peak, chunk by chunk.
// A device runs v model chunks: its stage's operators, in order, split into v chunks of equal
// forward FLOPs (chunk_of; the lowering places them so). The chunks in flight at the peak are
// not an even mix of the v: the last stage's last chunk holds the LM head's saved tensors, and
// Megatron-LM's order warms up with the first chunks. The mean chunk times the chunks in flight
// under-counts such a stage, so the peak is taken over the stage's units in their order.
#include <vector>

#include "compiler/cost/plan_analysis.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {

// Per operator (in order), where the midpoint of its forward FLOPs lies in its stage's
// (OpWork::stage) operators before it: 0..1, 0 on a stage without FLOPs.
std::vector<double> forward_flops_fractions(const std::vector<OpWork>& ops, int stages);

// The chunk (0..chunks-1) of an operator at `fraction` of its stage's forward FLOPs.
int chunk_of(double fraction, int chunks);

// An operator that saves activations for backward: where it lies in its stage (chunk_of's
// fraction) and the bytes it saves per micro-batch.
struct SavedPosition {
  double fraction = 0;
  double bytes = 0;
};

// Per chunk, the bytes its operators save per micro-batch.
std::vector<double> chunk_activations(const std::vector<SavedPosition>& saved, int chunks);

// The most bytes of saved activations stage `stage` holds at once under `plan`'s interleaved
// 1F1B order (pipeline_order): each unit's chunk allocated when its forward starts, freed when
// its backward ends, as the simulation runs them. `chunk_bytes` per chunk, per micro-batch.
double interleaved_peak_activations(const Plan& plan, int stage, const std::vector<double>& chunk_bytes);

// Bytes stage `stage` (of p_bytes.size() + 1) sends to the next virtual stage per micro-batch,
// from the bytes crossing each stage boundary (PlanAnalysis::p2p_bytes): its boundary's, and the
// last stage's (interleaved: to the first stage's next chunk) the mean of the boundaries.
double stage_send_bytes(const std::vector<double>& p2p_bytes, int stage);

}  // namespace symtensor::compiler
