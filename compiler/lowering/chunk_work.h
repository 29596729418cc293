#pragma once
// The per-device work of one model chunk (the operators of one pipeline stage, or of one
// virtual stage under interleaving), cut into the pieces the step program is made of:
// compute blocks (consecutive operators merged until a collective, a ZeRO gather or a
// new layer), the collectives between them, and the data-parallel gradient buckets.
#include <string>
#include <vector>

#include "compiler/cost/plan_analysis.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {

struct LoweringOptions {
  double bucket_bytes = 25e6;     // gradient bucket size (PyTorch DDP's default 25 MB)
  bool overlap_grad_sync = true;  // false: Megatron's "local DDP", gradients reduced after backward
  const Graph* graph = nullptr;   // optional: node names split compute at layer boundaries and map
                                  // parameters to the operators that use them
  // Optional, per pipeline stage: an analysis of the same plan on the device that stage runs
  // on (a mixed fleet's group; nullptr: the lowered analysis), from which its compute blocks
  // and optimizer step take their durations.
  std::vector<const PlanAnalysis*> stage_timing;
  // Optional, per group of a mixed fleet, for a plan with batch shares (Plan::group_micro_batches,
  // whose classes are per stage and group): the analysis timing that group's classes (nullptr:
  // the lowered analysis).
  std::vector<const PlanAnalysis*> group_timing;
};

struct Segment {
  enum class Kind { compute, collective, gather };
  Kind kind = Kind::compute;
  double flops = 0, bytes = 0, seconds = 0;  // compute: merged operators' local work
  CommOp comm;                                // collective / gather
  std::string label;                          // layer of the block ("h.3") when known
};

struct GradBucket {
  int after_segment = -1;     // backward segment whose end makes its gradients ready (-1: chunk end)
  std::vector<CommOp> syncs;  // one per (collective, mesh axes), bytes summed
};

struct ChunkWork {
  std::vector<Segment> forward, recompute, backward;
  std::vector<GradBucket> buckets;
  bool every_micro_batch_syncs = false;  // some bucket's collective runs each micro-batch (CommOp::every_micro_batch)
  std::vector<CommOp> param_syncs;  // every parameter's regather, merged (ZeRO-1/2: after the optimizer)
  double saved_bytes = 0;           // activations kept per micro-batch
  double forward_flops = 0, backward_flops = 0, recompute_flops = 0;  // per micro-batch
};

struct StageLayout {
  int stages = 1, chunks = 1;
  std::vector<std::vector<ChunkWork>> work;  // [stage][chunk]
  // Virtual stage v (0 .. stages*chunks-1) runs on stage v % stages as chunk v / stages.
  int virtual_stage(int stage, int chunk) const { return chunk * stages + stage; }
};

// Assigns operators to (stage, chunk): OpWork::stage is the virtual stage when it reaches
// past the pipeline size, otherwise each stage's operators are split into `virtual_stages`
// chunks of equal forward FLOPs.
StageLayout build_stage_layout(const PlanAnalysis& analysis, const Plan& plan, const LoweringOptions& options);


}  // namespace symtensor::compiler
