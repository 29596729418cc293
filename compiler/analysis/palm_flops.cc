#include "compiler/analysis/palm_flops.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "compiler/analysis/model_stats.h"
#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler {
namespace {

// A table only looked up (the data operand of Gathers) costs no FLOPs per token.
bool lookup_only(const Graph& g, TensorId t) {
  const auto& consumers = g.tensor(t).consumers;
  for (NodeId c : consumers)
    if (g.node(c).op_type != "Gather" || g.node(c).inputs.at(0) != t) return false;
  return !consumers.empty();
}

// The experts each token is routed to: the fused MoE routing's top_k, 0 when unknown.
std::int64_t routed_top_k(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.op_type == "MoeDispatch" || n.op_type == "MoeCombine")
      if (const std::int64_t k = n.attr_int("top_k", 0); k > 0) return k;
  return 0;
}

// Elements of the expert GEMMs' weights (E experts stacked in each) and of the per-expert
// biases added to their outputs (gpt-oss's [E, out], through an Unsqueeze), and of them those
// one token passes through: top_k / E, or all when top_k is unknown.
struct ExpertWeights {
  double total = 0, active = 0;
};

ExpertWeights expert_weights(const Graph& g, const std::vector<IterationSpace>& spaces, const TransformerStructure& s,
                             std::int64_t top_k) {
  ExpertWeights w;
  std::set<TensorId> seen;
  for (const auto* gemms : {&s.column, &s.row})
    for (NodeId n : *gemms) {
      const int operand = weight_operand(g, s, n);
      const int loop = gemm_expert_loop(spaces[n], operand);
      if (loop < 0 || !seen.insert(g.node(n).inputs[operand]).second) continue;
      const auto experts = g.symbols.evaluate(spaces[n].loops[loop].extent);
      if (!experts || *experts <= 0) continue;
      auto add = [&](TensorId t) {
        const auto elements = g.symbols.evaluate(g.tensor(t).num_elements());
        if (!elements) return;
        w.total += *elements;
        w.active += top_k > 0 ? *elements * std::min(static_cast<double>(top_k), *experts) / *experts : *elements;
      };
      add(g.node(n).inputs[operand]);
      const TensorId out = g.node(n).outputs.at(0);
      for (NodeId c : g.tensor(out).consumers) {
        if (g.node(c).op_type != "Add") continue;
        for (TensorId b : g.node(c).inputs) {
          if (b == kNone || b == out || !s.weight_derived[b]) continue;
          // The bias parameter behind views (Unsqueeze, Reshape) of it; per expert when its
          // first dim is the experts'.
          TensorId t = b;
          for (int steps = 0; steps < 4 && !g.tensor(t).is_parameter; ++steps) {
            const NodeId p = g.tensor(t).producer;
            if (p == kNone || g.node(p).inputs.empty() || spaces[p].kind != OpKind::data_movement) break;
            t = g.node(p).inputs[0];
          }
          const Tensor& bias = g.tensor(t);
          if (!bias.is_parameter || !bias.shape_known || bias.shape.empty()) continue;
          const auto first = g.symbols.evaluate(bias.shape[0]);
          if (first && *first == *experts && seen.insert(t).second) add(t);
        }
      }
    }
  return w;
}

// The residual stream's width at the first layer.
std::optional<double> hidden_size(const Graph& g, const TransformerStructure& s) {
  const Tensor& x = g.tensor(s.layer_inputs.front());
  if (!x.shape_known || x.shape.empty()) return std::nullopt;
  return g.symbols.evaluate(x.shape.back());
}

PalmFlops not_applicable(PalmFlops f, std::string why) {
  f.per_token = 0;
  f.not_applicable = std::move(why);
  return f;
}

}  // namespace

PalmFlops palm_flops(const Graph& g, const std::vector<IterationSpace>& spaces) {
  PalmFlops f;
  f.sequence = bound_sequence_length(g);
  if (f.sequence <= 0) return not_applicable(f, "no bound sequence dim '" + g.sequence_dim + "'");
  const TransformerStructure s = find_transformer_structure(g, spaces);
  f.layers = s.layers();
  if (f.layers == 0) return not_applicable(f, "no transformer layers found");
  const auto hidden = hidden_size(g, s);
  if (!hidden) return not_applicable(f, "the hidden size is not bound");
  f.hidden = *hidden;
  double parameters = 0;
  for (TensorId t = 0; t < static_cast<TensorId>(g.tensors().size()); ++t) {
    const Tensor& tensor = g.tensor(t);
    if (!tensor.is_parameter || lookup_only(g, t)) continue;
    const auto elements = g.symbols.evaluate(tensor.num_elements());
    if (!elements) return not_applicable(f, "parameter '" + tensor.name + "' has a symbolic shape");
    parameters += *elements;
  }
  const std::int64_t top_k = routed_top_k(g);
  const ExpertWeights experts = expert_weights(g, spaces, s, top_k);
  f.all_experts = experts.total > 0 && top_k == 0;
  f.parameters = parameters - experts.total + experts.active;
  f.per_token = 6 * f.parameters + 12.0 * f.layers * f.hidden * f.sequence;
  return f;
}

PalmFlops palm_flops(Graph& graph) { return palm_flops(graph, node_iteration_spaces(graph)); }

std::optional<double> palm_mfu(const PalmFlops& f, bool train, hardware::Precision precision,
                               const hardware::Cluster& cluster, double samples_per_s) {
  if (!f.applies()) return std::nullopt;
  const double passes = train ? 1 : 1.0 / 3;
  const double peak = hardware::total_peak(cluster, precision);
  return passes * f.per_token * f.sequence * samples_per_s / peak;
}

std::string palm_mfu_label(const PalmFlops& f) {
  return f.all_experts ? "MFU (6N+12Lhs, PaLM/torchtitan; N counts every expert, top-k unknown)"
                       : "MFU (6N+12Lhs, PaLM/torchtitan)";
}

}  // namespace symtensor::compiler
