#include "compiler/analysis/transformer_structure.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>

namespace symtensor::compiler {
namespace {

constexpr int kRmsSearchDepth = 8;
constexpr int kHeadNormSearchDepth = 8;

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

class StructureFinder {
 public:
  StructureFinder(const Graph& g, const std::vector<IterationSpace>& spaces) : g_(g), spaces_(spaces) {
    order_ = g_.topological_order();
    position_.assign(g_.nodes().size(), 0);
    for (std::size_t i = 0; i < order_.size(); ++i) position_[order_[i]] = static_cast<int>(i);
  }

  TransformerStructure find() {
    mark_weights();
    find_norm_regions();
    find_tensor_parallel_pairs();
    find_heads_and_embeddings();
    find_layers();
    return std::move(s_);
  }

 private:
  OpKind kind(NodeId n) const { return spaces_[n].kind; }

  void mark_weights() {
    s_.weight_derived = weight_derived_tensors(g_, order_);
    s_.weight_gemm.assign(g_.nodes().size(), false);
    for (NodeId n : order_) {
      if (kind(n) != OpKind::gemm) continue;
      int weights = 0, activations = 0;
      for (TensorId t : g_.node(n).inputs) {
        if (t == kNone) continue;
        if (s_.weight_derived[t]) ++weights;
        else if (!g_.tensor(t).is_constant) ++activations;
      }
      s_.weight_gemm[n] = weights >= 1 && activations == 1;
    }
  }

  bool applies_parameter(NodeId n) const {
    if (kind(n) != OpKind::elementwise) return false;
    for (TensorId t : g_.node(n).inputs)
      if (t != kNone && s_.weight_derived[t]) return true;
    return false;
  }

  // The last dim of a tensor, when its shape is known.
  std::optional<GiNaC::ex> last_dim(TensorId t) const {
    const Tensor& x = g_.tensor(t);
    if (!x.shape_known || x.shape.empty()) return std::nullopt;
    return x.shape.back();
  }

  // Whether a normalization of `input` normalizes each head of a weight GEMM's output (Qwen3's
  // and Gemma 3's q_norm/k_norm): `input` comes from a weight GEMM through data movement
  // (Reshape to [b, s, heads, d], Transpose) and the element-wise ops applying parameters (a
  // bias), and its last dim is narrower than the GEMM's output width (one head, not the
  // hidden). A norm of the residual stream, or of a whole GEMM output (Gemma's post-attention
  // and post-MLP norms, read from o_proj and down_proj), is not one.
  // Elements over the last dim: the vectors a norm over the last dim normalizes.
  std::optional<GiNaC::ex> rows(TensorId t) const {
    const Tensor& x = g_.tensor(t);
    if (!x.shape_known || x.shape.empty()) return std::nullopt;
    GiNaC::ex n = 1;
    for (std::size_t d = 0; d + 1 < x.shape.size(); ++d) n *= x.shape[d];
    return n;
  }

  // A per-head norm reads more vectors than its GEMM wrote (its heads); a latent norm reads
  // the GEMM's output, or a slice of it along the last dim, one vector a token.
  enum class GemmNorm { none, heads, latent };

  // `gemm`: the weight GEMM whose output the norm reads (when not none).
  GemmNorm gemm_norm(TensorId input, NodeId* gemm) const {
    const auto width = last_dim(input);
    if (!width) return GemmNorm::none;
    TensorId t = input;
    for (int depth = 0; depth < kHeadNormSearchDepth; ++depth) {
      const NodeId p = g_.tensor(t).producer;
      if (p == kNone) return GemmNorm::none;
      if (s_.weight_gemm[p]) {
        *gemm = p;
        const TensorId out = g_.node(p).outputs.at(0);
        const auto gemm_width = last_dim(out);
        const auto gemm_rows = rows(out), norm_rows = rows(input);
        if (gemm_rows && norm_rows && GiNaC::expand(*gemm_rows - *norm_rows).is_zero()) return GemmNorm::latent;
        return gemm_width && !(*gemm_width - *width).is_zero() ? GemmNorm::heads : GemmNorm::none;
      }
      const auto& inputs = g_.node(p).inputs;
      if (kind(p) == OpKind::data_movement && !inputs.empty() && inputs[0] != kNone) {
        t = inputs[0];
      } else if (applies_parameter(p)) {
        TensorId activation = kNone;
        for (TensorId in : inputs)
          if (in != kNone && !s_.weight_derived[in] && !g_.tensor(in).is_constant) activation = in;
        if (activation == kNone) return GemmNorm::none;
        t = activation;
      } else {
        return GemmNorm::none;
      }
    }
    return GemmNorm::none;
  }

