#include "compiler/strategies/propagation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

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

// An operand's layout under its node's cut, read in place; replicated where the node's
// iteration space does not describe the operand.
struct EdgeLayout {
  std::optional<OperandLayout> cut;
  int rank = 0;

  const std::vector<int>& dim_axes(int d) const {
    static const std::vector<int> none;
    return cut ? cut->dim_axes(d) : none;
  }
  std::uint64_t partial_axes() const { return cut ? cut->partial_axes() : 0; }
  TensorSharding sharding() const { return cut ? cut->sharding() : TensorSharding::replicated(rank); }
  friend bool operator==(const EdgeLayout& a, const EdgeLayout& b) {
    if (a.rank != b.rank || a.partial_axes() != b.partial_axes()) return false;
    for (int d = 0; d < a.rank; ++d)
      if (a.dim_axes(d) != b.dim_axes(d)) return false;
    return true;
  }
};

class Propagator {
 public:
  Propagator(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed,
             const std::vector<IterationSpace>& spaces, PropagationCache& cache, const std::vector<NodeCut>* previous)
      : g_(graph), mesh_(mesh), plan_(plan), fixed_(fixed), spaces_(spaces), cache_(cache),
        memo_(cache.redistributions.for_mesh(mesh)) {
    const std::size_t n = g_.nodes().size();
    if (plan_.node_cuts.size() != n) plan_.node_cuts.assign(n, NodeCut{});
    if (fixed_.size() != n || spaces_.size() != n)
      throw std::runtime_error("propagate_cuts: " + std::to_string(n) + " nodes but " + std::to_string(fixed_.size()) +
                               " fixed flags and " + std::to_string(spaces_.size()) + " iteration spaces");
    decided_.assign(fixed_.begin(), fixed_.end());
    stale_.assign(n, 0);
    if (cache_.in_start.size() != n + 1) index_edges();
    if (previous && previous->size() == n) {
      for (std::size_t id = 0; id < n; ++id)
        if (!fixed_[id]) {
          plan_.node_cuts[id] = (*previous)[id];
          decided_[id] = true;
        }
      for (std::size_t id = 0; id < n; ++id)
        if (fixed_[id] && !(plan_.node_cuts[id] == (*previous)[id])) mark_neighbours_stale(static_cast<NodeId>(id));
    }
    // A node without loops has one cut, the empty one. One that no other node feeds (a
    // Constant) is decided from the start and never visited: its first visit, before any
    // consumer's, chose that cut. The others (Shape, an opaque operator, scalar arithmetic)
    // are visited once, as before, so that their producers see them when they did (visit).
    for (std::size_t id = 0; id < n; ++id)
      if (!fixed_[id] && spaces_[id].loops.empty() && fed_by_no_node(static_cast<NodeId>(id))) {
        plan_.node_cuts[id] = NodeCut{};
        decided_[id] = true;
      }
    cache_.shapes.resize(g_.tensors().size());
    cache_.shapes_known.resize(g_.tensors().size(), 0);
    cache_.extents.resize(n);
    cache_.extents_known.resize(n, false);
    std::vector<long> mesh_key;
    for (const auto& a : mesh_.axes()) mesh_key.insert(mesh_key.end(), {a.size, a.level, a.stride, a.inner_part});
    mesh_key.push_back(plan_.pipeline_axis);
    mesh_id_ = cache_.mesh_ids.try_emplace(mesh_key, static_cast<int>(cache_.mesh_ids.size())).first->second;
    if (cache_.node_class.size() != n) classify_nodes();
  }

  void run() {
    if (cache_.order.empty()) cache_.order = g_.topological_order();
    const std::vector<NodeId>& order = cache_.order;
    for (int pass = 0; pass < kMaxPropagationPasses; ++pass) {
      bool changed = false;
      for (NodeId n : order) changed |= visit(n);
      for (auto it = order.rbegin(); it != order.rend(); ++it) changed |= visit(*it);
      if (!changed) break;
    }
  }

