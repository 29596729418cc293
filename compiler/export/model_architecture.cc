#include "compiler/export/model_architecture.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "compiler/export/float_constants.h"
#include "compiler/fusion/attention_pattern.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/propagation.h"
#include "compiler/analysis/transformer_structure.h"
#include "compiler/cost/moe_load.h"

namespace symtensor::compiler {
namespace {

// The last index k of the table's geometric run from its start: v[i] / v[i - 1] equal to
// v[1] / v[0] for every i <= k (at least 1).
std::size_t geometric_run(const std::vector<double>& v) {
  std::size_t k = 1;
  while (k + 1 < v.size() && std::abs(v[k + 1] / v[k] / (v[1] / v[0]) - 1) < 1e-5) ++k;
  return k;
}

class ArchitectureReader {
 public:
  ArchitectureReader(const Graph& g, const std::vector<IterationSpace>& spaces)
      : g_(g), spaces_(spaces), s_(find_transformer_structure(g, spaces)), constants_(g.source) {
    position_.assign(g_.nodes().size(), 0);
    const std::vector<NodeId> order = g_.topological_order();
    for (std::size_t i = 0; i < order.size(); ++i) position_[order[i]] = static_cast<int>(i);
    for (NodeId a : s_.layer_anchors) anchor_positions_.push_back(position_[a]);
    std::sort(anchor_positions_.begin(), anchor_positions_.end());
  }

  ModelArchitecture read() {
    a_.layers = s_.decoder_layers();
    a_.mtp_layers = s_.prediction_layers();
    if (a_.layers > 0) {
      a_.hidden = last_dim(s_.layer_inputs.front()).value_or(0);
      if (const int region = s_.layer_norm_region(); region >= 0) read_norm(region);
    }
    read_attention();
    read_projections();
    read_embeddings();
    read_experts();
    read_mlp_layers();
    read_router();
    read_latent_attention();
    read_kv_heads();
    read_attention_variants();
    read_rotary_share();
    for (const auto& f : a_.gpt_oss_features()) a_.megatron_gaps.push_back(f + ": this export writes no flag for it");
    for (const Node& n : g_.nodes()) a_.dropout |= n.op_type == "Dropout";
    // Post-norm: the residual adds of most layers read a norm of the residual stream (of another
    // residual add's sum). Gemma's post-attention norms normalize a projection's output, not the
    // stream; a CLIP tower's one norm of its patch and position embeddings' sum is no layer's.
    int normed_stream_reads = 0;
    for (NodeId add : s_.residual_adds)
      for (TensorId in : g_.node(add).inputs) {
        const NodeId p = in == kNone ? kNone : g_.tensor(in).producer;
        const int region = p == kNone ? -1 : s_.norm_region[p];
        if (region < 0) continue;
        const NodeId normalized = g_.tensor(s_.norm_inputs.at(region)).producer;
        normed_stream_reads += std::count(s_.residual_adds.begin(), s_.residual_adds.end(), normalized) > 0;
      }
    a_.post_norm = normed_stream_reads > 0 && 2 * normed_stream_reads >= s_.layers();
    if (a_.post_norm)
      a_.megatron_gaps.push_back("post-norm layers (each norm after its residual add): Megatron-LM's transformer layer normalizes "
                                 "before attention and the MLP");
    // Megatron-Core's qk_layernorm: the per-head q/k norms, or MLA's latent norms.
    a_.qk_norm = !s_.head_norms.empty() || !s_.latent_norms.empty();
    if (a_.layers == 0) a_.unknown.push_back("transformer layers: none found in the graph");
    if (a_.heads == 0) a_.unknown.push_back("attention heads: no attention found in the graph");
    if (a_.ffn_hidden == 0) a_.unknown.push_back("MLP width: no MLP found in the graph");
    if (a_.vocab == 0) a_.unknown.push_back("vocabulary: no LM head or token embedding found in the graph");
    return a_;
  }

 private:
  std::optional<long long> extent(const GiNaC::ex& e) const {
    const auto v = g_.symbols.evaluate(e);
    if (!v) return std::nullopt;
    return std::llround(*v);
  }
  std::optional<long long> last_dim(TensorId t) const {
    const Tensor& x = g_.tensor(t);
    if (!x.shape_known || x.shape.empty()) return std::nullopt;
    return extent(x.shape.back());
  }
  std::optional<long long> loop_extent(NodeId n, int loop) const {
    if (loop < 0) return std::nullopt;
    return extent(spaces_[n].loops[loop].extent);
  }

  // The parameter a weight operand is read from, through data movement (a Transpose of a tied table).
  TensorId source_parameter(TensorId t) const {
    while (t != kNone && !g_.tensor(t).is_parameter) {
      const NodeId p = g_.tensor(t).producer;
      if (p == kNone || spaces_[p].kind != OpKind::data_movement || g_.node(p).inputs.empty()) return kNone;
      t = g_.node(p).inputs[0];
    }
    return t;
  }

  // A bias: the GEMM's output read by an Add of a parameter-derived operand.
  bool has_bias(NodeId gemm) const {
    for (NodeId c : g_.tensor(g_.node(gemm).outputs.at(0)).consumers) {
      if (g_.node(c).op_type != "Add") continue;
      for (TensorId in : g_.node(c).inputs)
        if (in != kNone && s_.weight_derived[in]) return true;
    }
    return false;
  }