  // Whether `t` is read by a weight GEMM, directly or through data movement.
  bool feeds_weight_gemm(TensorId t) const {
    std::deque<TensorId> queue{t};
    for (int steps = 0; !queue.empty() && steps < kHeadNormSearchDepth * 4; ++steps) {
      const TensorId x = queue.front();
      queue.pop_front();
      for (NodeId c : g_.tensor(x).consumers) {
        if (s_.weight_gemm[c]) return true;
        if (kind(c) == OpKind::data_movement)
          for (TensorId out : g_.node(c).outputs) queue.push_back(out);
      }
    }
    return false;
  }

  // Extends a region by the element-wise ops applying parameters to its output. A per-head
  // norm is no region: it belongs to the attention block, cut over the heads like the rest;
  // nor is a latent norm, kept whole with its down projection.
  void add_region(std::vector<NodeId> nodes, TensorId input) {
    NodeId last = nodes.back();
    for (;;) {
      const auto& consumers = g_.tensor(g_.node(last).outputs.at(0)).consumers;
      if (consumers.size() != 1 || !applies_parameter(consumers[0])) break;
      last = consumers[0];
      nodes.push_back(last);
    }
    NodeId gemm = kNone;
    const GemmNorm source = gemm_norm(input, &gemm);
    if (source == GemmNorm::heads) {
      for (NodeId n : nodes) head_norm_node_[n] = true;
      s_.head_norms.insert(s_.head_norms.end(), nodes.begin(), nodes.end());
      return;
    }
    // The input read outside the norm as well is a residual stream (a multi-token prediction
    // layer's, behind its eh_proj), not a latent.
    const auto& readers = g_.tensor(input).consumers;
    const bool residual = std::any_of(readers.begin(), readers.end(),
                                      [&](NodeId c) { return std::find(nodes.begin(), nodes.end(), c) == nodes.end(); });
    if (source == GemmNorm::latent && !residual && feeds_weight_gemm(g_.node(last).outputs.at(0))) {
      for (NodeId n : nodes) head_norm_node_[n] = true;
      s_.latent_norms.insert(s_.latent_norms.end(), nodes.begin(), nodes.end());
      if (!down_projection_[gemm]) s_.down_projections.push_back(gemm);
      down_projection_[gemm] = true;
      return;
    }
    const int region = static_cast<int>(s_.norm_anchors.size());
    NodeId anchor = nodes.front();
    for (NodeId n : nodes) {
      s_.norm_region[n] = region;
      if (position_[n] < position_[anchor]) anchor = n;
    }
    s_.norm_anchors.push_back(anchor);
    s_.norm_inputs.push_back(input);
    region_output_.push_back(g_.node(last).outputs.at(0));
  }

  void find_norm_regions() {
    s_.norm_region.assign(g_.nodes().size(), -1);
    head_norm_node_.assign(g_.nodes().size(), false);
    down_projection_.assign(g_.nodes().size(), false);
    for (NodeId n : order_) {
      if (s_.norm_region[n] >= 0 || head_norm_node_[n]) continue;
      const Node& node = g_.node(n);
      if (kind(n) == OpKind::normalization) {
        add_region({n}, node.inputs.at(0));
      } else if (kind(n) == OpKind::reduction && node.op_type == "ReduceMean") {
        try_rms_norm(n);
      }
    }
  }

  // x -> square -> ReduceMean(last dim) -> ... -> M = f(x, ...): the region is square..M.
  void try_rms_norm(NodeId reduce) {
    const IterationSpace& rs = spaces_[reduce];
    if (rs.input_dims.empty() || rs.input_dims[0].empty()) return;
    const int last_loop = rs.input_dims[0].back();
    if (last_loop < 0 || !rs.loops[last_loop].reduction) return;
    const NodeId square = g_.tensor(g_.node(reduce).inputs.at(0)).producer;
    if (square == kNone || kind(square) != OpKind::elementwise) return;
    const TensorId x = g_.node(square).inputs.at(0);
    std::vector<NodeId> path{square, reduce};
    std::deque<std::pair<NodeId, int>> queue{{reduce, 0}};
    std::set<NodeId> seen{reduce};
    while (!queue.empty()) {
      auto [n, depth] = queue.front();
      queue.pop_front();
      if (depth >= kRmsSearchDepth) continue;
      for (TensorId out : g_.node(n).outputs) {
        for (NodeId c : g_.tensor(out).consumers) {
          if (!seen.insert(c).second || kind(c) != OpKind::elementwise) continue;
          path.push_back(c);
          if (contains(g_.node(c).inputs, x)) {
            add_region(path, x);
            return;
          }
          queue.push_back({c, depth + 1});
        }
      }
    }
  }