 private:
  void index_edges() {
    using Edge = PropagationCache::Edge;
    const std::size_t n = g_.nodes().size();
    cache_.in_edges.clear();
    cache_.out_edges.clear();
    cache_.in_start.assign(1, 0);
    cache_.out_start.assign(1, 0);
    auto edge = [&](TensorId t, NodeId other, int own, int others) {
      const Tensor& tensor = g_.tensor(t);
      return Edge{t, other, own, others, static_cast<int>(tensor.shape.size()),
                  static_cast<double>(std::max<std::size_t>(1, element_size(tensor.dtype)))};
    };
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
      const Node& node = g_.node(id);
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        const TensorId t = node.inputs[i];
        if (t == kNone) continue;
        const NodeId p = g_.tensor(t).producer;
        const int o = p == kNone ? 0 : output_index(p, t);
        cache_.in_edges.push_back(edge(t, p, static_cast<int>(i), o));
      }
      for (std::size_t o = 0; o < node.outputs.size(); ++o) {
        const TensorId t = node.outputs[o];
        for (NodeId c : g_.tensor(t).consumers)
          for (std::size_t j = 0; j < g_.node(c).inputs.size(); ++j)
            if (g_.node(c).inputs[j] == t) {
              cache_.out_edges.push_back(edge(t, c, static_cast<int>(o), static_cast<int>(j)));
              cache_.out_edges.back().reads_dims_only = reads_dims_only(g_.node(c));
            }
      }
      cache_.in_start.push_back(static_cast<int>(cache_.in_edges.size()));
      cache_.out_start.push_back(static_cast<int>(cache_.out_edges.size()));
    }
  }

  struct EdgeRange {
    const PropagationCache::Edge *first, *last;
    const PropagationCache::Edge* begin() const { return first; }
    const PropagationCache::Edge* end() const { return last; }
  };
  EdgeRange inputs_of(NodeId n) const {
    return {cache_.in_edges.data() + cache_.in_start[n], cache_.in_edges.data() + cache_.in_start[n + 1]};
  }
  EdgeRange outputs_of(NodeId n) const {
    return {cache_.out_edges.data() + cache_.out_start[n], cache_.out_edges.data() + cache_.out_start[n + 1]};
  }

  bool fed_by_no_node(NodeId n) const {
    for (const auto& e : inputs_of(n))
      if (e.other != kNone) return false;
    return true;
  }

  // Its neighbours (the producers of its inputs, the consumers of its outputs) are to be
  // visited again.
  void mark_neighbours_stale(NodeId n) {
    for (const auto& e : inputs_of(n))
      if (e.other != kNone) stale_[e.other] = 1;
    for (const auto& e : outputs_of(n)) stale_[e.other] = 1;
  }

  // A node's choice depends only on its neighbours' cuts and its own: when none changed
  // since its last visit (it is not stale), visiting again would choose the same cut, and
  // is skipped.
  bool visit(NodeId n) {
    if (fixed_[n]) return false;
    if (decided_[n] && spaces_[n].loops.empty()) return false;  // its one cut again
    if (decided_[n] && !stale_[n]) return false;
    stale_[n] = 0;
    context_key(n);
    auto known = cache_.choices.find(key_);
    if (known == cache_.choices.end()) known = cache_.choices.emplace(key_, choose(n)).first;
    const NodeCut& best = known->second;
    const bool changed = !decided_[n] || !(plan_.node_cuts[n] == best);
    if (changed) plan_.node_cuts[n] = best;
    decided_[n] = true;
    if (changed) mark_neighbours_stale(n);
    return changed;
  }

  // Everything choose(n) reads, as numbers (see PropagationCache::choices).
  void context_key(NodeId n) {
    key_.clear();
    key_.push_back(mesh_id_);
    key_.push_back(cache_.node_class[n]);
    key_.push_back(decided_[n]);
    if (decided_[n]) append_cut(plan_.node_cuts[n]);
    for (const auto& e : inputs_of(n)) {
      const bool known = e.other != kNone && decided_[e.other];
      key_.push_back(known);
      if (known) append_layout(producer_sharding(e));
    }
    for (const auto& e : outputs_of(n)) {
      key_.push_back(decided_[e.other]);
      if (decided_[e.other]) append_layout(consumer_sharding(e));
    }
  }

  void append_cut(const NodeCut& c) {
    key_.push_back(static_cast<std::int64_t>(c.loop_axes.size()));
    for (const auto& axes : c.loop_axes) {
      key_.push_back(static_cast<std::int64_t>(axes.size()));
      key_.insert(key_.end(), axes.begin(), axes.end());
    }
  }

  void append_layout(const EdgeLayout& l) {
    if (!l.cut) {
      key_.push_back(-1);
      return;
    }
    key_.push_back(static_cast<std::int64_t>(l.partial_axes()));
    for (int d = 0; d < l.rank; ++d) {
      const auto& axes = l.dim_axes(d);
      key_.push_back(static_cast<std::int64_t>(axes.size()));
      key_.insert(key_.end(), axes.begin(), axes.end());
    }
  }

  // Nodes alike in everything choose() reads of the graph share a class: operator kind (and
  // whether it is a Split), loops (reduction, numeric extent), operand maps, and per edge
  // its indices, rank, element size and the tensor's numeric shape.
  void classify_nodes() {
    const std::size_t n = g_.nodes().size();
    std::map<std::vector<double>, int> ids;
    std::vector<double> sig;
    cache_.node_class.assign(n, 0);
    auto dims = [&](const std::vector<std::vector<int>>& maps) {
      sig.push_back(static_cast<double>(maps.size()));
      for (const auto& m : maps) {
        sig.push_back(static_cast<double>(m.size()));
        sig.insert(sig.end(), m.begin(), m.end());
      }
    };
    auto shape = [&](TensorId t) {
      const auto& s = numeric_shape(t);
      if (!s) return sig.push_back(-1);
      sig.push_back(static_cast<double>(s->size()));
      sig.insert(sig.end(), s->begin(), s->end());
    };
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
      const IterationSpace& space = spaces_[id];
      sig.clear();
      sig.push_back(static_cast<double>(space.kind));
      sig.push_back(g_.node(id).op_type == "Split");
      sig.push_back(static_cast<double>(space.loops.size()));
      for (std::size_t l = 0; l < space.loops.size(); ++l) {
        const std::optional<double> x = extent(id, l);
        sig.push_back(space.loops[l].reduction);
        sig.push_back(x.has_value());
        sig.push_back(x.value_or(0));
      }
      dims(space.input_dims);
      dims(space.output_dims);
      for (const auto& e : inputs_of(id)) {
        sig.insert(sig.end(), {static_cast<double>(e.own), static_cast<double>(e.rank), e.element_bytes,
                               static_cast<double>(e.other == kNone)});
        shape(e.tensor);
      }
      sig.push_back(-2);
      for (const auto& e : outputs_of(id)) {
        sig.insert(sig.end(), {static_cast<double>(e.own), static_cast<double>(e.rank), e.element_bytes,
                               static_cast<double>(e.other == id), static_cast<double>(e.reads_dims_only)});
        shape(e.tensor);
      }
      cache_.node_class[id] = ids.try_emplace(sig, static_cast<int>(ids.size())).first->second;
    }
  }

  // The cut a visit of n picks (see the header).
  NodeCut choose(NodeId n) {
    const std::vector<NodeCut> cands = candidates(n);
    const NodeCut* best = nullptr;
    double best_bytes = 0, best_ways = 0;
    if (cands.size() == 1) best = &cands[0];  // nothing to choose: not priced
    else
      for (const NodeCut& c : cands) {
        const double bytes = neighbour_bytes(n, c);
        const double ways = cut_ways(c, mesh_);
        if (!best || bytes < best_bytes || (bytes == best_bytes && ways > best_ways)) {
          best = &c, best_bytes = bytes, best_ways = ways;
        }
      }
    return *best;
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
      while (!axes.empty() && !cut_allowed(g_.node(n), spaces_[n], static_cast<int>(l), extent(n, l), axes, mesh_)) axes.pop_back();
      for (int a : axes) used[a] = true;
      c.loop_axes[l] = axes;
    }
    return c;
  }

  // Proposal: loops that `dims` map to take the axes of the matching dims of `sharding`.
  NodeCut from_operand(NodeId n, const std::vector<int>& dims, const EdgeLayout& layout) const {
    NodeCut c = empty_cut(n);
    for (std::size_t d = 0; d < dims.size() && static_cast<int>(d) < layout.rank; ++d)
      if (dims[d] >= 0 && c.loop_axes[dims[d]].empty()) c.loop_axes[dims[d]] = layout.dim_axes(static_cast<int>(d));
    return c;
  }

  std::vector<NodeCut> candidates(NodeId n) const {
    const IterationSpace& space = spaces_[n];
    std::vector<NodeCut> proposals;
    for (const auto& e : inputs_of(n)) {
      if (e.own >= static_cast<int>(space.input_dims.size()) || e.other == kNone || !decided_[e.other]) continue;
      proposals.push_back(from_operand(n, space.input_dims[e.own], producer_sharding(e)));
    }
    for (const auto& e : outputs_of(n)) {
      if (e.own >= static_cast<int>(space.output_dims.size()) || !decided_[e.other]) continue;
      proposals.push_back(from_operand(n, space.output_dims[e.own], consumer_sharding(e)));
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

  // The layout of an input edge's tensor at its producer, and of an output edge's tensor at
  // its consumer, under their current cuts.
  EdgeLayout producer_sharding(const PropagationCache::Edge& in) const {
    return output_layout(in.other, in.others, in.rank, plan_.node_cuts[in.other]);
  }
  EdgeLayout consumer_sharding(const PropagationCache::Edge& out) const {
    return input_layout(out.other, out.others, out.rank, plan_.node_cuts[out.other]);
  }

  EdgeLayout output_layout(NodeId p, int o, int rank, const NodeCut& cut) const {
    const IterationSpace& s = spaces_[p];
    if (o >= static_cast<int>(s.output_dims.size()) || static_cast<int>(s.output_dims[o].size()) != rank) return {std::nullopt, rank};
    return {OperandLayout::output(s, cut, o), rank};
  }
  EdgeLayout input_layout(NodeId c, int j, int rank, const NodeCut& cut) const {
    const IterationSpace& s = spaces_[c];
    if (j >= static_cast<int>(s.input_dims.size()) || static_cast<int>(s.input_dims[j].size()) != rank) return {std::nullopt, rank};
    return {OperandLayout::input(s, cut, j), rank};
  }

  double neighbour_bytes(NodeId n, const NodeCut& cut) {
    double total = 0;
    for (const auto& e : inputs_of(n))
      if (e.other != kNone && decided_[e.other]) total += edge_bytes(e, producer_sharding(e), input_layout(n, e.own, e.rank, cut));
    for (const auto& e : outputs_of(n))
      if (decided_[e.other] && e.other != n && !e.reads_dims_only)
        total += edge_bytes(e, output_layout(n, e.own, e.rank, cut), consumer_sharding(e));
    return total;
  }

  std::optional<double> extent(NodeId n, std::size_t loop) const {
    if (!cache_.extents_known[n]) {
      auto& extents = cache_.extents[n];
      for (const auto& l : spaces_[n].loops) extents.push_back(numeric_extent(g_, l.extent));
      cache_.extents_known[n] = true;
    }
    return cache_.extents[n][loop];
  }

  // The tensor's shape after the graph's bindings, free dims at kUnboundDimValue; nullopt
  // when a dim is still not a whole number.
  const std::optional<std::vector<long>>& numeric_shape(TensorId t) {
    auto& shape = cache_.shapes[t];
    if (shape || cache_.shapes_known[t]) return shape;
    cache_.shapes_known[t] = 1;
    std::vector<long> dims;
    for (const GiNaC::ex& d : g_.tensor(t).shape) {
      const std::optional<long> v = dim_value(d);
      if (!v) return shape;
      dims.push_back(*v);
    }
    shape = std::move(dims);
    return shape;
  }

  // A dim after the graph's bindings, free symbols at kUnboundDimValue; nullopt when not a
  // whole number. Each distinct expression is evaluated once (tensors share a few dims).
  std::optional<long> dim_value(const GiNaC::ex& d) {
    const auto known = cache_.dim_values.find(d);
    if (known != cache_.dim_values.end()) return known->second;
    if (!unbound_) {
      unbound_.emplace();
      for (const auto& [name, sym] : g_.symbols.all())
        if (!g_.symbols.bindings().count(name)) (*unbound_)[sym] = kUnboundDimValue;
    }
    std::optional<long> out;
    const GiNaC::ex v = GiNaC::evalf(g_.symbols.substitute(d).subs(*unbound_));
    if (GiNaC::is_a<GiNaC::numeric>(v)) {
      const double x = GiNaC::ex_to<GiNaC::numeric>(v).to_double();
      if (x == std::floor(x)) out = static_cast<long>(x);
    }
    cache_.dim_values.emplace(d, out);
    return out;
  }

  // Unreachable shardings cost kImpossible: never chosen while any other candidate exists.
  double edge_bytes(const PropagationCache::Edge& e, const EdgeLayout& from, const EdgeLayout& to) {
    if (from == to) return 0;
    const auto& shape = numeric_shape(e.tensor);
    if (!shape) return kImpossible;
    const NumericRedistribution& r = memo_.plan(from.sharding(), to.sharding(), *shape, e.element_bytes);
    return r.error.empty() ? r.total_bytes : kImpossible;
  }

  Graph& g_;
  const hardware::DeviceMesh& mesh_;
  Plan& plan_;
  const std::vector<bool>& fixed_;
  const std::vector<IterationSpace>& spaces_;
  PropagationCache& cache_;
  RedistributionMemo& memo_;
  std::vector<char> decided_;
  std::vector<char> stale_;  // a neighbour's cut changed since the node's last visit
  int mesh_id_ = 0;
  std::vector<std::int64_t> key_;  // context_key's
  std::optional<GiNaC::exmap> unbound_;  // dim_value's: the graph's free symbols at kUnboundDimValue
};

}  // namespace

