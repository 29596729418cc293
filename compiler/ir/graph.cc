#include "compiler/ir/graph.h"

#include <algorithm>

#include <boost/graph/topological_sort.hpp>
#include <stdexcept>

namespace symtensor::compiler {

GiNaC::ex Tensor::num_elements() const {
  GiNaC::ex n = 1;
  for (const auto& d : shape) n *= d;
  return n;
}

GiNaC::ex Tensor::num_bytes() const {
  return num_elements() * static_cast<long>(element_size(dtype));
}

const AttributeValue* Node::attribute(const std::string& key) const {
  auto it = attributes.find(key);
  return it == attributes.end() ? nullptr : &it->second;
}

std::int64_t Node::attr_int(const std::string& key, std::int64_t fallback) const {
  const AttributeValue* v = attribute(key);
  if (!v) return fallback;
  if (const auto* i = std::get_if<std::int64_t>(v)) return *i;
  throw std::runtime_error("node '" + name + "' (" + op_type + "): attribute '" + key + "' is not an integer");
}

double Node::attr_float(const std::string& key, double fallback) const {
  const AttributeValue* v = attribute(key);
  if (!v) return fallback;
  if (const auto* f = std::get_if<double>(v)) return *f;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  throw std::runtime_error("node '" + name + "' (" + op_type + "): attribute '" + key + "' is not a float");
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const AttributeValue* v = attribute(key);
  if (!v) return fallback;
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  throw std::runtime_error("node '" + name + "' (" + op_type + "): attribute '" + key + "' is not a string");
}

std::optional<std::vector<std::int64_t>> Node::attr_ints(const std::string& key) const {
  const AttributeValue* v = attribute(key);
  if (!v) return std::nullopt;
  if (const auto* l = std::get_if<std::vector<std::int64_t>>(v)) return *l;
  if (const auto* i = std::get_if<std::int64_t>(v)) return std::vector<std::int64_t>{*i};
  throw std::runtime_error("node '" + name + "' (" + op_type + "): attribute '" + key + "' is not a list of integers");
}

TensorId Graph::add_tensor(Tensor t) {
  if (by_name_.count(t.name)) throw std::runtime_error("tensor '" + t.name + "' is defined twice");
  const TensorId id = static_cast<TensorId>(tensors_.size());
  by_name_.emplace(t.name, id);
  tensors_.push_back(std::move(t));
  return id;
}

NodeId Graph::add_node(Node n) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  boost::add_vertex(id, bg_);
  // Edges are added as soon as both ends exist, so nodes may arrive in any order.
  for (TensorId out : n.outputs) {
    if (out == kNone) continue;
    Tensor& t = tensors_.at(out);
    if (t.producer != kNone)
      throw std::runtime_error("tensor '" + t.name + "' is produced by both '" + nodes_.at(t.producer).name +
                               "' and '" + n.name + "'");
    t.producer = id;
    for (NodeId c : t.consumers) boost::add_edge(id, c, TensorEdge{out}, bg_);
  }
  for (TensorId in : n.inputs) {
    if (in == kNone) continue;
    Tensor& t = tensors_.at(in);
    t.consumers.push_back(id);
    if (t.producer != kNone) boost::add_edge(t.producer, id, TensorEdge{in}, bg_);
  }
  nodes_.push_back(std::move(n));
  return id;
}

TensorId Graph::find_tensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? kNone : it->second;
}

std::vector<NodeId> Graph::topological_order() const {
  std::vector<BoostGraph::vertex_descriptor> reversed;
  try {
    boost::topological_sort(bg_, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    throw std::runtime_error("graph has a cycle through node '" + nodes_.at(node_on_cycle()).name + "'");
  }
  std::vector<NodeId> order;
  order.reserve(reversed.size());
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) order.push_back(bg_[*it]);
  return order;
}

NodeId Graph::node_on_cycle() const {
  // Kahn's algorithm leaves exactly the nodes on or downstream of a cycle; walking
  // predecessors inside that set must revisit a node, which is then on a cycle.
  std::vector<int> indegree(nodes_.size(), 0);
  for (auto [e, end] = boost::edges(bg_); e != end; ++e) ++indegree[boost::target(*e, bg_)];
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < indegree.size(); ++v)
    if (indegree[v] == 0) ready.push_back(v);
  while (!ready.empty()) {
    const auto v = ready.back();
    ready.pop_back();
    for (auto [e, end] = boost::out_edges(v, bg_); e != end; ++e)
      if (--indegree[boost::target(*e, bg_)] == 0) ready.push_back(boost::target(*e, bg_));
  }
  std::size_t v = 0;
  while (v < indegree.size() && indegree[v] == 0) ++v;
  std::vector<bool> seen(nodes_.size(), false);
  while (!seen[v]) {
    seen[v] = true;
    for (auto [e, end] = boost::in_edges(v, bg_); e != end; ++e) {
      const auto u = boost::source(*e, bg_);
      if (indegree[u] != 0) { v = u; break; }
    }
  }
  return static_cast<NodeId>(v);
}

std::string layer_of(const std::string& node_name) {
  // Scopes only: the last component is the operator's own name ("/model/Mul_5").
  size_t start = 0;
  while (start <= node_name.size()) {
    const size_t end = node_name.find('/', start);
    if (end == std::string::npos) break;
    if (std::any_of(node_name.begin() + start, node_name.begin() + end, [](char c) { return c >= '0' && c <= '9'; }))
      return node_name.substr(0, end);
    start = end + 1;
  }
  return "";
}

std::vector<bool> weight_derived_tensors(const Graph& graph, const std::vector<NodeId>& order) {
  std::vector<bool> derived(graph.tensors().size(), false);
  for (TensorId t = 0; t < static_cast<TensorId>(graph.tensors().size()); ++t) derived[t] = graph.tensor(t).is_parameter;
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    bool any_weight = false, all_fixed = true;
    for (TensorId t : node.inputs) {
      if (t == kNone) continue;
      any_weight = any_weight || derived[t];
      all_fixed = all_fixed && (derived[t] || graph.tensor(t).is_constant);
    }
    if (any_weight && all_fixed)
      for (TensorId t : node.outputs)
        if (t != kNone) derived[t] = true;
  }
  return derived;
}

double bound_sequence_length(const Graph& graph) {
  const auto& bindings = graph.symbols.bindings();
  const auto seq = bindings.find(graph.sequence_dim);
  return seq == bindings.end() ? 0.0 : seq->second;
}

}  // namespace symtensor::compiler
