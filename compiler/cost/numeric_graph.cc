#include "compiler/cost/numeric_graph.h"

#include <sstream>
#include <stdexcept>

#include "compiler/analysis/model_stats.h"

namespace symtensor::compiler {

std::optional<GiNaC::symbol> find_batch_symbol(const Graph& graph) {
  auto it = graph.symbols.all().find("batch");
  if (it != graph.symbols.all().end()) return it->second;
  for (TensorId in : graph.inputs)
    for (const auto& d : graph.tensor(in).shape)
      if (GiNaC::is_a<GiNaC::symbol>(d)) return GiNaC::ex_to<GiNaC::symbol>(d);
  return std::nullopt;
}

NumericGraph::NumericGraph(Graph& graph) : graph_(graph) {
  if (auto b = find_batch_symbol(graph)) {
    batch_ = *b;
    has_batch_ = true;
  }
  for (const auto& [name, value] : graph.symbols.bindings()) {
    const GiNaC::symbol s = graph.symbols.all().at(name);
    if (has_batch_ && s == batch_) batch_binding_ = value;
    else others_[s] = GiNaC::numeric(static_cast<long>(value));
  }
  tensor_elements_.reserve(graph.tensors().size());
  for (const Tensor& t : graph.tensors()) tensor_elements_.push_back(compile(t.num_elements()));
  nodes_.reserve(graph.nodes().size());
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    NumericNode n;
    n.space = iteration_space_of(graph, id);
    n.kind = n.space.kind;
    for (const auto& loop : n.space.loops) n.loops.push_back({compile(loop.extent), loop.reduction});
    n.flops = compile(n.space.flops);
    n.bytes = compile(n.space.bytes);
    nodes_.push_back(std::move(n));
  }
}

Affine NumericGraph::compile(const GiNaC::ex& e) const {
  GiNaC::ex v = e.subs(others_).expand();
  GiNaC::ex c0 = v, c1 = 0;
  if (has_batch_) {
    if (v.degree(batch_) > 1 || v.ldegree(batch_) < 0)
      throw std::runtime_error("expression " + [&] { std::ostringstream os; os << e; return os.str(); }() +
                               " is not affine in the batch dim");
    c0 = v.coeff(batch_, 0);
    c1 = v.coeff(batch_, 1);
  }
  auto number = [&](const GiNaC::ex& x) {
    const GiNaC::ex f = GiNaC::evalf(x);
    if (!GiNaC::is_a<GiNaC::numeric>(f)) {
      for (auto it = x.preorder_begin(); it != x.preorder_end(); ++it)
        if (GiNaC::is_a<GiNaC::symbol>(*it))
          throw std::runtime_error("dim '" + GiNaC::ex_to<GiNaC::symbol>(*it).get_name() +
                                   "' has no value: bind it, e.g. --bind " + GiNaC::ex_to<GiNaC::symbol>(*it).get_name() + "=N");
      throw std::runtime_error("a size does not evaluate to a number");
    }
    return GiNaC::ex_to<GiNaC::numeric>(f).to_double();
  };
  return {number(c0), number(c1)};
}

}  // namespace symtensor::compiler
