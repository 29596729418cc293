#include "compiler/search/level_problem.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "compiler/cost/kernel_precision.h"
#include "compiler/ir/element_type.h"
#include "compiler/sharding/cut_sharding.h"
#include "hardware/collectives.h"

namespace symtensor::compiler {
namespace {

using hardware::Collective;

// Mixed-precision Adam: 2 (weights) + 2 (gradients) + 12 (fp32 master, momentum, variance).
constexpr double kStateBytesPerParameter = 16;

bool loop_in_outputs(const IterationSpace& space, int loop) {
  for (const auto& dims : space.output_dims)
    if (std::find(dims.begin(), dims.end(), loop) != dims.end()) return true;
  return false;
}

class LevelBuilder {
 public:
  LevelBuilder(const LevelContext& ctx, int axis, const std::vector<NodeCut>& cuts)
      : c_(ctx), g_(ctx.ng->graph()), axis_(axis), n_(ctx.mesh->axes().at(axis).size), cuts_(cuts) {
    const std::vector<int> one{axis};
    group_ = ctx.mesh->group_shape(one);
    act_bytes_ = activation_bytes(ctx.precision);
    edged_.resize(ctx.folded->heavy.size());
    for (const FoldedEdge& e : ctx.folded->edges) {
      std::vector<bool>& outputs = edged_[e.from];
      if (outputs.size() <= static_cast<std::size_t>(e.from_output)) outputs.resize(e.from_output + 1, false);
      outputs[e.from_output] = true;
    }
  }

  // Operators of one class (identical in every repeated layer) get their choices priced
  // once, and edges between the same classes their cost matrix.
  CutProblem run() {
    CutProblem p;
    const auto& heavy = c_.folded->heavy;
    cut_with_.resize(heavy.size());
    std::vector<int> class_of(heavy.size());
    std::map<std::string, int> classes;
    std::string key;
    key.reserve(1024);
    std::vector<const std::vector<CutChoice>*> priced;  // per class
    p.nodes.resize(heavy.size());
    for (std::size_t h = 0; h < heavy.size(); ++h) {
      CutProblemNode& node = p.nodes[h];
      const NodeId id = heavy[h];
      node.name = g_.node(id).name;
      node.weight = c_.ng->node(id).flops.at(c_.micro_batch);
      signature(static_cast<int>(h), key);
      const auto [it, fresh] = classes.try_emplace(key, static_cast<int>(classes.size()));
      class_of[h] = it->second;
      if (fresh) {
        node.choices.push_back(choice(static_cast<int>(h), -1));
        for (int l = 0; l < static_cast<int>(c_.ng->node(id).loops.size()); ++l)
          if (allowed(static_cast<int>(h), l)) node.choices.push_back(choice(static_cast<int>(h), l));
        priced.push_back(&node.choices);
      } else {
        node.choices = *priced[it->second];
      }
    }
    std::map<std::tuple<int, int, int, int, double, std::vector<int>>, const std::vector<std::vector<double>>*> matrices;
    p.edges.reserve(c_.folded->edges.size());
    for (const FoldedEdge& e : c_.folded->edges) {
      CutProblemEdge& edge = p.edges.emplace_back();
      edge.from = e.from;
      edge.to = e.to;
      const auto [it, fresh] =
          matrices.try_emplace({class_of[e.from], class_of[e.to], e.from_output, e.to_input, e.share, e.dim_map}, nullptr);
      if (!fresh) {
        edge.cost = *it->second;
        continue;
      }
      edge.cost.assign(p.nodes[e.from].choices.size(), std::vector<double>(p.nodes[e.to].choices.size(), 0.0));
      for (std::size_t a = 0; a < p.nodes[e.from].choices.size(); ++a)
        for (std::size_t b = 0; b < p.nodes[e.to].choices.size(); ++b)
          edge.cost[a][b] = edge_cost(e, p.nodes[e.from].choices[a].loop, p.nodes[e.to].choices[b].loop);
      it->second = &edge.cost;  // p.edges was reserved: the address stays
    }
    return p;
  }

 private:
  template <class T>
  static void put(std::string& key, const T& value) {
    key.append(reinterpret_cast<const char*>(&value), sizeof value);
  }

