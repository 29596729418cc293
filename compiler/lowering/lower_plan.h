#pragma once
// Plan -> the simulator's step program. One rank class per pipeline stage: under SPMD every
// rank of a stage (its data- and tensor-parallel replicas) does the same work, so the
// simulator plays one of them in symmetric mode and all of them in full mode
// (sim::SimMode::full) from this same program.
//
// Per micro-batch and stage, in the pipeline schedule's order (GPipe, 1F1B, interleaved
// 1F1B): activation alloc, receive from the previous stage, forward compute blocks with the
// tensor-parallel / redistribution collectives between them on stream "comm_tp" (on the
// critical path), send to the next stage; backward: receive the gradient, recompute the
// forward when the plan recomputes, backward blocks and their collectives, free, send back.
// ZeRO-3 parameter all-gathers run on "comm_zero" one block ahead of their use. Under
// Plan::moe_comm_overlap the expert all-to-alls run on "comm_ep" beside the compute, and a
// pass ends when they have. Gradient
// buckets run on "comm_dp" during the last micro-batch's backward (or after it, without
// overlap), then the optimizer step (and, under ZeRO-1/2 or a distributed optimizer, the
// all-gather of the updated parameter shards). Point-to-point traffic uses "p2p_send" and
// one "p2p_recv.stageK" stream per peer.
#include "compiler/cost/plan_analysis.h"
#include "compiler/lowering/chunk_work.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"
#include "hardware/device_mesh.h"
#include "simulator/program/lean_program.h"
#include "simulator/program/program.h"

namespace symtensor::compiler {

// Throws std::runtime_error (one line) when the analysis does not fit the plan (stages,
// collectives over the pipeline axis or unknown axes, interleaving with a micro-batch count
// that is not a multiple of the stages).
sim::Program lower_plan(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                        const hardware::DeviceMesh& mesh, const LoweringOptions& options = {});

// The same program in the simulator's lean form, without task ids (the searches simulate
// it: sim::simulate(LeanProgram) gives the same result as lower_plan's program).
sim::LeanProgram lower_plan_lean(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                                 const hardware::DeviceMesh& mesh, const LoweringOptions& options = {});

// The rank class name of pipeline stage `stage`.
std::string stage_class_name(int stage);

}  // namespace symtensor::compiler
