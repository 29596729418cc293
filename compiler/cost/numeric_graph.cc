#include "compiler/cost/numeric_graph.h"

#include <map>
#include <set>

#include <sstream>
#include <stdexcept>

#include "compiler/analysis/model_stats.h"
#include "compiler/analysis/transformer_structure.h"
#include "compiler/cost/moe_load.h"
#include "compiler/cost/saved_activations.h"

namespace symtensor::compiler {

std::optional<GiNaC::symbol> find_batch_symbol(const Graph& graph) {
  auto it = graph.symbols.all().find(graph.batch_dim.empty() ? std::string("batch") : graph.batch_dim);
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
  // Dims the exporter named and inference derived (aliases), in the other dims' values.
  const GiNaC::exmap bound = others_;
  for (const auto& [name, value] : graph.symbols.aliases()) others_[graph.symbols.all().at(name)] = value.subs(bound);
  const auto seq = graph.symbols.all().find(graph.sequence_dim);
  facts_.reserve(graph.tensors().size());
  tensor_shapes_.reserve(graph.tensors().size());
  quadratic_.reserve(graph.tensors().size());
  for (const Tensor& t : graph.tensors()) {
    TensorFacts f;
    f.elements = compile(t.num_elements());
    f.element_size = static_cast<int>(element_size(t.dtype));
    f.floating = is_floating(t.dtype);
    f.constant = t.is_constant;
    f.parameter = t.is_parameter;
    f.graph_output = t.is_graph_output;
    // Parameters get gradients wherever they live (initializers, or graph inputs in a
    // weight-free model); other graph inputs (data) do not.
    f.needs_gradient = f.floating && (t.is_parameter || (!t.is_constant && !t.is_graph_input));
    facts_.push_back(f);
    std::vector<Affine> shape;
    int seq_dims = 0;
    for (const auto& d : t.shape) {
      shape.push_back(compile(d));
      if (seq != graph.symbols.all().end() && d.has(seq->second)) ++seq_dims;
    }
    tensor_shapes_.push_back(std::move(shape));
    quadratic_.push_back(seq_dims >= 2);
  }
  spaces_ = node_iteration_spaces(graph);
  nodes_.reserve(graph.nodes().size());
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    NumericNode n(spaces_[id]);
    n.kind = n.space.kind;
    for (const auto& loop : n.space.loops) n.loops.push_back({compile(loop.extent), loop.reduction});
    n.flops = compile(n.space.flops);
    n.bytes = compile(n.space.bytes);
    for (TensorId out : graph.node(id).outputs) n.quadratic_output |= out != kNone && quadratic_[out];
    static const std::set<std::string> views = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Constant", "Shape"};
    n.no_kernel = views.count(graph.node(id).op_type) > 0;
    if (n.kind == OpKind::attention)
      for (std::size_t l = 0; l < n.space.loops.size(); ++l) {
        if (n.space.loops[l].name == "d") n.head_dim_loop = static_cast<int>(l);
        if (n.space.loops[l].name == "sq") n.query_loop = static_cast<int>(l);
      }
    nodes_.push_back(std::move(n));
  }
  order_ = graph.topological_order();
  node_layers_.assign(graph.nodes().size(), -1);
  std::map<std::string, int> layer_ids;
  for (NodeId id : order_) {
    const std::string layer = layer_of(graph.node(id).name);
    if (layer.empty()) continue;
    const auto [it, added] = layer_ids.try_emplace(layer, num_layers_);
    if (added) ++num_layers_;
    node_layers_[id] = it->second;
  }
  mark_fusable_intermediates(graph);
  mark_routing_tables(graph);
  const std::vector<bool> derived_from_weights = weight_derived_tensors(graph, order_);
  for (TensorId t = 0; t < static_cast<TensorId>(facts_.size()); ++t)
    facts_[t].weight_derived = derived_from_weights[t] && !facts_[t].parameter && facts_[t].floating && !facts_[t].constant;
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
    NumericNode& n = nodes_[id];
    if (n.kind != OpKind::gemm) continue;
    const Node& node = graph.node(id);
    for (std::size_t i = 0; i < node.inputs.size() && i < n.space.input_dims.size() && !n.expert_gemm; ++i) {
      const TensorId t = node.inputs[i];
      n.expert_gemm = t != kNone && (facts_[t].parameter || facts_[t].weight_derived) &&
                      gemm_expert_loop(n.space, static_cast<int>(i)) >= 0;
    }
  }
  auto slots_reading = [&](TensorId t, std::vector<std::pair<NodeId, int>>& slots) {
    for (NodeId c : graph.tensor(t).consumers) {
      const Node& node = graph.node(c);
      for (std::size_t i = 0; i < node.inputs.size() && i < nodes_[c].space.input_dims.size(); ++i)
        if (node.inputs[i] == t) slots.emplace_back(c, static_cast<int>(i));
    }
  };
  for (TensorId t = 0; t < static_cast<TensorId>(graph.tensors().size()); ++t) {
    const Tensor& tensor = graph.tensor(t);
    if (!tensor.is_parameter || tensor.consumers.empty()) continue;
    ParameterUses p{t, {}, {}};
    slots_reading(t, p.uses);
    // The weight-derived tensors made from it, breadth first (each once).
    std::vector<TensorId> derived;
    std::set<TensorId> seen;
    auto follow = [&](TensorId from) {
      for (NodeId c : graph.tensor(from).consumers)
        for (TensorId out : graph.node(c).outputs)
          if (out != kNone && facts_[out].weight_derived && seen.insert(out).second) derived.push_back(out);
    };
    follow(t);
    for (std::size_t k = 0; k < derived.size(); ++k) {
      slots_reading(derived[k], p.derived_uses);
      follow(derived[k]);
    }
    if (!p.uses.empty()) parameters_.push_back(std::move(p));
  }
  const std::vector<float> routed = routed_capacities(*this);
  for (TensorId t = 0; t < static_cast<TensorId>(facts_.size()); ++t) facts_[t].routed_capacity = routed[t];
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) nodes_[id].routed_capacity = routed_capacity_of_node(*this, id);
  saved_ = compiler::saved_tensors(*this);
  checkpoints_ = compiler::layer_checkpoints(*this);
  op_checkpoints_ = compiler::op_checkpoints(*this, op_checkpoint_nodes_);
}

