#pragma once
// The compiled numeric form of a graph's costs. Every extent, FLOP count and tensor size
// is a GiNaC expression in the model's dims; with every dim but the batch bound, each is
// an affine function of the batch (a + b·batch: a tensor has at most one batch dim), so
// it is compiled once to two numbers. Plans then evaluate with plain arithmetic at any
// micro-batch size — no GiNaC in the search's inner loop. The facts every plan of the
// graph asks again (order, shapes, what backward keeps) are computed here once as well.
#include <map>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {

struct Affine {
  double constant = 0, per_batch = 0;
  double at(double batch) const { return constant + per_batch * batch; }
};

struct NumericLoop {
  Affine extent;
  bool reduction = false;
};

struct NumericNode {
  explicit NumericNode(const IterationSpace& s) : space(s) {}
  OpKind kind = OpKind::opaque;
  std::vector<NumericLoop> loops;
  Affine flops, bytes;
  bool quadratic_output = false;  // an output is quadratic_in_sequence (selective recompute redoes the node)
  // A view (Reshape, Squeeze, Unsqueeze, Flatten, Identity) or a host-side constant: no kernel.
  bool no_kernel = false;
  // Fused attention (OpKind::attention): its head-dim and query-sequence loops, which pick
  // the kernel's efficiency; -1 otherwise.
  int head_dim_loop = -1, query_loop = -1;
  // A grouped GEMM of a mixture's experts: a weight stacked over experts ([E, h, I]) whose expert
  // loop runs through every operand (hardware::StackKernels::grouped_gemm prices it).
  bool expert_gemm = false;
  // routed_capacity_of_node (compiler/cost/moe_load.h), made once: -1 (kNotRouted) unless it
  // computes on the experts' tokens.
  float routed_capacity = -1;
  const IterationSpace& space;  // symbolic original (maps, names), for shardings and formulas: NumericGraph::spaces()
};

// What pricing a plan reads of a tensor, kept apart from Tensor so that the cost model's
// inner loop reads a few contiguous bytes.
struct TensorFacts {
  Affine elements;
  int element_size = 0;  // bytes per element of its stored type
  bool floating = false, constant = false, parameter = false, graph_output = false;
  bool needs_gradient = false;  // a floating parameter or computed value (not a graph input)
  // Computed from parameters (and constants) alone: a tied LM head's Transpose of the token
  // embedding. Frameworks read such a tensor as a view of the weight, so it is no saved
  // activation, and its gradient stays a partial sum until the parameter's own reduction.
  bool weight_derived = false;
  // Passed from one element-wise op to the next inside a layer (every consumer such an op of
  // the producer's layer): a fused kernel keeps it on chip (Stack::fused_elementwise).
  bool fusable_intermediate = false;
  // A mixture of experts' dispatch mask or combine weights ([b, s, E, C], input 0 of
  // MoeDispatch / MoeCombine) or a same-sized tensor only they are computed from: GShard-style
  // capacity routing writes them dense, a real dispatcher (Megatron-Core's permute, DeepEP)
  // holds k expert indices and weights per token. Priced as index-sized: no bytes moved, kept
  // or sent.
  bool routing_table = false;
  // Tokens in the experts' buffers (a MoeDispatch's output, what the experts compute from it,
  // a MoeCombine's expert input): their routing, kDroplessRouting or the capacity factor;
  // kNotRouted (-1) for other tensors (compiler/cost/moe_load.h).
  float routed_capacity = -1;
};

// A parameter and every operand slot (node, input index) that reads it, in consumer order.
struct ParameterUses {
  TensorId tensor = kNone;
  std::vector<std::pair<NodeId, int>> uses;
  // Operand slots reading a weight-derived tensor made from it (TensorFacts::weight_derived):
  // where their gradients are partial sums, so is the parameter's.
  std::vector<std::pair<NodeId, int>> derived_uses;
};

// A tensor the backward pass keeps (see saved_activations.h for which ones).
struct SavedTensor {
  TensorId tensor = kNone;
  NodeId saved_by = kNone;             // the node (or first node of a region) that keeps it
  bool mask = false;                   // a dropout mask: one byte per element, not the activation precision
  bool quadratic_in_sequence = false;  // attention scores-sized: dropped by selective recompute
  // A view (reshape, transpose) of a tensor kept already, FlashAttention's output kept as the
  // output projection's input: no bytes of its own unless that GEMM keeps a quantized copy.
  bool view_of_kept = false;
  // In layer_checkpoints() only: a layer's input no operator saves (kept for recomputation).
  bool layer_input_only = false;
};