  // Everything choice() and allowed() read of heavy operator h: two operators with the
  // same signature have the same choices at the same costs.
  void signature(int h, std::string& key) const {
    const NodeId id = c_.folded->heavy[h];
    const Node& node = g_.node(id);
    const NumericNode& nn = c_.ng->node(id);
    key.clear();
    put(key, nn.kind);
    put(key, nn.flops.at(c_.micro_batch));
    put(key, nn.loops.size());
    for (std::size_t l = 0; l < nn.loops.size(); ++l) {
      put(key, nn.loops[l].reduction);
      put(key, nn.loops[l].extent.at(c_.micro_batch));
      key += nn.space.loops[l].name;
      key += '\0';
    }
    for (const auto* maps : {&nn.space.input_dims, &nn.space.output_dims}) {
      put(key, maps->size());
      for (const auto& dims : *maps) {
        put(key, dims.size());
        for (int d : dims) put(key, d);
      }
    }
    const NodeCut& cut = cuts_[h];
    put(key, cut.loop_axes.size());
    for (const auto& axes : cut.loop_axes) {
      put(key, axes.size());
      for (int a : axes) put(key, a);
    }
    for (const auto* tensors : {&node.inputs, &node.outputs}) {
      put(key, tensors->size());
      for (TensorId t : *tensors) {
        put(key, t == kNone);
        if (t == kNone) continue;
        const TensorFacts& f = c_.ng->facts(t);
        put(key, f.elements.at(c_.micro_batch));
        put(key, element_bytes(t));
        put(key, f.needs_gradient);
        put(key, f.parameter);
        put(key, f.graph_output);
      }
    }
    for (std::size_t o = 0; o < node.outputs.size(); ++o) put(key, edged(h, static_cast<int>(o)));
  }

  // Whether an edge carries output o of heavy operator h to a heavy consumer (which prices
  // its redistribution, a partial sum's reduction included).
  bool edged(int h, int o) const {
    const std::vector<bool>& outputs = edged_[h];
    return o < static_cast<int>(outputs.size()) && outputs[o];
  }

  double ways(const std::vector<int>& axes) const {
    double w = 1;
    for (int a : axes) w *= c_.mesh->axes()[a].size;
    return w;
  }

  // Heavy operator h's cut with this level's axis on `loop` (-1: not cut), made when first
  // asked for: only the operators that price a class's choices or edges need theirs.
  const NodeCut& with_axis(int h, int loop) const {
    std::vector<NodeCut>& cuts = cut_with_[h];
    if (cuts.empty()) {
      const int loops = static_cast<int>(c_.ng->node(c_.folded->heavy[h]).loops.size());
      for (int l = -1; l < loops; ++l) cuts.push_back(make_cut_with_axis(h, l));
    }
    return cuts[loop + 1];
  }

  NodeCut make_cut_with_axis(int h, int loop) const {
    NodeCut cut = cuts_[h];
    cut.loop_axes.resize(c_.ng->node(c_.folded->heavy[h]).loops.size());
    if (loop >= 0) cut.loop_axes[loop].push_back(axis_);
    return cut;
  }

  bool allowed(int h, int loop) const {
    const NumericNode& nn = c_.ng->node(c_.folded->heavy[h]);
    const NumericLoop& l = nn.loops[loop];
    if (l.reduction && !reduction_cut_is_partial_sum(nn.space, loop)) return false;
    if (!l.reduction && !loop_in_outputs(nn.space, loop)) return false;
    const auto& prior = loop < static_cast<int>(cuts_[h].loop_axes.size()) ? cuts_[h].loop_axes[loop] : std::vector<int>{};
    const double w = ways(prior) * n_;
    const double extent = l.extent.at(c_.micro_batch);
    return extent >= w && std::fmod(extent, w) == 0;
  }

  double element_bytes(TensorId t) const {
    const TensorFacts& f = c_.ng->facts(t);
    return f.floating ? act_bytes_ : static_cast<double>(f.element_size);
  }

  double local_bytes(TensorId t, const OperandLayout& s) const {
    return c_.ng->facts(t).elements.at(c_.micro_batch) / s.ways(*c_.mesh) * element_bytes(t);
  }

  // Bytes of t with this level's axis removed from its sharding (the collective's S).
  double bytes_without_axis(TensorId t, const OperandLayout& s) const {
    return local_bytes(t, s) * (s.dim_of(axis_) >= 0 ? n_ : 1);
  }

  // Priced once per (kind, bytes): repeated layers ask the same.
  double coll(Collective kind, double bytes) const {
    if (bytes <= 0 || n_ <= 1) return 0;
    const auto [it, fresh] = priced_.try_emplace({static_cast<int>(kind), bytes}, 0.0);
    if (fresh) it->second = hardware::collective_time(*c_.cluster, kind, group_, bytes).seconds;
    return it->second;
  }

  bool needs_gradient(TensorId t) const { return c_.ng->facts(t).needs_gradient; }