  // `t` is what a routing operator (MoE dispatch or combine, OneHot) reads as its routing
  // decision, operand 0: a router's logits reach the experts' GEMMs only through it, which
  // does not make the router a column-parallel GEMM.
  bool routing_decision(NodeId c, TensorId t) const {
    const auto& inputs = g_.node(c).inputs;
    return kind(c) == OpKind::routing && !inputs.empty() && inputs[0] == t &&
           std::count(inputs.begin() + 1, inputs.end(), t) == 0;
  }

  // Forward from `start` through nodes that are neither norm regions nor weight GEMMs (down
  // projections are passed through); returns the weight GEMMs reached; `visited` gets the
  // nodes passed through.
  std::vector<NodeId> reach_weight_gemms(TensorId start, std::set<NodeId>* visited) const {
    std::vector<NodeId> found;
    std::deque<TensorId> queue{start};
    std::set<NodeId> seen;
    while (!queue.empty()) {
      const TensorId t = queue.front();
      queue.pop_front();
      for (NodeId c : g_.tensor(t).consumers) {
        if (routing_decision(c, t) || !seen.insert(c).second || s_.norm_region[c] >= 0) continue;
        if (s_.weight_gemm[c] && !down_projection_[c]) {
          found.push_back(c);
          continue;
        }
        if (visited) visited->insert(c);
        for (TensorId out : g_.node(c).outputs) queue.push_back(out);
      }
    }
    std::sort(found.begin(), found.end(), [&](NodeId a, NodeId b) { return position_[a] < position_[b]; });
    return found;
  }

  // The column GEMMs reached from `start`, their row partners, the nodes between, and
  // whether a softmax (or fused attention) is among those: an attention block.
  struct TensorParallelPairs {
    std::set<NodeId> column, row, between;
    bool attention = false;
  };
  TensorParallelPairs pairs_from(TensorId start) const {
    TensorParallelPairs p;
    for (NodeId c : reach_weight_gemms(start, nullptr)) {
      std::set<NodeId> between;
      const std::vector<NodeId> partners = reach_weight_gemms(g_.node(c).outputs.at(0), &between);
      if (partners.empty()) continue;
      p.column.insert(c);
      p.row.insert(partners.begin(), partners.end());
      for (NodeId n : between) {
        p.between.insert(n);
        p.attention |= kind(n) == OpKind::softmax || kind(n) == OpKind::attention;
      }
    }
    return p;
  }

  // The tensor a weight GEMM's activation operand is data movement of (a Transpose, a
  // Reshape), or kNone.
  TensorId activation_source(NodeId gemm) const {
    TensorId t = kNone;
    for (TensorId in : g_.node(gemm).inputs)
      if (in != kNone && !s_.weight_derived[in] && !g_.tensor(in).is_constant) t = in;
    for (int depth = 0; t != kNone && depth < kHeadNormSearchDepth; ++depth) {
      const NodeId p = g_.tensor(t).producer;
      if (p == kNone || kind(p) != OpKind::data_movement || g_.node(p).op_type == "Concat") break;
      const TensorId in = g_.node(p).inputs.empty() ? kNone : g_.node(p).inputs[0];
      if (in == kNone || s_.weight_derived[in] || g_.tensor(in).is_constant) break;
      t = in;
    }
    return t;
  }