  void read_norm(int region) {
    std::vector<NodeId> nodes;
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n)
      if (s_.norm_region[n] == region) nodes.push_back(n);
    for (NodeId n : nodes) {
      if (spaces_[n].kind != OpKind::normalization) continue;
      const std::string& op = g_.node(n).op_type;
      a_.norm = op.find("Simplified") != std::string::npos || op.find("RMS") != std::string::npos ? NormKind::rms_norm
                                                                                                   : NormKind::layer_norm;
      a_.norm_epsilon = g_.node(n).attr_float("epsilon", 1e-5);  // ONNX's default
      if (g_.node(n).inputs.size() > 1 && g_.node(n).inputs[1] != kNone) {
        const NodeId scale = g_.tensor(g_.node(n).inputs[1]).producer;
        a_.norm_1p = scale != kNone && adds_one_to_weight(scale);
      }
      return;
    }
    // Decomposed: the square's input is the residual stream (RMSNorm) or x - mean (LayerNorm).
    const NodeId anchor = s_.norm_anchors.at(region);
    const NodeId centred = g_.tensor(g_.node(anchor).inputs.at(0)).producer;
    a_.norm = centred != kNone && g_.node(centred).op_type == "Sub" ? NormKind::layer_norm : NormKind::rms_norm;
    for (NodeId n : nodes) {
      if (g_.node(n).op_type != "Add") continue;
      if (adds_one_to_weight(n)) {  // (1 + weight), not the epsilon
        a_.norm_1p = true;
        continue;
      }
      for (TensorId in : g_.node(n).inputs) {
        if (in == kNone || !g_.tensor(in).is_constant || s_.weight_derived[in]) continue;
        if (const auto v = constants_.values(g_.tensor(in).name, 1)) a_.norm_epsilon = v->front();
      }
    }
    if (a_.norm_epsilon == 0) a_.unknown.push_back("normalization epsilon: not a constant the graph holds");
  }

  // An Add of a weight and the constant 1: a norm's (1 + weight) scale.
  bool adds_one_to_weight(NodeId n) const {
    const Node& node = g_.node(n);
    if (node.op_type != "Add" || node.inputs.size() != 2) return false;
    bool weight = false, one = false;
    for (TensorId in : node.inputs) {
      if (in == kNone) return false;
      if (s_.weight_derived[in] && !g_.tensor(in).is_constant) {
        weight = true;
      } else if (g_.tensor(in).is_constant) {
        const auto v = constants_.values(g_.tensor(in).name, 1);
        one |= v && v->size() == 1 && v->front() == 1.0;
      }
    }
    return weight && one;
  }

  // The rotated share of a head (partial rotary): the inverse frequencies cover 2 x their
  // count of the head's dims.
  void read_rotary_share() {
    if (a_.mla || a_.position != PositionKind::rope || a_.inv_freq.empty() || a_.head_dim <= 0) return;
    const double share = 2.0 * static_cast<double>(a_.inv_freq.size()) / static_cast<double>(a_.head_dim);
    if (share < 1) a_.rotary_percent = share;
  }

  // Heads from the first attention: Q's and K's leading dims other than the batch.
  void read_attention() {
    NodeId n = kNone;
    for (NodeId x : s_.attention)
      if (n == kNone || (spaces_[x].kind == OpKind::attention && spaces_[n].kind != OpKind::attention)) n = x;
    if (n == kNone) return;
    const Node& node = g_.node(n);
    const long long q_dim = node.inputs.empty() ? 0 : last_dim(node.inputs[0]).value_or(0);
    if (const std::int64_t heads = node.attr_int("num_heads", 0); heads > 0) {  // ONNX Runtime's packed layout
      a_.heads = heads;
      a_.query_groups = node.attr_int("kv_num_heads", heads);
      a_.head_dim = q_dim / heads;
      return;
    }
    attention_node_ = n;
    const IterationSpace& space = spaces_[n];
    const int batch = loop_with_symbol(g_, space, g_.batch_dim);
    const auto heads_of = [&](int operand) -> long long {
      const Tensor& t = g_.tensor(node.inputs.at(operand));
      long long product = 1;
      for (std::size_t d = 0; d + 2 < t.shape.size(); ++d) {
        const int loop = d < space.input_dims.at(operand).size() ? space.input_dims[operand][d] : -1;
        if ((batch >= 0 && loop == batch) || (batch < 0 && d == 0)) continue;
        const auto v = extent(t.shape[d]);
        if (!v) return 0;
        product *= *v;
      }
      return product;
    };
    a_.heads = heads_of(0);
    a_.query_groups = heads_of(1);
    a_.head_dim = q_dim;
  }

