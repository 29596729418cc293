#pragma once
// One level of the SymTensor search: the CutProblem of choosing, for every heavy operator,
// the loop to cut on one mesh axis, given the cuts chosen on the axes before it.
//
// Unary cost of a choice (seconds per step): the operator's forward and backward compute
// (roofline on its local FLOPs and bytes) times the micro-batches; the all-reduce of an
// activation input's gradient left partial by the cut (Megatron's f/g); the gradient
// synchronisation of a parameter the cut replicates (once per step); the all-reduce of
// a partial output no edge reduces (a graph output, or one only cheap operators read, such
// as the LM head's logits before the loss); plus memory_weight x the bytes the operator keeps per device
// (16 bytes per parameter element of mixed-precision Adam, its output activation).
// Edge cost: the redistribution on this axis between the producer's output layout and
// the consumer's wanted input layout, forward and backward (all-gather <-> reduce-
// scatter, all-reduce <-> nothing, all-to-all both ways, slice <-> all-gather), times the
// micro-batches, priced by hardware::collective_time on the axis' group.
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/plan/plan.h"
#include "compiler/search/cut_problem.h"
#include "compiler/search/folded_graph.h"
#include "hardware/cluster.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

struct LevelContext {
  const NumericGraph* ng = nullptr;
  const FoldedGraph* folded = nullptr;
  const hardware::Cluster* cluster = nullptr;
  const hardware::DeviceMesh* mesh = nullptr;
  hardware::Precision precision = hardware::Precision::bf16;
  bool train = true;
  double micro_batch = 1;   // samples per micro-batch (the batch dim's value)
  int micro_batches = 1;
  double memory_weight = 0; // seconds per byte kept per device
};

// `cuts[h]`: the cut of heavy operator h so far (sized to its loops). Choice 0 of every
// node is "no cut"; the others cut one loop that the axis divides (at the micro-batch)
// and that the propagation rules allow.
CutProblem build_level_problem(const LevelContext& ctx, int axis, const std::vector<NodeCut>& cuts);

// Applies a solution: the chosen loop of each operator gets `axis` appended.
void apply_level_solution(const CutProblem& problem, const std::vector<int>& choice, int axis, std::vector<NodeCut>& cuts);

}  // namespace symtensor::compiler