  void find_tensor_parallel_pairs() {
    s_.in_tp_region.assign(g_.nodes().size(), false);
    std::set<NodeId> column, row;
    auto take = [&](const TensorParallelPairs& p) {
      column.insert(p.column.begin(), p.column.end());
      row.insert(p.row.begin(), p.row.end());
      for (NodeId n : p.between) s_.in_tp_region[n] = true;
    };
    for (std::size_t r = 0; r < region_output_.size(); ++r) {
      const TensorParallelPairs p = pairs_from(region_output_[r]);
      take(p);
      if (p.attention) {
        s_.layer_anchors.push_back(s_.norm_anchors[r]);
        s_.layer_inputs.push_back(s_.norm_inputs[r]);
      }
    }
    // A post-norm first layer: an attention block that no region reaches, from the tensor its
    // column GEMMs read (the embedding), anchored at that tensor's earliest reader.
    std::set<TensorId> tried;
    for (NodeId n : order_) {
      if (!s_.weight_gemm[n] || down_projection_[n] || column.count(n) || row.count(n)) continue;
      const TensorId x = activation_source(n);
      if (x == kNone || !tried.insert(x).second) continue;
      const TensorParallelPairs p = pairs_from(x);
      const auto taken = [&](NodeId m) { return column.count(m) || row.count(m); };
      if (!p.attention || std::any_of(p.column.begin(), p.column.end(), taken) ||
          std::any_of(p.row.begin(), p.row.end(), taken))
        continue;
      take(p);
      const auto& readers = g_.tensor(x).consumers;
      s_.layer_anchors.push_back(*std::min_element(readers.begin(), readers.end(), [&](NodeId a, NodeId b) {
        return position_[a] < position_[b];
      }));
      s_.layer_inputs.push_back(x);
    }
    auto by_position = [&](const std::set<NodeId>& set) {
      std::vector<NodeId> v(set.begin(), set.end());
      std::sort(v.begin(), v.end(), [&](NodeId a, NodeId b) { return position_[a] < position_[b]; });
      return v;
    };
    s_.column = by_position(column);
    s_.row = by_position(row);
    for (NodeId n : order_)
      if (s_.in_tp_region[n] && (kind(n) == OpKind::attention || (kind(n) == OpKind::gemm && !s_.weight_gemm[n])))
        s_.attention.push_back(n);
  }

  void find_heads_and_embeddings() {
    // Nodes from which a weight GEMM is reachable, in reverse topological order.
    std::vector<bool> reaches(g_.nodes().size(), false);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      for (TensorId out : g_.node(*it).outputs)
        for (NodeId c : g_.tensor(out).consumers) reaches[*it] = reaches[*it] || s_.weight_gemm[c] || reaches[c];
    }
    for (NodeId n : order_) {
      const bool paired = std::count(s_.column.begin(), s_.column.end(), n) || std::count(s_.row.begin(), s_.row.end(), n);
      if (s_.weight_gemm[n] && !paired && !reaches[n]) s_.vocab_heads.push_back(n);
      const Node& node = g_.node(n);
      if (node.op_type == "Gather" && !node.inputs.empty() && s_.weight_derived[node.inputs[0]])
        s_.embeddings.push_back(n);
    }
  }

  void find_layers() {
    std::vector<std::size_t> index(s_.layer_anchors.size());
    for (std::size_t l = 0; l < index.size(); ++l) index[l] = l;
    std::sort(index.begin(), index.end(), [&](std::size_t a, std::size_t b) {
      return position_[s_.layer_anchors[a]] < position_[s_.layer_anchors[b]];
    });
    std::vector<NodeId> anchors;
    std::vector<TensorId> inputs;
    for (std::size_t l : index) {
      anchors.push_back(s_.layer_anchors[l]);
      inputs.push_back(s_.layer_inputs[l]);
    }
    s_.layer_anchors = std::move(anchors);
    s_.layer_inputs = std::move(inputs);
    // After a decoder layer, a residual stream that starts at a weight GEMM of concatenated
    // inputs ([enorm(embedding); hnorm(hidden)] -> eh_proj). An input projection in front of
    // the first layer is not one.
    for (std::size_t l = 1; l < s_.layer_anchors.size(); ++l) {
      const NodeId a = s_.layer_anchors[l];
      const NodeId p = g_.tensor(s_.layer_inputs.at(l)).producer;
      if (p == kNone || !s_.weight_gemm[p]) continue;
      const bool concatenated = std::any_of(g_.node(p).inputs.begin(), g_.node(p).inputs.end(), [&](TensorId in) {
        return in != kNone && g_.tensor(in).producer != kNone && g_.node(g_.tensor(in).producer).op_type == "Concat";
      });
      if (concatenated) s_.prediction_anchors.push_back(a);
      else s_.prediction_anchors.clear();  // only a trailing run of them: a decoder layer after one is none
    }
    for (TensorId x : s_.norm_inputs) {
      const NodeId p = g_.tensor(x).producer;
      if (p != kNone && g_.node(p).op_type == "Add" && !s_.in_tp_region[p] && s_.norm_region[p] < 0 &&
          !contains(s_.residual_adds, p))
        s_.residual_adds.push_back(p);
    }
  }

  const Graph& g_;
  const std::vector<IterationSpace>& spaces_;
  std::vector<NodeId> order_;
  std::vector<int> position_;
  std::vector<TensorId> region_output_;
  std::vector<bool> head_norm_node_;  // head and latent norms
  std::vector<bool> down_projection_;
  TransformerStructure s_;
};

bool maps(const std::vector<int>& dims, int loop) { return contains(dims, loop); }

}  // namespace