  // The weight GEMMs a tensor is computed from through anything but a GEMM, an attention, a
  // softmax or a norm (data movement, rotary, a Concat after the past cache, repeat_kv), shape
  // arithmetic aside: only the data input of a Reshape, Expand, Slice, Tile, Pad or Gather is
  // followed, and no Shape or Size.
  std::set<NodeId> projections_of(TensorId t) const {
    static const std::set<std::string> data_first = {"Reshape", "Expand", "Slice", "Tile", "Pad", "Gather"};
    std::set<NodeId> gemms, seen;
    std::deque<TensorId> queue{t};
    while (!queue.empty() && seen.size() < 400) {
      const TensorId x = queue.front();
      queue.pop_front();
      if (x == kNone || s_.weight_derived[x]) continue;
      const NodeId p = g_.tensor(x).producer;
      if (p == kNone || !seen.insert(p).second) continue;
      if (s_.weight_gemm[p]) {
        gemms.insert(p);
        continue;
      }
      const Node& node = g_.node(p);
      const OpKind k = spaces_[p].kind;
      if (k == OpKind::gemm || k == OpKind::attention || k == OpKind::softmax || k == OpKind::normalization ||
          reads_dims_only(node))
        continue;
      const std::size_t follow = data_first.count(node.op_type) ? std::min<std::size_t>(1, node.inputs.size()) : node.inputs.size();
      for (std::size_t i = 0; i < follow; ++i) queue.push_back(node.inputs[i]);
    }
    return gemms;
  }

  // KV heads from the K projection, not from the attention's K operand, which PyTorch's
  // repeat_kv written as Expand + Reshape widens to every query head: the one weight GEMM K is
  // computed from, its output width over the head dim; a fused QKV GEMM (Q read from it too)
  // holds the query heads and twice the KV heads. Kept as read when K comes from no single
  // GEMM, the width does not divide so, or multi-head latent attention (its own cache).
  void read_kv_heads() {
    if (a_.mla || attention_node_ == kNone || a_.heads <= 0 || a_.head_dim <= 0) return;
    const Node& node = g_.node(attention_node_);
    if (node.inputs.size() < 2) return;
    const std::set<NodeId> k = projections_of(node.inputs[1]);
    if (k.size() != 1) return;
    const long long width = last_dim(g_.node(*k.begin()).outputs.at(0)).value_or(0);
    if (width <= 0 || width % a_.head_dim != 0) return;
    long long kv = width / a_.head_dim;
    if (projections_of(node.inputs[0]).count(*k.begin())) {  // fused QKV
      if ((kv - a_.heads) % 2 != 0) return;
      kv = (kv - a_.heads) / 2;
    }
    if (kv >= 1 && kv <= a_.heads && a_.heads % kv == 0) a_.query_groups = kv;
  }

