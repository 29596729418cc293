#pragma once
// A plan in words: its mesh, which loop dims of each kind of layer operator are cut over
// which mesh axes, and where its communication happens (per micro-batch collectives by
// layer operator, gradient synchronisation, ZeRO gathers, pipeline sends).
#include <string>
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct MeshAxisText {
  std::string name;
  int size = 1;
  std::string level;  // the topology level's name
  std::string role;   // "pipeline", "data", "tensor", "data+tensor", "unused"
};

// Operators of the same kind across layers ("h.*/attn/MatMul"), with the same cut.
struct LayerOpText {
  std::string pattern;    // node name with layer numbers replaced by '*'
  std::string op_type;
  int count = 0;
  std::string cut;        // "b->node; n->gpu" (loop name -> mesh axes), "replicated"
  std::string comm;       // collectives per micro-batch, fwd and bwd, or ""
  double comm_seconds = 0;  // per micro-batch, summed over the group
};

struct PlanExplanation {
  std::string summary;  // one line: "4 stages x 1F1B, 8 micro-batches, ZeRO-1, ..."
  std::vector<MeshAxisText> mesh;
  std::vector<LayerOpText> ops;  // heaviest groups first (gemm, convolution, routing, data movement)
  std::vector<std::string> communication;  // gradient sync, gathers, p2p lines
};

// `max_groups` bounds the operator table (the heaviest groups by forward FLOPs).
PlanExplanation explain_plan(const NumericGraph& graph, const PlanAnalysis& analysis, const Plan& plan,
                             const hardware::Cluster& cluster, std::size_t max_groups = 24);

// "h.12/attn/MatMul_3" -> "h.*/attn/MatMul_*": every run of digits becomes '*'.
std::string layer_pattern(const std::string& node_name);

}  // namespace symtensor::compiler