std::size_t PropagationCache::KeyHash::operator()(const std::vector<std::int64_t>& key) const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
  for (std::int64_t v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
  return static_cast<std::size_t>(h);
}

void propagate_cuts(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed,
                    const std::vector<IterationSpace>& spaces, PropagationCache* cache, const std::vector<NodeCut>* previous) {
  PropagationCache own;
  Propagator(graph, mesh, plan, fixed, spaces, cache ? *cache : own, previous).run();
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
  return cut_allowed(node, space, loop, numeric_extent(graph, space.loops[loop].extent), axes, mesh);
}

bool cut_allowed(const Node& node, const IterationSpace& space, int loop, std::optional<double> extent,
                 const std::vector<int>& axes, const hardware::DeviceMesh& mesh) {
  if (loop < 0 || loop >= static_cast<int>(space.loops.size())) return false;
  if (axes.empty()) return true;
  const LoopDim& dim = space.loops[loop];
  if (dim.reduction && !reduction_cut_is_partial_sum(space, loop)) return false;
  if (!dim.reduction && !loop_in_outputs(space, loop) && node.op_type != "Split") return false;
  double ways = 1;
  for (int a : axes) {
    if (a < 0 || a >= static_cast<int>(mesh.axes().size())) return false;
    ways *= mesh.axes()[a].size;
  }
  if (extent && (*extent < ways || std::fmod(*extent, ways) != 0)) return false;
  return true;
}

}  // namespace symtensor::compiler