  CutChoice choice(int h, int loop) const {
    const NodeId id = c_.folded->heavy[h];
    const Node& node = g_.node(id);
    const NumericNode& nn = c_.ng->node(id);
    const NodeCut& cut = with_axis(h, loop);
    CutChoice ch;
    ch.loop = loop;
    ch.label = loop < 0 ? "-" : nn.space.loops[loop].name;
    const double m = c_.micro_batches;
    const double flops = nn.flops.at(c_.micro_batch) / cut_ways(cut, *c_.mesh);
    double bytes = 0, state = 0, activation_comm = 0, param_sync = 0;
    int gradient_inputs = 0;
    for (std::size_t i = 0; i < node.inputs.size() && i < nn.space.input_dims.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNone) continue;
      const OperandLayout s = OperandLayout::input(nn.space, cut, static_cast<int>(i));
      const double b = local_bytes(t, s);
      bytes += b;
      if (!c_.train || !needs_gradient(t)) continue;
      ++gradient_inputs;
      const bool partial = OperandLayout::input_gradient(nn.space, cut, static_cast<int>(i)).is_partial(axis_);
      if (c_.ng->facts(t).parameter) {
        state += b / element_bytes(t) * kStateBytesPerParameter;
        if (partial) param_sync += coll(Collective::all_reduce, b / element_bytes(t) * 2);
      } else if (partial) {
        activation_comm += coll(Collective::all_reduce, b);
      }
    }
    for (std::size_t o = 0; o < node.outputs.size() && o < nn.space.output_dims.size(); ++o) {
      const TensorId t = node.outputs[o];
      if (t == kNone) continue;
      const OperandLayout s = OperandLayout::output(nn.space, cut, static_cast<int>(o));
      const double b = local_bytes(t, s);
      bytes += b;
      state += b * std::min<double>(m, 1);
      // A partial sum no edge reduces (a graph output, or one that only cheap operators read:
      // the LM head's logits before the loss) is all-reduced where it is read.
      if (s.is_partial(axis_) && (c_.ng->facts(t).graph_output || !edged(h, static_cast<int>(o))))
        activation_comm += coll(Collective::all_reduce, b);
    }
    const hardware::Device& dev = c_.cluster->device;
    const hardware::Precision precision = kernel_precision(*c_.ng, id, c_.precision);
    double compute = dev.kernel_seconds(precision, flops, bytes);
    if (c_.train && gradient_inputs > 0)
      compute += dev.kernel_seconds(precision, flops * gradient_inputs, bytes * (1 + gradient_inputs));
    ch.cost = m * (compute + activation_comm) + param_sync + c_.memory_weight * state;
    return ch;
  }

  double edge_cost(const FoldedEdge& e, int from_loop, int to_loop) const {
    const NodeId p = c_.folded->heavy[e.from], q = c_.folded->heavy[e.to];
    const OperandLayout out = OperandLayout::output(c_.ng->node(p).space, with_axis(e.from, from_loop), e.from_output);
    const OperandLayout want = OperandLayout::input(c_.ng->node(q).space, with_axis(e.to, to_loop), e.to_input);
    const TensorId t = g_.node(q).inputs[e.to_input];
    const double full = bytes_without_axis(t, want);
    const int have_dim = out.dim_of(axis_);
    const int want_dim = want.dim_of(axis_);
    const int mapped = want_dim >= 0 && want_dim < static_cast<int>(e.dim_map.size()) ? e.dim_map[want_dim] : -1;
    const bool back = c_.train;
    double fwd = 0, bwd = 0;
    if (out.is_partial(axis_)) {
      if (want_dim >= 0 && mapped >= 0) fwd = coll(Collective::reduce_scatter, full), bwd = coll(Collective::all_gather, full);
      else fwd = coll(Collective::all_reduce, full);
    } else if (have_dim < 0) {
      if (want_dim >= 0) bwd = coll(Collective::all_gather, full);  // slice; its dual gathers the gradient
    } else if (want_dim >= 0 && mapped == have_dim) {
      // same layout
    } else if (want_dim >= 0 && mapped >= 0) {
      fwd = bwd = coll(Collective::all_to_all, full / n_);
    } else {
      fwd = coll(Collective::all_gather, full), bwd = coll(Collective::reduce_scatter, full);
      if (want_dim >= 0) bwd += coll(Collective::all_gather, full);
    }
    return c_.micro_batches * (fwd + (back ? bwd : 0)) * e.share;
  }

  const LevelContext& c_;
  const Graph& g_;
  int axis_;
  int n_;
  const std::vector<NodeCut>& cuts_;
  hardware::GroupShape group_;
  mutable std::vector<std::vector<NodeCut>> cut_with_;  // with_axis', per heavy operator (index loop + 1)
  std::vector<std::vector<bool>> edged_;                // per heavy operator, per output: edged()
  double act_bytes_ = 2;
  mutable std::map<std::pair<int, double>, double> priced_;  // coll's
};

}  // namespace

CutProblem build_level_problem(const LevelContext& ctx, int axis, const std::vector<NodeCut>& cuts) {
  return LevelBuilder(ctx, axis, cuts).run();
}

void apply_level_solution(const CutProblem& problem, const std::vector<int>& choice, int axis, std::vector<NodeCut>& cuts) {
  for (std::size_t h = 0; h < problem.nodes.size(); ++h) {
    const int loop = problem.nodes[h].choices.at(choice.at(h)).loop;
    if (loop < 0) continue;
    if (cuts[h].loop_axes.size() <= static_cast<std::size_t>(loop)) cuts[h].loop_axes.resize(loop + 1);
    cuts[h].loop_axes[loop].push_back(axis);
  }
}

}  // namespace symtensor::compiler
