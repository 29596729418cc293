#include "compiler/fusion/moe_pattern.h"

#include <deque>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

enum class RoutingRole { dispatch, combine };

struct EinsumTerms {
  std::vector<std::string> inputs;  // one term per operand
  std::string output;
};

// "bsec,bsh->bech" without spaces and ellipses, two operands; nullopt otherwise.
std::optional<EinsumTerms> einsum_terms(const Node& n) {
  std::string eq;
  for (char c : n.attr_string("equation", "")) if (c != ' ') eq += c;
  const auto arrow = eq.find("->");
  if (arrow == std::string::npos || eq.find('.') != std::string::npos) return std::nullopt;
  const std::string lhs = eq.substr(0, arrow);
  const auto comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos) return std::nullopt;
  return EinsumTerms{{lhs.substr(0, comma), lhs.substr(comma + 1)}, eq.substr(arrow + 2)};
}

// The role of routing term r = "xypq" against token term t and output o, by position:
// dispatch t = "xyz", o = "xpqz"; combine t = "xpqz", o = "xyz" (z a new letter).
std::optional<RoutingRole> routing_role(const std::string& r, const std::string& t, const std::string& o) {
  if (r.size() != 4 || std::set<char>(r.begin(), r.end()).size() != 4) return std::nullopt;
  const char x = r[0], y = r[1], p = r[2], q = r[3];
  auto fresh = [&](char z) { return r.find(z) == std::string::npos; };
  if (t.size() == 3 && o.size() == 4 && t[0] == x && t[1] == y && fresh(t[2]) && o == std::string{x, p, q, t[2]})
    return RoutingRole::dispatch;
  if (t.size() == 4 && o.size() == 3 && t[0] == x && t[1] == p && t[2] == q && fresh(t[3]) && o == std::string{x, y, t[3]})
    return RoutingRole::combine;
  return std::nullopt;
}

// The TopK that `t` is computed from (breadth first over producers, a bounded search), or kNone.
NodeId routing_top_k(const Graph& g, TensorId t) {
  constexpr std::size_t kMaxVisited = 64;
  std::deque<TensorId> queue{t};
  std::set<TensorId> seen{t};
  while (!queue.empty() && seen.size() <= kMaxVisited) {
    const NodeId p = g.tensor(queue.front()).producer;
    queue.pop_front();
    if (p == kNone) continue;
    if (g.node(p).op_type == "TopK") return p;
    for (TensorId in : g.node(p).inputs)
      if (in != kNone && !g.tensor(in).is_parameter && seen.insert(in).second) queue.push_back(in);
  }
  return kNone;
}

std::int64_t top_k_of(const Graph& g, NodeId top_k) {
  const Node& n = g.node(top_k);
  const Tensor& values = g.tensor(n.outputs.at(0));
  const Tensor& logits = g.tensor(n.inputs.at(0));
  if (!values.shape_known || !logits.shape_known || values.shape.empty()) return 0;
  const int axis = ops::normalize_axis(n.attr_int("axis", -1), values.shape.size());
  return ops::as_int(values.shape[axis]).value_or(0);
}

// Group-limited routing upstream of the expert TopK `top` (DeepSeek-V3's n_group / topk_group:
// a TopK over [.., groups] group scores picks the groups its experts may come from): {groups,
// groups picked}, or {0, 0}.
std::pair<std::int64_t, std::int64_t> group_limit(const Graph& g, NodeId top, std::int64_t experts) {
  constexpr std::size_t kMaxVisited = 64;
  std::deque<TensorId> queue;
  std::set<TensorId> seen;
  for (TensorId in : g.node(top).inputs)
    if (in != kNone && seen.insert(in).second) queue.push_back(in);
  while (!queue.empty() && seen.size() <= kMaxVisited) {
    const NodeId p = g.tensor(queue.front()).producer;
    queue.pop_front();
    if (p == kNone) continue;
    const Node& n = g.node(p);
    if (n.op_type == "TopK" && p != top && !n.inputs.empty() && n.inputs[0] != kNone &&
        g.tensor(n.inputs[0]).shape_known && g.tensor(n.inputs[0]).shape.size() == 3) {
      const Tensor& scores = g.tensor(n.inputs[0]);
      const std::int64_t groups = ops::as_int(scores.shape.back()).value_or(0), picked = top_k_of(g, p);
      if (groups > 1 && groups < experts && experts % groups == 0 && picked > 0 && picked < groups) return {groups, picked};
    }
    for (TensorId in : n.inputs)
      if (in != kNone && !g.tensor(in).is_parameter && seen.insert(in).second) queue.push_back(in);
  }
  return {0, 0};
}

}  // namespace

PatternResult match_moe(const Graph& g) {
  PatternResult result;
  std::set<std::string> taken;
  for (const Node& n : g.nodes()) taken.insert(n.name);
  int dispatches = 0;
  std::int64_t top_k = 0, experts = 0;
  GiNaC::ex capacity = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id) {
    const Node& n = g.node(id);
    if (n.op_type != "Einsum" || !(n.domain.empty() || n.domain == "ai.onnx") || n.inputs.size() != 2) continue;
    const auto terms = einsum_terms(n);
    if (!terms) continue;
    for (int r = 0; r < 2; ++r) {
      const TensorId routing = n.inputs[r], tokens = n.inputs[1 - r];
      const auto role = routing_role(terms->inputs[r], terms->inputs[1 - r], terms->output);
      if (!role || !g.tensor(routing).shape_known) continue;
      const NodeId top = routing_top_k(g, routing);
      if (top == kNone) continue;
      const bool dispatch = *role == RoutingRole::dispatch;
      Node fused;
      fused.name = fused_node_name(g, n, dispatch ? "MoeDispatch" : "MoeCombine", taken);
      fused.op_type = dispatch ? "MoeDispatch" : "MoeCombine";
      fused.domain = "ai.symtensor";
      fused.opset = 1;
      fused.inputs = {routing, tokens};
      fused.outputs = n.outputs;
      fused.attributes["equation"] = terms->inputs[r] + "," + terms->inputs[1 - r] + "->" + terms->output;
      const std::int64_t k = top_k_of(g, top);
      if (k > 0) fused.attributes["top_k"] = k;
      const auto [groups, picked] = group_limit(g, top, ops::as_int(g.tensor(routing).shape[2]).value_or(0));
      if (groups > 0) fused.attributes["expert_groups"] = groups, fused.attributes["top_groups"] = picked;
      if (dispatch) {
        ++dispatches;
        const Shape& shape = g.tensor(routing).shape;
        top_k = k, experts = ops::as_int(shape[2]).value_or(0), capacity = shape[3];
      }
      result.matches.push_back({{id}, std::move(fused)});
      break;
    }
  }
  if (!result.matches.empty()) {
    std::ostringstream count, detail;
    count << dispatches << " layers";
    detail << "top-" << top_k << " of " << experts << " experts, capacity " << capacity
           << " tokens per expert and sequence; dispatch/combine einsums as MoeDispatch/MoeCombine";
    detail << "; e.g. " << result.matches.front().fused.name;
    result.count = count.str();
    result.detail = detail.str();
  }
  return result;
}

}  // namespace symtensor::compiler