TransformerStructure find_transformer_structure(const Graph& graph, const std::vector<IterationSpace>& spaces) {
  return StructureFinder(graph, spaces).find();
}

int gemm_output_loop(const IterationSpace& space, int weight_input) {
  if (space.output_dims.empty() || space.output_dims[0].empty() || weight_input < 0) return -1;
  const int loop = space.output_dims[0].back();
  if (loop < 0 || space.loops[loop].reduction || !maps(space.input_dims.at(weight_input), loop)) return -1;
  return loop;
}

int gemm_contraction_loop(const IterationSpace& space) {
  // An operand that maps no reduction loop is added after the contraction (Gemm's C, the
  // bias of PyTorch's out_proj): the contraction need not index it.
  auto contracted = [&](const std::vector<int>& dims) {
    return std::any_of(dims.begin(), dims.end(), [&](int loop) { return loop >= 0 && space.loops[loop].reduction; });
  };
  for (std::size_t l = 0; l < space.loops.size(); ++l) {
    if (!space.loops[l].reduction) continue;
    bool everywhere = true;
    for (const auto& dims : space.input_dims) everywhere &= !contracted(dims) || maps(dims, static_cast<int>(l));
    if (everywhere) return static_cast<int>(l);
  }
  return -1;
}

int gemm_expert_loop(const IterationSpace& space, int weight_input) {
  if (weight_input < 0 || space.output_dims.empty()) return -1;
  for (std::size_t l = 0; l < space.loops.size(); ++l) {
    const int loop = static_cast<int>(l);
    if (space.loops[l].reduction || !maps(space.output_dims[0], loop)) continue;
    bool everywhere = true;
    for (const auto& dims : space.input_dims) everywhere &= maps(dims, loop);
    if (everywhere) return loop;
  }
  return -1;
}

int attention_heads_loop(const IterationSpace& space, int batch_loop) {
  if (space.output_dims.empty() || space.output_dims[0].size() < 3) return -1;
  // ONNX Runtime's packed attention names its heads loop (its output is [b, s, heads·d]).
  if (space.kind == OpKind::attention)
    for (std::size_t l = 0; l < space.loops.size(); ++l)
      if (space.loops[l].name == "h") return static_cast<int>(l);
  const auto& out = space.output_dims[0];
  for (std::size_t l = 0; l < space.loops.size(); ++l) {
    const int loop = static_cast<int>(l);
    if (loop == batch_loop || space.loops[l].reduction || loop == out[out.size() - 1] || loop == out[out.size() - 2]) continue;
    bool everywhere = maps(out, loop);
    // A fused attention's Q, K and V (its mask may broadcast over the heads).
    const std::size_t operands = space.kind == OpKind::attention ? 3 : space.input_dims.size();
    for (std::size_t i = 0; i < operands && i < space.input_dims.size(); ++i) everywhere &= maps(space.input_dims[i], loop);
    if (everywhere) return loop;
  }
  return -1;
}

int weight_operand(const Graph& graph, const TransformerStructure& s, NodeId node) {
  const auto& inputs = graph.node(node).inputs;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] != kNone && s.weight_derived[inputs[i]]) return static_cast<int>(i);
  return -1;
}

std::vector<int> node_stages(const Graph& graph, const std::vector<NodeId>& order, const TransformerStructure& s,
                             const std::vector<int>& layers_per_stage) {
  const int stages = static_cast<int>(layers_per_stage.size());
  std::vector<int> stage_of_layer;
  for (int st = 0; st < stages; ++st) stage_of_layer.insert(stage_of_layer.end(), layers_per_stage[st], st);
  stage_of_layer.insert(stage_of_layer.end(), s.prediction_layers(), stages - 1);
  std::vector<int> stage(graph.nodes().size(), -1);
  // An anchor starts at its layer's stage (the first layer's where it anchors several).
  for (std::size_t l = 0; l < s.layer_anchors.size(); ++l)
    if (int& st = stage[s.layer_anchors[l]]; st < 0) st = stage_of_layer.at(l);
  for (NodeId id : order) {
    int st = stage[id];
    for (TensorId t : graph.node(id).inputs)
      if (t != kNone && graph.tensor(t).producer != kNone) st = std::max(st, stage[graph.tensor(t).producer]);
    stage[id] = st;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (stage[*it] >= 0) continue;
    int st = stages - 1;
    bool any = false;
    for (TensorId t : graph.node(*it).outputs)
      for (NodeId c : graph.tensor(t).consumers) st = std::min(st, stage[c]), any = true;
    stage[*it] = any ? std::max(st, 0) : 0;
  }
  return stage;
}

}  // namespace symtensor::compiler
