#include "compiler/export/model_architecture.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "compiler/export/float_constants.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/propagation.h"
#include "compiler/strategies/transformer_structure.h"

namespace symtensor::compiler {
namespace {

class ArchitectureReader {
 public:
  ArchitectureReader(const Graph& g, const std::vector<IterationSpace>& spaces)
      : g_(g), spaces_(spaces), s_(find_transformer_structure(g, spaces)), constants_(g.source) {}

  ModelArchitecture read() {
    a_.layers = s_.layers();
    if (a_.layers > 0) {
      const int region = s_.norm_region.at(s_.layer_anchors.front());
      a_.hidden = last_dim(s_.norm_inputs.at(region)).value_or(0);
      read_norm(region);
    }
    read_attention();
    read_projections();
    read_embeddings();
    read_experts();
    for (const Node& n : g_.nodes()) a_.dropout |= n.op_type == "Dropout";
    a_.qk_norm = !s_.head_norms.empty();
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
      return;
    }
    // Decomposed: the square's input is the residual stream (RMSNorm) or x - mean (LayerNorm).
    const NodeId anchor = s_.norm_anchors.at(region);
    const NodeId centred = g_.tensor(g_.node(anchor).inputs.at(0)).producer;
    a_.norm = centred != kNone && g_.node(centred).op_type == "Sub" ? NormKind::layer_norm : NormKind::rms_norm;
    for (NodeId n : nodes) {
      if (g_.node(n).op_type != "Add") continue;
      for (TensorId in : g_.node(n).inputs) {
        if (in == kNone || !g_.tensor(in).is_constant || s_.weight_derived[in]) continue;
        if (const auto v = constants_.values(g_.tensor(in).name, 1)) a_.norm_epsilon = v->front();
      }
    }
    if (a_.norm_epsilon == 0) a_.unknown.push_back("normalization epsilon: not a constant the graph holds");
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

  // Each row GEMM and the column GEMMs that feed it: attention's output projection (an
  // attention between them) or an MLP (gated when two column GEMMs meet), dense or expert.
  void read_projections() {
    bool any_row = false;
    for (NodeId row : s_.row) {
      std::set<NodeId> columns, seen;
      bool attention = false, sigmoid = false;
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
            queue.push_back(p);
          }
        }
      }
      const int weight = weight_operand(g_, s_, row);
      const long long width = loop_extent(row, gemm_contraction_loop(spaces_[row])).value_or(0);
      if (attention) {
        for (NodeId c : columns) a_.qkv_bias |= has_bias(c);
        a_.linear_bias |= has_bias(row);
        any_row = true;
        continue;
      }
      const bool expert = gemm_expert_loop(spaces_[row], weight) >= 0;
      (expert ? a_.moe_ffn_hidden : a_.ffn_hidden) = width;
      a_.gated_mlp |= columns.size() >= 2;
      a_.silu |= sigmoid;
      a_.linear_bias |= has_bias(row);
      any_row = true;
    }
    if (a_.ffn_hidden == 0) a_.ffn_hidden = a_.moe_ffn_hidden;
    if (!any_row) a_.linear_bias = true;  // Megatron's default when nothing says otherwise
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
      if (table == kNone || g_.tensor(table).shape.empty()) continue;
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
          const double d = 2.0 * static_cast<double>(v->size());
          a_.rotary_base = std::round(std::pow(v->back(), -d / (2.0 * static_cast<double>(v->size() - 1))));
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
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      const Node& node = g_.node(n);
      if ((node.op_type == "MoeDispatch" || node.op_type == "MoeCombine") && a_.top_k == 0) a_.top_k = node.attr_int("top_k", 0);
      if (node.op_type == "TopK" && a_.top_k == 0 && node.inputs.size() > 1) {
        const auto& k = g_.tensor(node.inputs[1]).value;
        if (k && k->size() == 1) a_.top_k = extent(k->front()).value_or(0);
      }
      // [b, s, E, C]: C = capacity_factor * top_k * s / E, rounded up.
      if (node.op_type == "MoeDispatch" && a_.capacity_factor == 0 && a_.top_k > 0) {
        const Tensor& routing = g_.tensor(node.inputs.at(0));
        if (routing.shape.size() != 4) continue;
        const auto seq = extent(routing.shape[1]), slots = extent(routing.shape[3]);
        if (seq && slots && *seq > 0)
          a_.capacity_factor = std::round(1000.0 * static_cast<double>(*slots * a_.experts) / static_cast<double>(a_.top_k * *seq)) / 1000;
      }
    }
    if (a_.top_k == 0) a_.unknown.push_back("MoE top-k: no routing operator states it");
  }

  const Graph& g_;
  const std::vector<IterationSpace>& spaces_;
  TransformerStructure s_;
  FloatConstants constants_;
  ModelArchitecture a_;
};

}  // namespace

std::string_view megatron_name(NormKind k) {
  switch (k) {
    case NormKind::layer_norm: return "LayerNorm";
    case NormKind::rms_norm: return "RMSNorm";
    case NormKind::unknown: break;
  }
  return "";
}

std::string_view megatron_name(PositionKind k) {
  switch (k) {
    case PositionKind::learned_absolute: return "learned_absolute";
    case PositionKind::rope: return "rope";
    case PositionKind::none: return "none";
    case PositionKind::unknown: break;
  }
  return "";
}

ModelArchitecture read_model_architecture(const Graph& graph, const std::vector<IterationSpace>& spaces) {
  return ArchitectureReader(graph, spaces).read();
}

}  // namespace symtensor::compiler
