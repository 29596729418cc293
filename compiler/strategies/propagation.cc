#include "compiler/strategies/propagation.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "compiler/analysis/model_stats.h"
#include "compiler/ir/element_type.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/sharding/redistribution.h"

namespace symtensor::compiler {
namespace {

// Symbols left free after the bindings get this value when ranking candidates by bytes.
constexpr double kUnboundDimValue = 1024;
constexpr double kImpossible = 1e300;

bool loop_in_outputs(const IterationSpace& space, int loop) {
  for (const auto& dims : space.output_dims)
    if (std::find(dims.begin(), dims.end(), loop) != dims.end()) return true;
  return false;
}

void append_key(std::string& key, const TensorSharding& s) {
  for (const auto& axes : s.dim_axes) {
    key += '[';
    for (int a : axes) key += std::to_string(a) + ',';
  }
  key += 'p';
  for (int a : s.partial_axes) key += std::to_string(a) + ',';
  key += '|';
}

class Propagator {
 public:
  Propagator(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed,
             const std::vector<IterationSpace>& spaces)
      : g_(graph), mesh_(mesh), plan_(plan), fixed_(fixed), spaces_(spaces) {
    const std::size_t n = g_.nodes().size();
    if (plan_.node_cuts.size() != n) plan_.node_cuts.assign(n, NodeCut{});
    if (fixed_.size() != n || spaces_.size() != n)
      throw std::runtime_error("propagate_cuts: " + std::to_string(n) + " nodes but " + std::to_string(fixed_.size()) +
                               " fixed flags and " + std::to_string(spaces_.size()) + " iteration spaces");
    decided_ = fixed_;
    shapes_.resize(g_.tensors().size());
  }

  void run() {
    const std::vector<NodeId> order = g_.topological_order();
    for (int pass = 0; pass < kMaxPropagationPasses; ++pass) {
      bool changed = false;
      for (NodeId n : order) changed |= visit(n);
      for (auto it = order.rbegin(); it != order.rend(); ++it) changed |= visit(*it);
      if (!changed) break;
    }
  }

 private:
  bool visit(NodeId n) {
    if (fixed_[n]) return false;
    const std::vector<NodeCut> cands = candidates(n);
    const NodeCut* best = nullptr;
    double best_bytes = 0, best_ways = 0;
    for (const NodeCut& c : cands) {
      const double bytes = neighbour_bytes(n, c);
      const double ways = cut_ways(c, mesh_);
      if (!best || bytes < best_bytes || (bytes == best_bytes && ways > best_ways)) {
        best = &c, best_bytes = bytes, best_ways = ways;
      }
    }
    const bool changed = !decided_[n] || !(plan_.node_cuts[n] == *best);
    plan_.node_cuts[n] = *best;
    decided_[n] = true;
    return changed;
  }

  NodeCut empty_cut(NodeId n) const {
    NodeCut c;
    c.loop_axes.assign(spaces_[n].loops.size(), {});
    return c;
  }

  // Keeps, loop by loop, the longest prefix of axes that is allowed and not used yet.
  NodeCut sanitize(NodeId n, const NodeCut& proposal) const {
    NodeCut c = empty_cut(n);
    std::vector<bool> used(mesh_.axes().size(), false);
    for (std::size_t l = 0; l < c.loop_axes.size() && l < proposal.loop_axes.size(); ++l) {
      std::vector<int> axes;
      for (int a : proposal.loop_axes[l]) {
        if (a < 0 || a >= static_cast<int>(used.size()) || used[a] || a == plan_.pipeline_axis) break;
        axes.push_back(a);
      }
      while (!axes.empty() && !cut_allowed(g_, g_.node(n), spaces_[n], static_cast<int>(l), axes, mesh_)) axes.pop_back();
      for (int a : axes) used[a] = true;
      c.loop_axes[l] = axes;
    }
    return c;
  }

  // Proposal: loops that `dims` map to take the axes of the matching dims of `sharding`.
  NodeCut from_operand(NodeId n, const std::vector<int>& dims, const TensorSharding& sharding) const {
    NodeCut c = empty_cut(n);
    for (std::size_t d = 0; d < dims.size() && d < sharding.dim_axes.size(); ++d)
      if (dims[d] >= 0 && c.loop_axes[dims[d]].empty()) c.loop_axes[dims[d]] = sharding.dim_axes[d];
    return c;
  }