class NumericGraph {
 public:
  // Throws naming the dim when a shape holds a symbol that is neither bound nor the batch.
  explicit NumericGraph(Graph& graph);
  NumericGraph(const NumericGraph&) = delete;  // its nodes refer to its spaces
  NumericGraph& operator=(const NumericGraph&) = delete;

  const Graph& graph() const { return graph_; }
  const NumericNode& node(NodeId id) const { return nodes_.at(id); }
  // Every node's iteration space, derived once per graph: what the strategies, propagation
  // and the level problems read (by node id).
  const std::vector<IterationSpace>& spaces() const { return spaces_; }
  // Per node: its layer (layer_of its name) as an index in order of first appearance, or
  // -1 outside layers; num_layers() of them.
  const std::vector<int>& node_layers() const { return node_layers_; }
  int num_layers() const { return num_layers_; }
  Affine tensor_elements(TensorId id) const { return facts_.at(id).elements; }
  const TensorFacts& facts(TensorId id) const { return facts_[id]; }
  const std::vector<ParameterUses>& parameters() const { return parameters_; }
  const std::vector<Affine>& tensor_shape(TensorId id) const { return tensor_shapes_.at(id); }
  // Two or more dims that grow with the sequence (attention scores).
  bool quadratic_in_sequence(TensorId id) const { return quadratic_.at(id); }
  const std::vector<NodeId>& topological_order() const { return order_; }
  // What backward keeps without recompute, and the layer inputs full recompute keeps.
  const std::vector<SavedTensor>& saved_tensors() const { return saved_; }
  const std::vector<SavedTensor>& layer_checkpoints() const { return checkpoints_; }
  // What an op-level selective policy keeps (saved_activations.h, op_checkpoints), and whether
  // a node is one whose outputs it keeps (not recomputed).
  const std::vector<SavedTensor>& op_checkpoints() const { return op_checkpoints_; }
  bool keeps_outputs_under_op_policy(NodeId id) const { return op_checkpoint_nodes_.at(id) != 0; }
  double batch_binding() const { return batch_binding_; }  // the bound batch (global), 0 if none
  const GiNaC::symbol* batch_symbol() const { return has_batch_ ? &batch_ : nullptr; }

  // Compiles any expression of the graph's dims (exposed for tests and formulas).
  Affine compile(const GiNaC::ex& e) const;

  // The analysis' twin classes (compiler/cost/twin_work.cc): per node, the class of operators
  // whose work it derives from the same numbers of this graph. Found by the first analysis of
  // the graph (empty until then) and kept here for every analysis sharing it, as compile's.
  struct TwinClasses {
    std::vector<int> of_node;
    int count = 0;
  };
  TwinClasses& twin_classes() const { return twin_classes_; }

 private:
  void mark_fusable_intermediates(const Graph& graph);
  void mark_routing_tables(const Graph& graph);
  Affine compile_new(const GiNaC::ex& e) const;

  Graph& graph_;
  GiNaC::exmap others_;  // bindings of every dim except the batch
  GiNaC::symbol batch_;
  bool has_batch_ = false;
  double batch_binding_ = 0;
  std::vector<IterationSpace> spaces_;
  std::vector<int> node_layers_;
  int num_layers_ = 0;
  std::vector<NumericNode> nodes_;
  std::vector<TensorFacts> facts_;
  std::vector<ParameterUses> parameters_;
  std::vector<std::vector<Affine>> tensor_shapes_;
  std::vector<bool> quadratic_;
  std::vector<NodeId> order_;
  std::vector<SavedTensor> saved_, checkpoints_, op_checkpoints_;
  std::vector<char> op_checkpoint_nodes_;
  mutable std::map<GiNaC::ex, Affine, GiNaC::ex_is_less> compiled_;  // compile's, by expression
  mutable TwinClasses twin_classes_;
};

// The batch dim of a graph: the symbol named "batch", else the first symbolic dim of
// the first graph input; nullopt for graphs without one.
std::optional<GiNaC::symbol> find_batch_symbol(const Graph& graph);

}  // namespace symtensor::compiler
