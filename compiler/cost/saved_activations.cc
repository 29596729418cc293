#include "compiler/cost/saved_activations.h"

#include <map>
#include <numeric>
#include <set>

namespace symtensor::compiler {
namespace {

bool is_activation(const Graph& g, TensorId id) {
  if (id == kNone) return false;
  const Tensor& t = g.tensor(id);
  return is_floating(t.dtype) && !t.is_parameter && !t.is_constant;
}

// What the backward keeps: weight-derived tensors are views of a weight, not copies.
bool is_saved_activation(const NumericGraph& ng, TensorId id) {
  return is_activation(ng.graph(), id) && !ng.facts(id).weight_derived;
}

// Element-wise ops whose backward needs no input: sums, negation, scaling by a constant,
// casts. Everything else element-wise needs its input (or a mask, for dropout).
bool linear_in_inputs(const Graph& g, const Node& n) {
  // Where routes gradients by its boolean condition, which is not a floating activation.
  static const std::set<std::string> linear = {"Add", "Sub", "Neg", "Identity", "Cast", "Sum", "Mean", "Where"};
  if (linear.count(n.op_type)) return true;
  if (n.op_type == "Mul" || n.op_type == "Div") {
    int variables = 0;
    for (TensorId in : n.inputs) variables += is_activation(g, in) ? 1 : 0;
    return variables <= 1 && (n.op_type == "Mul" || !is_activation(g, n.inputs.size() > 1 ? n.inputs[1] : kNone));
  }
  return false;
}

// Tensors a gradient flows back into: parameters and what is computed from them. RoPE's
// cos/sin tables, computed from positions, carry none.
std::vector<bool> carries_gradient(const NumericGraph& ng) {
  const Graph& g = ng.graph();
  std::vector<bool> carries(g.tensors().size(), false);
  for (TensorId t = 0; t < static_cast<TensorId>(g.tensors().size()); ++t)
    carries[t] = g.tensor(t).is_parameter && is_floating(g.tensor(t).dtype);
  for (NodeId id : ng.topological_order()) {
    bool any = false;
    for (TensorId in : g.node(id).inputs) any = any || (in != kNone && carries[in]);
    if (any)
      for (TensorId out : g.node(id).outputs)
        if (out != kNone) carries[out] = is_floating(g.tensor(out).dtype);
  }
  return carries;
}

// Whether an element-wise op's backward reads input i: a product's factor is read for the
// other factor's gradient, so q·cos keeps cos (small) but not q when cos carries no gradient.
bool reads_input(const Graph& g, const Node& n, std::size_t i, const std::vector<bool>& carries) {
  if (!is_activation(g, n.inputs[i])) return false;
  if ((n.op_type == "Mul" || n.op_type == "Div") && n.inputs.size() == 2) {
    const TensorId other = n.inputs[1 - i];
    if (n.op_type == "Mul") return carries[other];
    // a / b: the gradient of a reads b; that of b reads a and b.
    return i == 1 ? carries[n.inputs[0]] || carries[n.inputs[1]] : carries[n.inputs[1]];
  }
  return true;
}

struct Regions {
  std::vector<int> parent;
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

}  // namespace

std::vector<SavedTensor> saved_tensors(const NumericGraph& ng) {
  const Graph& g = ng.graph();
  const int n = static_cast<int>(g.nodes().size());
  auto elementwise = [&](NodeId id) { return ng.node(id).kind == OpKind::elementwise && g.node(id).op_type != "Dropout"; };

  // Fuse element-wise ops connected by tensors that only element-wise ops consume.
  Regions regions{std::vector<int>(n)};
  std::iota(regions.parent.begin(), regions.parent.end(), 0);
  for (TensorId t = 0; t < static_cast<TensorId>(g.tensors().size()); ++t) {
    const Tensor& tensor = g.tensor(t);
    if (tensor.producer == kNone || !elementwise(tensor.producer)) continue;
    // A region stays inside one layer (NumericGraph::node_layers): a layer's input is what the
    // layer keeps, even where the last layer's residual add feeds the next one's RMSNorm.
    bool internal = !tensor.is_graph_output;
    for (NodeId c : tensor.consumers)
      internal = internal && elementwise(c) && ng.node_layers()[c] == ng.node_layers()[tensor.producer];
    if (internal)
      for (NodeId c : tensor.consumers) regions.join(tensor.producer, c);
  }
  // A region keeps what its ops' backward reads: an external input as it is; values computed
  // inside it either themselves or through the region's inputs they come from (a fused kernel
  // recomputes the rest), whichever is smaller: GELU keeps x, not erf(x/√2) and its sum; a
  // residual add feeding an RMSNorm keeps the sum, not its two addends.
  const std::vector<bool> carries = carries_gradient(ng);
  auto inside = [&](TensorId in, NodeId id) {
    const NodeId p = in == kNone ? kNone : g.tensor(in).producer;
    return p != kNone && elementwise(p) && regions.find(p) == regions.find(id);
  };
  std::set<TensorId> read_external;
  std::map<int, std::set<TensorId>> read_internal;  // by region
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = g.node(id);
    if (!elementwise(id) || linear_in_inputs(g, node)) continue;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == kNone || !reads_input(g, node, i, carries)) continue;
      if (inside(node.inputs[i], id)) read_internal[regions.find(id)].insert(node.inputs[i]);
      else read_external.insert(node.inputs[i]);
    }
  }
  std::set<TensorId> region_keeps;
  for (const auto& [region, values] : read_internal) {
    std::set<TensorId> sources, visited;
    std::vector<TensorId> stack(values.begin(), values.end());
    while (!stack.empty()) {
      const TensorId t = stack.back();
      stack.pop_back();
      if (!visited.insert(t).second) continue;
      for (TensorId in : g.node(g.tensor(t).producer).inputs) {
        if (in == kNone || !is_saved_activation(ng, in)) continue;
        if (inside(in, region)) stack.push_back(in);
        else sources.insert(in);
      }
    }
    auto bytes = [&](const std::set<TensorId>& ts) {
      double b = 0;
      for (TensorId t : ts) b += ng.tensor_elements(t).at(1.0);
      return b;
    };
    const std::set<TensorId>& chosen = bytes(values) < bytes(sources) ? values : sources;
    region_keeps.insert(chosen.begin(), chosen.end());
  }

  std::vector<SavedTensor> saved;
  std::set<TensorId> seen;
  // Through shape-only ops back to a tensor kept already.
  auto view_of_kept = [&](TensorId t) {
    static const std::set<std::string> views = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
    for (NodeId p = g.tensor(t).producer; p != kNone && views.count(g.node(p).op_type); p = g.tensor(t).producer) {
      t = g.node(p).inputs.at(0);
      if (seen.count(t)) return true;
    }
    return false;
  };
  // Whether `t` is newly kept (by `by`).
  auto keep = [&](TensorId t, NodeId by) {
    if (!is_saved_activation(ng, t) || !seen.insert(t).second) return false;
    saved.push_back({t, by, false, ng.quadratic_in_sequence(t)});
    return true;
  };
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = g.node(id);
    switch (ng.node(id).kind) {
      case OpKind::gemm:
      case OpKind::convolution:
        for (TensorId in : node.inputs)
          if (keep(in, id)) saved.back().view_of_kept = view_of_kept(in);
        break;
      case OpKind::softmax:
        keep(node.outputs.at(0), id);
        break;
      case OpKind::attention:
        // FlashAttention keeps Q, K, V and O (with the row log-sum-exp); no score tensor.
        for (std::size_t i = 0; i < node.inputs.size() && i < 3; ++i) keep(node.inputs[i], id);
        keep(node.outputs.at(0), id);
        break;
      case OpKind::normalization:
        if (!node.inputs.empty()) keep(node.inputs[0], id);
        break;
      case OpKind::elementwise:
        if (node.op_type == "Dropout") {
          // The mask, one byte per element, stands for the node's output.
          const TensorId mask_like = node.outputs.at(0);
          if (seen.insert(-1 - mask_like).second)
            saved.push_back({mask_like, id, true, ng.quadratic_in_sequence(mask_like)});
          break;
        }
        for (TensorId in : node.inputs)
          if (in != kNone && (region_keeps.count(in) || (!inside(in, id) && read_external.count(in)))) keep(in, id);
        break;
      default:
        break;
    }
  }
  return saved;
}