  std::vector<NodeCut> candidates(NodeId n) const {
    const Node& node = g_.node(n);
    const IterationSpace& space = spaces_[n];
    std::vector<NodeCut> proposals;
    for (std::size_t i = 0; i < node.inputs.size() && i < space.input_dims.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNone) continue;
      const NodeId p = g_.tensor(t).producer;
      if (p == kNone || !decided_[p]) continue;
      proposals.push_back(from_operand(n, space.input_dims[i], producer_sharding(p, t)));
    }
    for (std::size_t o = 0; o < node.outputs.size() && o < space.output_dims.size(); ++o) {
      const TensorId t = node.outputs[o];
      for (NodeId c : g_.tensor(t).consumers) {
        if (!decided_[c]) continue;
        for (std::size_t j = 0; j < g_.node(c).inputs.size(); ++j)
          if (g_.node(c).inputs[j] == t) proposals.push_back(from_operand(n, space.output_dims[o], consumer_sharding(c, j)));
      }
    }
    std::vector<NodeCut> cands;
    NodeCut merged = empty_cut(n);
    for (const NodeCut& p : proposals)
      for (std::size_t l = 0; l < p.loop_axes.size(); ++l)
        if (merged.loop_axes[l].empty()) merged.loop_axes[l] = p.loop_axes[l];
    auto add = [&](const NodeCut& c) {
      NodeCut s = sanitize(n, c);
      if (std::find(cands.begin(), cands.end(), s) == cands.end()) cands.push_back(std::move(s));
    };
    add(merged);
    for (const NodeCut& p : proposals) add(p);
    if (decided_[n]) add(plan_.node_cuts[n]);
    add(empty_cut(n));
    return cands;
  }

  int output_index(NodeId p, TensorId t) const {
    const auto& outs = g_.node(p).outputs;
    return static_cast<int>(std::find(outs.begin(), outs.end(), t) - outs.begin());
  }

  TensorSharding producer_sharding(NodeId p, TensorId t, const NodeCut* cut = nullptr) const {
    const IterationSpace& s = spaces_[p];
    const int o = output_index(p, t);
    const int rank = static_cast<int>(g_.tensor(t).shape.size());
    if (o >= static_cast<int>(s.output_dims.size()) || static_cast<int>(s.output_dims[o].size()) != rank)
      return TensorSharding::replicated(rank);
    return output_sharding(s, cut ? *cut : plan_.node_cuts[p], o);
  }

  TensorSharding consumer_sharding(NodeId c, std::size_t j, const NodeCut* cut = nullptr) const {
    const IterationSpace& s = spaces_[c];
    const TensorId t = g_.node(c).inputs[j];
    const int rank = static_cast<int>(g_.tensor(t).shape.size());
    if (j >= s.input_dims.size() || static_cast<int>(s.input_dims[j].size()) != rank)
      return TensorSharding::replicated(rank);
    return input_sharding(s, cut ? *cut : plan_.node_cuts[c], static_cast<int>(j));
  }

