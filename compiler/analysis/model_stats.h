#pragma once
// Whole-model figures derived from the IR and the operator semantics.
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

struct NodeCost {
  NodeId node = kNone;
  GiNaC::ex flops;
  GiNaC::ex bytes;
};

struct ModelStats {
  GiNaC::ex parameter_count;   // elements of all parameters (symbolic only if a weight shape is)
  GiNaC::ex parameter_bytes;
  // Parameters one token runs through: all but the routed experts, of which top_k of E
  // (a MoeCombine's top_k and its routing tensor's E; the expert-stacked parameters of its
  // layer, leading dim E). Equal to parameter_count without mixtures of experts.
  GiNaC::ex active_parameter_count;
  GiNaC::ex forward_flops;     // every operator with semantics
  GiNaC::ex gemm_flops;        // MatMul/Gemm/Einsum/Conv only (the convention of published formulas)
  GiNaC::ex attention_flops;   // fused attention kernels (causal ones counted half)
  // What the fusion pass replaced, per pattern: "count; detail" (Graph metadata).
  std::map<std::string, std::string> fused;
  std::map<std::string, int> op_histogram;
  std::vector<std::string> opaque_ops;   // "name (OpType)"
  std::vector<NodeCost> node_costs;      // one per node
};

ModelStats compute_model_stats(Graph& graph);

// The iteration space of one node (the opaque one for nodes without semantics).
struct IterationSpace;
IterationSpace iteration_space_of(Graph& graph, NodeId id);
// Every node's, by node id. Searches take them from NumericGraph::spaces(), derived once.
std::vector<IterationSpace> node_iteration_spaces(Graph& graph);

}  // namespace symtensor::compiler