// Element-wise, normalization, softmax, reduction and data-movement ops are what fused kernels
// chain (a norm's statistics and scaling, SwiGLU, RoPE's rotations and concatenation); a
// gather or scatter indexes memory and is not.
void NumericGraph::mark_fusable_intermediates(const Graph& graph) {
  auto fusable = [&](NodeId id) {
    const OpKind k = nodes_[id].kind;
    const std::string& op = graph.node(id).op_type;
    if (k == OpKind::data_movement) return op.rfind("Gather", 0) != 0 && op.rfind("Scatter", 0) != 0;
    return k == OpKind::elementwise || k == OpKind::normalization || k == OpKind::softmax || k == OpKind::reduction;
  };
  for (TensorId t = 0; t < static_cast<TensorId>(graph.tensors().size()); ++t) {
    const Tensor& tensor = graph.tensor(t);
    if (tensor.is_graph_output || tensor.consumers.empty()) continue;
    // A constant that is no parameter (an index operand, a scale; the fusion pass folds
    // Constant nodes into such) is an argument of the kernels that read it, as their own
    // intermediates are, when they are one layer's.
    const bool argument = tensor.producer == kNone && tensor.is_constant && !tensor.is_parameter;
    if (!argument && (tensor.producer == kNone || !fusable(tensor.producer))) continue;
    const int layer = node_layers_[argument ? tensor.consumers.front() : tensor.producer];
    bool internal = true;
    for (NodeId c : tensor.consumers) internal = internal && fusable(c) && node_layers_[c] == layer;
    facts_[t].fusable_intermediate = internal;
  }
}

// A tensor is a routing table when every consumer reads it as the
// routing operand of MoeDispatch / MoeCombine, or is an element-wise op (or cast, or view)
// that turns it into a routing table of the same size (the one-hot slot mask times the
// routed flag or the gate weight). The broadcast operands (a [b, s, E, 1] weight, the [C]
// slot numbers) are not routing tables: they are small and priced as they are.
void NumericGraph::mark_routing_tables(const Graph& graph) {
  auto same_size = [&](TensorId a, TensorId b) {
    return facts_[a].elements.constant == facts_[b].elements.constant && facts_[a].elements.per_batch == facts_[b].elements.per_batch;
  };
  // Each tensor decided at its producer: every consumer, and what they make, decided before.
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    for (TensorId t : graph.node(*it).outputs) {
      if (t == kNone || facts_[t].parameter || facts_[t].constant) continue;
      const Tensor& tensor = graph.tensor(t);
      bool table = !tensor.consumers.empty() && !tensor.is_graph_output;
      for (NodeId c : tensor.consumers) {
        const Node& consumer = graph.node(c);
        const OpKind kind = nodes_[c].kind;
        if (kind == OpKind::routing) {
          table = table && consumer.inputs.size() > 1 && consumer.inputs[0] == t && consumer.inputs[1] != t;
          continue;
        }
        const bool passes_on = kind == OpKind::elementwise || kind == OpKind::data_movement;
        bool outputs_tables = passes_on && !consumer.outputs.empty();
        for (TensorId out : consumer.outputs)
          outputs_tables = outputs_tables && out != kNone && facts_[out].routing_table && same_size(t, out);
        table = table && outputs_tables;
      }
      facts_[t].routing_table = table;
    }
  }
}

Affine NumericGraph::compile(const GiNaC::ex& e) const {
  // Repeated layers ask the same expressions (shapes, extents, FLOPs): each is compiled once.
  const auto known = compiled_.find(e);
  if (known != compiled_.end()) return known->second;
  const Affine a = compile_new(e);
  compiled_.emplace(e, a);
  return a;
}

Affine NumericGraph::compile_new(const GiNaC::ex& e) const {
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