  // Attention sinks and sliding windows: a fused attention's sinks input and window, or, in a
  // materialized graph, the Concat of a sink column before a Softmax and the window of the
  // mask added to its scores.
  void read_attention_variants() {
    for (NodeId n : s_.attention) {
      const Node& node = g_.node(n);
      if (node.op_type != "FusedAttention") continue;
      if (node.inputs.size() > 4 && node.inputs[4] != kNone) ++a_.sink_layers;
      if (const std::int64_t w = node.attr_int("window", 0); w > 0) ++a_.window_layers[w];
    }
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      if (g_.node(n).op_type != "Softmax" || !s_.in_tp_region[n]) continue;
      TensorId x = g_.node(n).inputs.at(0);
      auto producer = [&](TensorId t) -> const Node* {
        const NodeId p = g_.tensor(t).producer;
        return p == kNone ? nullptr : &g_.node(p);
      };
      if (const Node* p = producer(x); p && p->op_type == "Sub") x = p->inputs.at(0);
      if (const Node* p = producer(x); p && p->op_type == "Concat" && p->inputs.size() == 2) {
        ++a_.sink_layers;
        x = p->inputs[0];
      }
      for (int steps = 0; steps < 3; ++steps) {
        const Node* p = producer(x);
        if (!p || p->inputs.empty()) break;
        if (p->op_type == "Add" && p->inputs.size() == 2) {
          for (TensorId in : p->inputs)
            if (const auto w = sliding_window_of(g_, in)) ++a_.window_layers[*w];
          break;
        }
        x = p->inputs[0];
      }
    }
    // A YaRN table outside multi-head latent attention: frequencies not theta^(-2i/d) and cos
    // and sin scaled (yarn's attention factor; Llama 3.1's llama3 table scales neither).
    if (!a_.mla && a_.position == PositionKind::rope && a_.inv_freq.size() >= 3) {
      const std::vector<double>& v = a_.inv_freq;
      const std::size_t k = geometric_run(v);
      const bool geometric = k + 1 == v.size();
      double factor = 1;
      for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
        if (g_.node(n).op_type != "Cos") continue;
        for (NodeId c : g_.tensor(g_.node(n).outputs.at(0)).consumers)
          if (const auto f = scale_of(c)) factor = *f;
        break;
      }
      if (!geometric && std::abs(factor - 1) > 1e-6) a_.yarn_rotary_factor = factor;
      // Llama 3.1's table: the highest frequencies as theta^(-2i/d), the lowest that divided by the
      // scaling factor (the geometric continuation of the first ones over the last entry).
      if (!geometric && std::abs(factor - 1) <= 1e-6) {
        const double continued = v[k] * std::pow(v[k] / v[0], static_cast<double>(v.size() - 1 - k) / static_cast<double>(k));
        if (const double f = continued / v.back(); k >= 2 && f > 1.5) a_.llama3_rope_factor = std::round(f * 1000) / 1000;
      }
    }
  }

  // Each row GEMM and the column GEMMs that feed it: attention's output projection (an
  // attention between them) or an MLP (gated when two column GEMMs meet), dense or expert.
  void read_projections() {
    bool any_row = false;
    for (NodeId row : s_.row) {
      std::set<NodeId> columns, seen;
      bool attention = false, sigmoid = false, clamped = false, relu = false, squared = false;
      int gathers = 0;
      std::deque<NodeId> queue{row};
      while (!queue.empty()) {
        const NodeId n = queue.front();
        queue.pop_front();
        for (TensorId in : g_.node(n).inputs) {
          if (in == kNone || s_.weight_derived[in]) continue;
          const NodeId p = g_.tensor(in).producer;
          if (p == kNone || !seen.insert(p).second) continue;
          if (s_.weight_gemm[p]) {
            columns.insert(p);
          } else if (s_.in_tp_region[p]) {
            attention |= spaces_[p].kind == OpKind::attention || spaces_[p].kind == OpKind::softmax;
            sigmoid |= g_.node(p).op_type == "Sigmoid";
            clamped |= g_.node(p).op_type == "Min" || g_.node(p).op_type == "Clip";
            relu |= g_.node(p).op_type == "Relu";
            const auto& ins = g_.node(p).inputs;  // x * x (torch.square) or x ^ 2
            squared |= (g_.node(p).op_type == "Mul" && ins.size() == 2 && ins[0] == ins[1]) || g_.node(p).op_type == "Pow";
            gathers += g_.node(p).op_type == "Gather" ? 1 : 0;
            queue.push_back(p);
          }
        }
      }
      const int weight = weight_operand(g_, s_, row);
      const long long width = loop_extent(row, gemm_contraction_loop(spaces_[row])).value_or(0);
      if (attention) {
        for (NodeId c : columns) a_.qkv_bias |= has_bias(c);
        a_.linear_bias |= has_bias(row);
        if (attention_width_ == 0) attention_width_ = width;
        any_row = true;
        continue;
      }
      const bool expert = gemm_expert_loop(spaces_[row], weight) >= 0;
      (expert ? a_.moe_ffn_hidden : a_.ffn_hidden) = width;
      if (const int layer = layer_of(row); layer >= 0) (expert ? moe_width_ : dense_width_)[layer] = width;
      a_.gated_mlp |= columns.size() >= 2;
      // One column GEMM whose output is gathered twice (gate and up interleaved, gpt-oss).
      const bool interleaved = columns.size() == 1 && gathers >= 2;
      a_.gated_mlp |= interleaved;
      a_.interleaved_glu |= interleaved;
      a_.clamped_glu |= clamped;
      a_.silu |= sigmoid;
      a_.squared_relu |= columns.size() == 1 && !interleaved && relu && squared;
      a_.linear_bias |= has_bias(row);
      any_row = true;
    }
    if (!any_row) a_.linear_bias = true;  // Megatron's default when nothing says otherwise
  }

  // The layer a node belongs to: the last layer anchor at or before it; -1 before the first.
  int layer_of(NodeId n) const {
    const auto it = std::upper_bound(anchor_positions_.begin(), anchor_positions_.end(), position_[n]);
    return static_cast<int>(it - anchor_positions_.begin()) - 1;
  }

  // Per layer, a mixture of experts or a dense MLP; in a MoE layer a dense MLP beside the
  // experts is the shared experts. The dense width is the dense layers' (the experts' when
  // every layer is MoE).
  void read_mlp_layers() {
    if (moe_width_.empty()) {
      if (a_.ffn_hidden == 0) a_.ffn_hidden = a_.moe_ffn_hidden;
      return;
    }
    std::set<long long> dense, shared;
    int shared_layers = 0;
    a_.moe_layers.assign(std::max(a_.layers, 0), 0);
    for (int l = 0; l < a_.layers; ++l) {
      const bool moe = moe_width_.count(l) > 0;
      a_.moe_layers[l] = moe ? 1 : 0;
      const auto d = dense_width_.find(l);
      if (d == dense_width_.end()) continue;
      (moe ? shared : dense).insert(d->second);
      shared_layers += moe ? 1 : 0;
    }
    a_.ffn_hidden = dense.empty() ? a_.moe_ffn_hidden : *dense.rbegin();
    if (dense.size() > 1)
      a_.megatron_gaps.push_back(fmt::format("dense MLPs of widths {}: --ffn-hidden-size takes one", fmt::join(dense, ", ")));
    if (!shared.empty()) a_.shared_expert_ffn = *shared.rbegin();
    // Decoder layers only: a multi-token prediction layer after them is told apart.
    const int moe_layers = static_cast<int>(std::count(a_.moe_layers.begin(), a_.moe_layers.end(), 1));
    if (shared.size() > 1 || (shared_layers > 0 && shared_layers != moe_layers))
      a_.megatron_gaps.push_back(fmt::format("shared experts of widths {} in {} of {} MoE layers: "
                                             "--moe-shared-expert-intermediate-size gives every MoE layer one width",
                                             fmt::join(shared, ", "), shared_layers, moe_layers));
    std::set<long long> widths;
    for (const auto& [layer, w] : moe_width_) widths.insert(w);
    if (widths.size() > 1)
      a_.megatron_gaps.push_back(fmt::format("experts of widths {}: --moe-ffn-hidden-size takes one", fmt::join(widths, ", ")));
  }

  std::optional<double> scalar_constant(TensorId t) const {
    if (t == kNone || !g_.tensor(t).is_constant || s_.weight_derived[t]) return std::nullopt;
    const auto v = constants_.values(g_.tensor(t).name, 1);
    if (!v || v->size() != 1) return std::nullopt;
    return v->front();
  }
  // The float scalar that the element-wise `n` multiplies (Mul) or divides (Div, as 1/x) its other operand by.
  std::optional<double> scale_of(NodeId n) const {
    const Node& node = g_.node(n);
    if ((node.op_type != "Mul" && node.op_type != "Div") || node.inputs.size() != 2) return std::nullopt;
    for (std::size_t i = 0; i < 2; ++i) {
      const auto v = scalar_constant(node.inputs[i]);
      if (!v) continue;
      if (node.op_type == "Mul") return *v;
      if (i == 1 && *v != 0) return 1.0 / *v;
    }
    return std::nullopt;
  }
  std::optional<long long> topk_k(NodeId n) const {
    const Node& node = g_.node(n);
    if (node.op_type != "TopK" || node.inputs.size() < 2) return std::nullopt;
    const auto& k = g_.tensor(node.inputs[1]).value;
    if (!k || k->size() != 1) return std::nullopt;
    return extent(k->front());
  }
  int rank(TensorId t) const { return g_.tensor(t).shape_known ? static_cast<int>(g_.tensor(t).shape.size()) : -1; }

  // The router: a weight GEMM of one output per expert that is no expert GEMM, and the ops
  // between it and the experts (no GEMM, no routing operator): how it scores, chooses and weighs.
  void read_router() {
    if (a_.experts == 0) return;
    NodeId gate = kNone;
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      if (!s_.weight_gemm[n] || gemm_expert_loop(spaces_[n], weight_operand(g_, s_, n)) >= 0) continue;
      if (last_dim(g_.node(n).outputs.at(0)).value_or(0) != a_.experts) continue;
      if (gate == kNone || position_[n] < position_[gate]) gate = n;
    }
    if (gate == kNone) {
      a_.unknown.push_back("MoE router: no GEMM of one output per expert found");
      return;
    }
    TensorId logits = g_.node(gate).outputs.at(0);
    // A bias on the logits (gpt-oss's router is a biased linear): the logits are the Add's.
    for (NodeId c : g_.tensor(logits).consumers) {
      const Node& add = g_.node(c);
      if (add.op_type != "Add" || g_.tensor(logits).consumers.size() != 1) continue;
      for (TensorId in : add.inputs)
        if (in != kNone && in != logits && s_.weight_derived[in]) a_.router_bias = true;
      if (a_.router_bias) logits = add.outputs.at(0);
    }
    std::set<NodeId> after;
    std::deque<TensorId> queue{logits};
    while (!queue.empty() && after.size() < 400) {
      const TensorId t = queue.front();
      queue.pop_front();
      for (NodeId c : g_.tensor(t).consumers) {
        const OpKind k = spaces_[c].kind;
        if (k == OpKind::gemm || k == OpKind::routing || !after.insert(c).second) continue;
        for (TensorId out : g_.node(c).outputs) queue.push_back(out);
      }
    }
    for (NodeId c : g_.tensor(logits).consumers) {
      const std::string& op = g_.node(c).op_type;
      if (op == "Sigmoid") a_.router_score = RouterScore::sigmoid;
      else if (op == "Softmax") a_.router_score = RouterScore::pre_softmax;
      else if (op == "TopK" && a_.router_score == RouterScore::unknown) a_.router_score = RouterScore::topk_softmax;
    }
    for (NodeId n : after) {
      const Node& node = g_.node(n);
      if (node.op_type == "Add")
        for (TensorId in : node.inputs) a_.expert_bias |= in != kNone && s_.weight_derived[in];
      if (node.op_type == "Div" && !scale_of(n)) a_.router_renormalized = true;
      if (const auto v = scale_of(n); v && node.op_type == "Mul" && std::abs(*v - 1.0) > 1e-9) a_.router_scaling = *v;
      if (node.op_type == "Reshape" && rank(node.outputs.at(0)) == 4 && rank(node.inputs.at(0)) == 3) {
        const Tensor& out = g_.tensor(node.outputs.at(0));
        const auto groups = extent(out.shape[2]), each = extent(out.shape[3]);
        if (groups && each && *groups > 1 && *groups * *each == a_.experts) a_.router_groups = *groups;
      }
    }
    for (NodeId n : after) {
      const auto k = topk_k(n);
      if (!k || a_.router_groups == 0) continue;
      const TensorId in = g_.node(n).inputs.at(0);
      if (rank(in) == 4) a_.router_group_top = *k;
      else if (last_dim(in).value_or(0) == a_.router_groups) a_.router_group_topk = *k;
    }
    if (a_.router_score == RouterScore::unknown) a_.unknown.push_back("MoE router: its scoring is not one the exporter reads");
    if (a_.router_score == RouterScore::sigmoid && !a_.router_renormalized && a_.top_k > 1)
      a_.megatron_gaps.push_back("a sigmoid router whose chosen scores are not renormalized: Megatron-LM renormalizes them (top-k > 1)");
    if (a_.router_score == RouterScore::pre_softmax && a_.router_renormalized)
      a_.megatron_gaps.push_back("routing weights renormalized after a softmax over all experts: --moe-router-pre-softmax keeps them as they are");
    if (a_.expert_bias && a_.router_score != RouterScore::sigmoid)
      a_.megatron_gaps.push_back("an expert bias on softmax scores: --moe-router-enable-expert-bias needs the sigmoid score function");
    if (a_.router_groups > 0) {
      // Megatron-Core's group-limited top-k ranks a group by the sum of its best top_k / group_topk scores.
      if (a_.router_group_topk <= 0 || a_.router_group_top <= 0)
        a_.megatron_gaps.push_back(fmt::format("group-limited routing over {} groups: the groups kept or their ranking not read", a_.router_groups));
      else if (a_.top_k / a_.router_group_topk != a_.router_group_top)
        a_.megatron_gaps.push_back(fmt::format("groups ranked by their best {} scores: Megatron-LM ranks them by their best top-k / group-topk = {}/{} = {}",
                                               a_.router_group_top, a_.top_k, a_.router_group_topk, a_.top_k / a_.router_group_topk));
    }
  }

  // Multi-head latent attention: the down projections (the structure's, whole under tp) and
  // the latent norms reading them. A norm reading all of a down projection's output is the
  // query latent (q_lora_rank); one reading a slice of it is the key/value latent, the rest of
  // the output being the rotary key shared by the heads.
  void read_latent_attention() {
    if (s_.down_projections.empty()) return;
    std::set<NodeId> norms(s_.latent_norms.begin(), s_.latent_norms.end());
    std::vector<NodeId> downs = s_.down_projections;
    std::sort(downs.begin(), downs.end(), [&](NodeId x, NodeId y) { return position_[x] < position_[y]; });
    for (NodeId d : downs) {
      const long long width = last_dim(g_.node(d).outputs.at(0)).value_or(0);
      long long latent = 0;
      std::deque<TensorId> queue{g_.node(d).outputs.at(0)};
      for (int steps = 0; !queue.empty() && steps < 16 && latent == 0; ++steps) {
        const TensorId t = queue.front();
        queue.pop_front();
        for (NodeId c : g_.tensor(t).consumers) {
          if (norms.count(c)) {
            latent = last_dim(t).value_or(0);
            break;
          }
          if (spaces_[c].kind == OpKind::data_movement)
            for (TensorId out : g_.node(c).outputs) queue.push_back(out);
        }
      }
      if (latent == 0 || width == 0) continue;
      if (latent == width && a_.q_lora_rank == 0) a_.q_lora_rank = latent;
      if (latent < width && a_.kv_lora_rank == 0) a_.kv_lora_rank = latent, a_.qk_pos_head_dim = width - latent;
    }
    if (a_.kv_lora_rank == 0) {
      a_.megatron_gaps.push_back("latent projections without a key/value latent: not multi-head latent attention as Megatron-LM builds it");
      return;
    }
    a_.mla = true;
    a_.qk_head_dim = a_.head_dim - a_.qk_pos_head_dim;  // the query head: qk_head_dim + the rotary part
    if (a_.heads > 0 && attention_width_ % a_.heads == 0) a_.v_head_dim = attention_width_ / a_.heads;
    if (a_.qk_head_dim <= 0 || a_.v_head_dim <= 0)
      a_.megatron_gaps.push_back(fmt::format("multi-head latent attention's head dims (query {}, rotary {}, value of {} over {} heads) not read",
                                             a_.head_dim, a_.qk_pos_head_dim, attention_width_, a_.heads));
    read_scores_scale();
    read_mla_rotary();
  }

  // The scores' multiplier (a Mul or Div of the first attention GEMM's output by a constant,
  // or a fused attention's scale) and the factor cos and sin are multiplied by.
  void read_scores_scale() {
    for (NodeId n : s_.attention) {
      if (spaces_[n].kind == OpKind::attention) {
        // Fused: the constant by name (attention_pattern.cc); else its value, when the IR had it.
        const Node& node = g_.node(n);
        const std::string mul = node.attr_string("scale_mul", ""), div = node.attr_string("scale_div", "");
        const auto v = constants_.values(mul.empty() ? div : mul, 1);
        if (v && v->size() == 1 && v->front() != 0) a_.attention_scale = mul.empty() ? 1.0 / v->front() : v->front();
        else if (mul.empty() && div.empty()) a_.attention_scale = node.attr_float("scale", 0);
      } else {
        for (NodeId c : g_.tensor(g_.node(n).outputs.at(0)).consumers)
          if (const auto v = scale_of(c)) a_.attention_scale = *v;
      }
      break;
    }
    a_.rotary_factor = 1;
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      if (g_.node(n).op_type != "Cos") continue;
      for (NodeId c : g_.tensor(g_.node(n).outputs.at(0)).consumers)
        if (const auto v = scale_of(c)) a_.rotary_factor = *v;
      break;
    }
  }

  // Megatron-Core's MLA: rope_type rope (theta^(-2i/d), scores / sqrt(head)) or yarn (its
  // YarnRotaryEmbedding's table, cos and sin x mscale(f, mscale) / mscale(f, mscale_all_dim),
  // scores x mscale(f, mscale_all_dim)^2 / sqrt(head)). The graph's table, scale and factor
  // give theta, f and the mscales; the correction range (original context 4096, betas 32/1 in
  // Megatron-Core's MLATransformerConfig, no flag in FRAMEWORKS.md) must give the same table.
  void read_mla_rotary() {
    const std::vector<double>& v = a_.inv_freq;
    const int dim = static_cast<int>(a_.qk_pos_head_dim);
    const double head = static_cast<double>(a_.qk_head_dim + a_.qk_pos_head_dim);
    if (a_.position != PositionKind::rope || v.size() < 2 || static_cast<int>(v.size()) * 2 != dim) {
      a_.megatron_gaps.push_back(fmt::format("multi-head latent attention's rotary table ({} frequencies for a rotary part of {}): not read",
                                             v.size(), dim));
      return;
    }
    // theta from two neighbours in a pure region (the last two, interpolated, or the first
    // two, kept): the one under which the table is plain or a YaRN table of some context.
    const auto plain_of = [&](double theta) {
      return [theta, dim](std::size_t i) { return std::pow(theta, -2.0 * static_cast<double>(i) / dim); };
    };
    const auto geometric_under = [&](double theta) {
      bool g = true;
      for (std::size_t i = 0; i < v.size(); ++i) g &= std::abs(v[i] / plain_of(theta)(i) - 1) < 1e-5;
      return g;
    };
    const auto factor_under = [&](double theta) { return std::round(plain_of(theta)(v.size() - 1) / v.back() * 1e4) / 1e4; };
    const auto table_matches = [&](double theta, double original) {
      const std::vector<double> m = megatron_yarn_inv_freq(dim, theta, factor_under(theta), original, 32, 1);
      for (std::size_t i = 0; i < v.size(); ++i)
        if (std::abs(m[i] / v[i] - 1) > 1e-4) return false;
      return true;
    };
    const auto original_under = [&](double theta) -> double {  // 0: none
      if (table_matches(theta, 4096)) return 4096;
      for (double original = 2; original <= (1 << 24); original *= 2)
        if (table_matches(theta, original)) return original;
      return 0;
    };
    const std::size_t n = v.size();
    const double candidates[] = {std::round(std::pow(v[n - 1] / v[n - 2], -dim / 2.0)), std::round(std::pow(v[1] / v[0], -dim / 2.0))};
    double theta = candidates[0];
    for (double c : candidates)
      if (geometric_under(c) || original_under(c) > 0) {
        theta = c;
        break;
      }
    a_.rotary_base = theta;
    const double scale = a_.attention_scale, factor = a_.rotary_factor;
    if (scale <= 0) {
      a_.megatron_gaps.push_back("multi-head latent attention's softmax scale: not a constant the graph holds");
      return;
    }
    if (geometric_under(theta)) {
      if (std::abs(scale * std::sqrt(head) - 1) > 1e-5 || std::abs(factor - 1) > 1e-6)
        a_.megatron_gaps.push_back(fmt::format("scores x {:g} and cos/sin x {:g} without YaRN: Megatron-LM's MLA scales by 1/sqrt({}) only",
                                               scale, factor, head));
      return;
    }
    a_.yarn = true;
    const double f = factor_under(theta);
    a_.yarn_factor = f;
    if (f <= 1) {
      a_.megatron_gaps.push_back("a rotary table neither theta^(-2i/d) nor YaRN-scaled: Megatron-LM's MLA builds one of the two");
      return;
    }
    const double all = std::sqrt(scale * std::sqrt(head));  // mscale(f, mscale_all_dim)
    const double log_f = 0.1 * std::log(f);
    a_.yarn_mscale_all_dim = std::round((all - 1) / log_f * 1e4) / 1e4;
    a_.yarn_mscale = std::round((factor * all - 1) / log_f * 1e4) / 1e4;
    const double m_all = megatron_yarn_mscale(f, a_.yarn_mscale_all_dim);
    if (std::abs(m_all * m_all / std::sqrt(head) / scale - 1) > 1e-4 ||
        std::abs(megatron_yarn_mscale(f, a_.yarn_mscale) / m_all / factor - 1) > 1e-4)
      a_.megatron_gaps.push_back(fmt::format("scores x {:g} and cos/sin x {:g}: no YaRN mscales give both", scale, factor));
    if (const double original = original_under(theta); original != 4096) {
      a_.megatron_gaps.push_back(fmt::format(
          "YaRN correction range of the rotary table (original context {}): Megatron-LM's MLA uses original_max_position_embeddings "
          "4096 with beta_fast 32, beta_slow 1 (MLATransformerConfig's defaults; no flag in FRAMEWORKS.md)",
          original > 0 ? fmt::format("{} with betas 32/1", original) : std::string("none with betas 32/1")));
    }
  }

  void read_embeddings() {
    TensorId head_weight = kNone;
    if (!s_.vocab_heads.empty()) {
      const NodeId head = s_.vocab_heads.back();
      const int weight = weight_operand(g_, s_, head);
      a_.vocab = loop_extent(head, gemm_output_loop(spaces_[head], weight)).value_or(0);
      if (weight >= 0) head_weight = source_parameter(g_.node(head).inputs[weight]);
    }
    TensorId token_table = kNone;
    for (NodeId e : s_.embeddings) {
      const TensorId table = source_parameter(g_.node(e).inputs.at(0));
      // The token table read again (a multi-token prediction layer's lookup) is no position table.
      if (table == kNone || table == token_table || g_.tensor(table).shape.empty()) continue;
      const long long rows = extent(g_.tensor(table).shape.front()).value_or(0);
      if (token_table == kNone && (a_.vocab == 0 || rows == a_.vocab)) {
        token_table = table;
        if (a_.vocab == 0) a_.vocab = rows;
      } else if (rows > a_.max_positions) {
        a_.max_positions = rows;
      }
    }
    a_.tied_embeddings = token_table != kNone && token_table == head_weight;
    if (a_.max_positions > 0) {
      a_.position = PositionKind::learned_absolute;
      return;
    }
    NodeId cos = kNone;
    bool sin = false;
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      if (g_.node(n).op_type == "Cos" && cos == kNone) cos = n;
      sin |= g_.node(n).op_type == "Sin";
    }
    if (cos == kNone || !sin) {
      a_.position = PositionKind::none;
      return;
    }
    a_.position = PositionKind::rope;
    read_rotary_base(cos);
  }

  // The inverse frequencies theta^(-2i/d), i < d/2, a float constant a few steps before Cos:
  // theta from the last one (the largest exponent, the least rounding).
  void read_rotary_base(NodeId cos) {
    std::deque<std::pair<NodeId, int>> queue{{cos, 0}};
    std::set<NodeId> seen{cos};
    while (!queue.empty()) {
      const auto [n, depth] = queue.front();
      queue.pop_front();
      for (TensorId in : g_.node(n).inputs) {
        if (in == kNone) continue;
        if (g_.tensor(in).is_constant) {
          const auto v = constants_.values(g_.tensor(in).name);
          if (!v || v->size() < 2 || std::abs(v->front() - 1.0) > 1e-6 || v->back() <= 0 || v->back() >= 1) continue;
          a_.inv_freq = *v;
          // theta from the last entry of the table's geometric run (all of it unscaled; Llama 3.1's
          // and YaRN's tables scale the low frequencies, not the first, highest ones).
          const std::size_t k = geometric_run(*v);
          const double d = 2.0 * static_cast<double>(v->size());
          a_.rotary_base = std::round(std::pow((*v)[k], -d / (2.0 * static_cast<double>(k))));
          return;
        }
        const NodeId p = g_.tensor(in).producer;
        if (p != kNone && depth < 6 && seen.insert(p).second) queue.push_back({p, depth + 1});
      }
    }
    a_.unknown.push_back("rotary base: no inverse-frequency constant before the graph's Cos");
  }

  void read_experts() {
    a_.experts = expert_count(g_, spaces_, s_);
    if (a_.experts == 0) return;
    bool topk_over_experts = false;
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      const Node& node = g_.node(n);
      if ((node.op_type == "MoeDispatch" || node.op_type == "MoeCombine") && a_.top_k == 0) a_.top_k = node.attr_int("top_k", 0);
      // The TopK over all experts (a group-limited router ranks groups by TopKs first).
      if (node.op_type == "TopK" && (a_.top_k == 0 || last_dim(node.inputs.at(0)).value_or(0) == a_.experts) && !topk_over_experts &&
          node.inputs.size() > 1) {
        const auto& k = g_.tensor(node.inputs[1]).value;
        if (k && k->size() == 1) a_.top_k = extent(k->front()).value_or(0);
        topk_over_experts = last_dim(node.inputs.at(0)).value_or(0) == a_.experts;
      }
    }
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      const Node& node = g_.node(n);
      // [b, s, E, C], read as the cost model reads it (the even share is dropless).
      if (node.op_type == "MoeDispatch" && a_.capacity_factor == 0 && a_.top_k > 0) {
        const Tensor& routing = g_.tensor(node.inputs.at(0));
        if (routing.shape.size() != 4) continue;
        const auto seq = extent(routing.shape[1]), slots = extent(routing.shape[3]);
        if (seq && slots)
          a_.capacity_factor = routing_of_buffers(static_cast<double>(*seq), static_cast<double>(a_.experts),
                                                  static_cast<double>(*slots), static_cast<double>(a_.top_k));
      }
    }
    if (a_.top_k == 0) a_.unknown.push_back("MoE top-k: no routing operator states it");
  }

  const Graph& g_;
  const std::vector<IterationSpace>& spaces_;
  TransformerStructure s_;
  FloatConstants constants_;
  ModelArchitecture a_;
  std::vector<int> position_;          // per node: topological position
  std::vector<int> anchor_positions_;  // the layers' anchors, sorted
  std::map<int, long long> moe_width_, dense_width_;  // per layer: the experts' / a dense MLP's width
  long long attention_width_ = 0;      // the first attention output projection's contraction
  NodeId attention_node_ = kNone;      // the materialized or fused attention read_attention read
};

}  // namespace

ModelArchitecture read_model_architecture(const Graph& graph, const std::vector<IterationSpace>& spaces) {
  return ArchitectureReader(graph, spaces).read();
}

}  // namespace symtensor::compiler
