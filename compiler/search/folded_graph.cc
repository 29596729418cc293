#include "compiler/search/folded_graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace symtensor::compiler {

bool is_heavy(OpKind kind) { return kind == OpKind::gemm || kind == OpKind::convolution || kind == OpKind::routing; }

namespace {

bool is_activation(const Tensor& t) { return t.producer != kNone && !t.is_constant && !t.is_parameter; }

int output_index(const Node& n, TensorId t) {
  return static_cast<int>(std::find(n.outputs.begin(), n.outputs.end(), t) - n.outputs.begin());
}

class Folder {
 public:
  explicit Folder(const NumericGraph& ng) : ng_(ng), g_(ng.graph()) {}

  FoldedGraph run() {
    f_.heavy_index.assign(g_.nodes().size(), -1);
    for (NodeId id : g_.topological_order())
      if (is_heavy(ng_.node(id).kind)) {
        f_.heavy_index[id] = static_cast<int>(f_.heavy.size());
        f_.heavy.push_back(id);
      }
    for (int h = 0; h < static_cast<int>(f_.heavy.size()); ++h) {
      const Node& node = g_.node(f_.heavy[h]);
      const IterationSpace& space = ng_.node(f_.heavy[h]).space;
      for (std::size_t i = 0; i < node.inputs.size() && i < space.input_dims.size(); ++i) {
        const TensorId t = node.inputs[i];
        if (t == kNone || !is_activation(g_.tensor(t))) continue;
        std::vector<int> map(g_.tensor(t).shape.size());
        for (std::size_t d = 0; d < map.size(); ++d) map[d] = static_cast<int>(d);
        walk(h, static_cast<int>(i), t, map, true, 0, 0);
      }
    }
    std::map<std::pair<int, int>, int> fanout;
    for (const auto& e : f_.edges) ++fanout[{e.from, e.from_output}];
    for (auto& e : f_.edges) e.share = 1.0 / fanout[{e.from, e.from_output}];
    return std::move(f_);
  }

 private:
  // `map`: consumer input dim -> dim of tensor t (or -1).
  void walk(int consumer, int input, TensorId t, const std::vector<int>& map, bool linear, int depth, int joins) {
    const NodeId p = g_.tensor(t).producer;
    const Node& pn = g_.node(p);
    const int o = output_index(pn, t);
    if (f_.heavy_index[p] >= 0) {
      const auto key = std::make_tuple(f_.heavy_index[p], o, consumer, input);
      if (!seen_.insert(key).second) return;
      f_.edges.push_back({f_.heavy_index[p], consumer, o, input, map, linear, 1});
      return;
    }
    if (depth >= kMaxFoldedDepth) return;
    const NumericNode& nn = ng_.node(p);
    if (o >= static_cast<int>(nn.space.output_dims.size())) return;
    const auto& out_dims = nn.space.output_dims[o];
    int activation_inputs = 0;
    for (TensorId in : pn.inputs)
      if (in != kNone && is_activation(g_.tensor(in))) ++activation_inputs;
    const int next_joins = joins + (activation_inputs > 1 ? 1 : 0);
    if (next_joins > 1) return;
    const bool keeps_linear = linear && nn.kind == OpKind::data_movement;
    for (std::size_t j = 0; j < pn.inputs.size() && j < nn.space.input_dims.size(); ++j) {
      const TensorId in = pn.inputs[j];
      if (in == kNone || !is_activation(g_.tensor(in))) continue;
      const auto& in_dims = nn.space.input_dims[j];
      std::vector<int> next(map.size(), -1);
      for (std::size_t d = 0; d < map.size(); ++d) {
        if (map[d] < 0 || map[d] >= static_cast<int>(out_dims.size())) continue;
        const int loop = out_dims[map[d]];
        if (loop < 0) continue;
        if (nn.space.loops[loop].reduction) continue;
        for (std::size_t k = 0; k < in_dims.size(); ++k)
          if (in_dims[k] == loop) { next[d] = static_cast<int>(k); break; }
      }
      walk(consumer, input, in, next, keeps_linear, depth + 1, next_joins);
    }
  }

  const NumericGraph& ng_;
  const Graph& g_;
  FoldedGraph f_;
  std::set<std::tuple<int, int, int, int>> seen_;
};

}  // namespace

FoldedGraph fold_graph(const NumericGraph& ng) { return Folder(ng).run(); }

}  // namespace symtensor::compiler
