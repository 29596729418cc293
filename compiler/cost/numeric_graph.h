#pragma once
// The compiled numeric form of a graph's costs. Every extent, FLOP count and tensor size
// is a GiNaC expression in the model's dims; with every dim but the batch bound, each is
// an affine function of the batch (a + b·batch: a tensor has at most one batch dim), so
// it is compiled once to two numbers. Plans then evaluate with plain arithmetic at any
// micro-batch size — no GiNaC in the search's inner loop.
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
  OpKind kind = OpKind::opaque;
  std::vector<NumericLoop> loops;
  Affine flops, bytes;
  IterationSpace space;  // symbolic original (maps, names), for shardings and formulas
};

class NumericGraph {
 public:
  // Throws naming the dim when a shape holds a symbol that is neither bound nor the batch.
  explicit NumericGraph(Graph& graph);

  const Graph& graph() const { return graph_; }
  const NumericNode& node(NodeId id) const { return nodes_.at(id); }
  Affine tensor_elements(TensorId id) const { return tensor_elements_.at(id); }
  double batch_binding() const { return batch_binding_; }  // the bound batch (global), 0 if none
  const GiNaC::symbol* batch_symbol() const { return has_batch_ ? &batch_ : nullptr; }

  // Compiles any expression of the graph's dims (exposed for tests and formulas).
  Affine compile(const GiNaC::ex& e) const;

 private:
  Graph& graph_;
  GiNaC::exmap others_;  // bindings of every dim except the batch
  GiNaC::symbol batch_;
  bool has_batch_ = false;
  double batch_binding_ = 0;
  std::vector<NumericNode> nodes_;
  std::vector<Affine> tensor_elements_;
};

// The batch dim of a graph: the symbol named "batch", else the first symbolic dim of
// the first graph input; nullopt for graphs without one.
std::optional<GiNaC::symbol> find_batch_symbol(const Graph& graph);

}  // namespace symtensor::compiler