bool read_from_outside_its_layer(const NumericGraph& ng, const SavedTensor& s, NodeId holder) {
  const int layer = ng.node_layers()[holder];
  if (layer < 0) return false;
  const NodeId producer = ng.graph().tensor(s.tensor).producer;
  return producer == kNone || ng.node_layers()[producer] != layer;
}

NodeId saved_tensor_holder(const Graph& g, const SavedTensor& s) {
  if (s.saved_by != kNone) return s.saved_by;
  const Tensor& t = g.tensor(s.tensor);
  return t.consumers.empty() ? kNone : t.consumers[0];
}

std::vector<SavedTensor> layer_checkpoints(const NumericGraph& ng) {
  const Graph& g = ng.graph();
  std::vector<SavedTensor> saved;
  if (ng.num_layers() > 0) {
    // Whatever the layer's normalization is made of (LayerNormalization, an exported RMSNorm's
    // Pow/ReduceMean/Sqrt/Div/Mul, none at all): each layer keeps what it reads from outside
    // itself; the operators outside the layers (embedding, final norm, head) are not
    // recomputed and keep what they would without recomputation.
    std::set<TensorId> kept;
    for (const SavedTensor& s : ng.saved_tensors()) {
      const NodeId holder = saved_tensor_holder(g, s);
      if (holder != kNone && (ng.node_layers()[holder] < 0 || read_from_outside_its_layer(ng, s, holder)))
        saved.push_back(s), kept.insert(s.tensor);
    }
    // A layer's input is kept even where no operator inside saves it as read (a layer that
    // begins with a Cast or a Reshape): the recomputation starts from it. (Tables carrying no
    // gradient, RoPE's, are kept where they are read.)
    const std::vector<bool> carries = carries_gradient(ng);
    for (NodeId id : ng.topological_order()) {
      if (ng.node_layers()[id] < 0) continue;
      for (TensorId in : g.node(id).inputs) {
        if (in == kNone || !carries[in] || !is_saved_activation(ng, in) || kept.count(in)) continue;
        SavedTensor s{in, id, false, false};
        s.layer_input_only = true;
        if (read_from_outside_its_layer(ng, s, id)) saved.push_back(s), kept.insert(in);
      }
    }
    return saved;
  }
  // Without layer scopes in the node names: the input of every other normalization (pre-norm
  // transformer layers have two), else the graph inputs.
  int norms = 0;
  for (NodeId id : ng.topological_order()) {
    if (ng.node(id).kind != OpKind::normalization) continue;
    if (norms++ % 2 == 0 && is_activation(g, g.node(id).inputs.at(0)))
      saved.push_back({g.node(id).inputs[0], id, false, false});
  }
  if (saved.empty())
    for (TensorId in : g.inputs)
      if (is_activation(g, in)) saved.push_back({in, kNone, false, false});
  return saved;
}

std::vector<SavedTensor> op_checkpoints(const NumericGraph& ng, std::vector<char>& kept_nodes) {
  const Graph& g = ng.graph();
  std::vector<SavedTensor> saved = ng.layer_checkpoints();
  kept_nodes.assign(g.nodes().size(), 0);
  auto weight_gemm = [&](NodeId id) {
    if (ng.node(id).kind != OpKind::gemm) return false;
    for (TensorId in : g.node(id).inputs)
      if (in != kNone && (ng.facts(in).parameter || ng.facts(in).weight_derived)) return true;
    return false;
  };
  std::vector<int> gemms_seen(static_cast<std::size_t>(std::max(ng.num_layers(), 0)), 0);
  for (NodeId id : ng.topological_order()) {
    const int layer = ng.node_layers()[id];
    if (layer < 0) continue;
    const bool attention = ng.node(id).kind == OpKind::attention;
    if (!attention && !(weight_gemm(id) && gemms_seen[layer]++ % 2 == 0)) continue;
    kept_nodes[id] = 1;
    for (TensorId out : g.node(id).outputs)
      if (out != kNone && is_saved_activation(ng, out)) saved.push_back({out, id, false, false});
  }
  return saved;
}

}  // namespace symtensor::compiler