  double neighbour_bytes(NodeId n, const NodeCut& cut) {
    const Node& node = g_.node(n);
    double total = 0;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNone) continue;
      const NodeId p = g_.tensor(t).producer;
      if (p == kNone || !decided_[p]) continue;
      total += edge_bytes(t, producer_sharding(p, t), consumer_sharding(n, i, &cut));
    }
    for (TensorId t : node.outputs) {
      for (NodeId c : g_.tensor(t).consumers) {
        if (!decided_[c] || c == n) continue;
        for (std::size_t j = 0; j < g_.node(c).inputs.size(); ++j)
          if (g_.node(c).inputs[j] == t) total += edge_bytes(t, producer_sharding(n, t, &cut), consumer_sharding(c, j));
      }
    }
    return total;
  }

  const std::vector<GiNaC::ex>& numeric_shape(TensorId t) {
    auto& shape = shapes_[t];
    if (shape) return *shape;
    shape.emplace();
    GiNaC::exmap unbound;
    for (const auto& [name, sym] : g_.symbols.all())
      if (!g_.symbols.bindings().count(name)) unbound[sym] = kUnboundDimValue;
    for (const GiNaC::ex& d : g_.tensor(t).shape) shape->push_back(GiNaC::evalf(g_.symbols.substitute(d).subs(unbound)));
    return *shape;
  }

  double edge_bytes(TensorId t, const TensorSharding& from, const TensorSharding& to) {
    if (from == to) return 0;
    std::string key = std::to_string(t) + ':';
    append_key(key, from);
    append_key(key, to);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    double bytes = kImpossible;
    const Tensor& tensor = g_.tensor(t);
    const double element = std::max<std::size_t>(1, element_size(tensor.dtype));
    try {
      const Redistribution r = plan_redistribution(from, to, numeric_shape(t), element, mesh_);
      const GiNaC::ex total = GiNaC::evalf(r.total_bytes());
      if (GiNaC::is_a<GiNaC::numeric>(total)) bytes = GiNaC::ex_to<GiNaC::numeric>(total).to_double();
    } catch (const std::exception&) {
      // unreachable sharding: never chosen while any other candidate exists
    }
    cache_.emplace(std::move(key), bytes);
    return bytes;
  }

  Graph& g_;
  const hardware::DeviceMesh& mesh_;
  Plan& plan_;
  const std::vector<bool>& fixed_;
  const std::vector<IterationSpace>& spaces_;
  std::vector<bool> decided_;
  std::vector<std::optional<std::vector<GiNaC::ex>>> shapes_;
  std::unordered_map<std::string, double> cache_;
};

}  // namespace

std::vector<IterationSpace> node_iteration_spaces(Graph& graph) {
  std::vector<IterationSpace> spaces;
  spaces.reserve(graph.nodes().size());
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes().size()); ++n) spaces.push_back(iteration_space_of(graph, n));
  return spaces;
}

void propagate_cuts(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed,
                    const std::vector<IterationSpace>& spaces) {
  Propagator(graph, mesh, plan, fixed, spaces).run();
}

void propagate_cuts(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed) {
  const std::vector<IterationSpace> spaces = node_iteration_spaces(graph);
  propagate_cuts(graph, mesh, plan, fixed, spaces);
}

std::optional<double> numeric_extent(const Graph& graph, const GiNaC::ex& extent) { return graph.symbols.evaluate(extent); }

int loop_with_symbol(const Graph& graph, const IterationSpace& space, const std::string& symbol) {
  if (!graph.symbols.contains(symbol)) return -1;
  const GiNaC::symbol& sym = graph.symbols.all().at(symbol);
  int factor_loop = -1;
  for (std::size_t l = 0; l < space.loops.size(); ++l) {
    const GiNaC::ex e = GiNaC::expand(space.loops[l].extent);
    if (e.is_equal(sym)) return static_cast<int>(l);
    if (factor_loop < 0 && e.has(sym) && e.subs(sym == 0).is_zero()) factor_loop = static_cast<int>(l);
  }
  return factor_loop;
}

bool cut_allowed(const Graph& graph, const Node& node, const IterationSpace& space, int loop, const std::vector<int>& axes,
                 const hardware::DeviceMesh& mesh) {
  if (loop < 0 || loop >= static_cast<int>(space.loops.size())) return false;
  if (axes.empty()) return true;
  const LoopDim& dim = space.loops[loop];
  if (dim.reduction && (space.kind == OpKind::softmax || space.kind == OpKind::normalization)) return false;
  if (!dim.reduction && !loop_in_outputs(space, loop) && node.op_type != "Split") return false;
  double ways = 1;
  for (int a : axes) {
    if (a < 0 || a >= static_cast<int>(mesh.axes().size())) return false;
    ways *= mesh.axes()[a].size;
  }
  if (auto extent = numeric_extent(graph, dim.extent)) {
    if (*extent < ways || std::fmod(*extent, ways) != 0) return false;
  }
  return true;
}

}  // namespace symtensor::compiler
