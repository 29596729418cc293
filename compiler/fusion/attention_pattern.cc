#include "compiler/fusion/attention_pattern.h"

#include <set>

#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

const Node* producer(const Graph& g, TensorId t) {
  if (t == kNone) return nullptr;
  const NodeId p = g.tensor(t).producer;
  return p == kNone ? nullptr : &g.node(p);
}

bool plain_domain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

// Read by exactly one node and not a graph output: safe to fold into a fused node.
bool internal(const Graph& g, TensorId t) {
  const Tensor& tensor = g.tensor(t);
  return !tensor.is_graph_output && tensor.consumers.size() == 1;
}

// A scalar (or one-element) constant: the attention scale.
std::optional<double> scalar_value(const Graph& g, TensorId t) {
  const Tensor& tensor = g.tensor(t);
  if (!tensor.value || tensor.value->size() != 1) return std::nullopt;
  if (!GiNaC::is_a<GiNaC::numeric>((*tensor.value)[0])) return std::nullopt;
  return GiNaC::ex_to<GiNaC::numeric>((*tensor.value)[0]).to_double();
}

bool is_constant_operand(const Graph& g, TensorId t) {
  if (t == kNone) return false;
  const Tensor& tensor = g.tensor(t);
  if (tensor.is_constant) return ops::product(tensor.shape).is_equal(1) || tensor.shape.empty();
  return false;
}

// Data paths that keep a mask's pattern: reshapes, casts, broadcasts, slices.
bool mask_passthrough(const std::string& op) {
  static const std::set<std::string> ops = {"Unsqueeze", "Squeeze", "Reshape", "Expand", "Cast", "Slice", "Identity", "Not"};
  return ops.count(op) != 0;
}

// The tensor behind unsqueezes/casts (the positions a comparison looks at).
TensorId strip_views(const Graph& g, TensorId t) {
  for (int steps = 0; steps < 8; ++steps) {
    const Node* p = producer(g, t);
    if (!p || !plain_domain(*p) || p->inputs.empty() || !mask_passthrough(p->op_type)) break;
    t = p->inputs[0];
  }
  return t;
}

// The integer values of a small constant (Slice bounds), or nullopt.
std::optional<std::vector<std::int64_t>> int_values(const Graph& g, TensorId t) {
  if (t == kNone) return std::nullopt;
  const Tensor& tensor = g.tensor(t);
  if (!tensor.value) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const GiNaC::ex& e : *tensor.value) {
    if (!GiNaC::is_a<GiNaC::numeric>(e) || !GiNaC::ex_to<GiNaC::numeric>(e).is_integer()) return std::nullopt;
    out.push_back(GiNaC::ex_to<GiNaC::numeric>(e).to_long());
  }
  return out;
}

// Slice(x, [0], [-1], [last axis]) with unit steps: the sink column dropped.
bool drops_last_column(const Graph& g, const Node& n, std::size_t rank) {
  if (n.op_type != "Slice" || !plain_domain(n) || n.inputs.size() < 3) return false;
  const auto starts = int_values(g, n.inputs[1]), ends = int_values(g, n.inputs[2]);
  if (!starts || !ends || *starts != std::vector<std::int64_t>{0} || *ends != std::vector<std::int64_t>{-1}) return false;
  if (n.inputs.size() > 3 && n.inputs[3] != kNone) {
    const auto axes = int_values(g, n.inputs[3]);
    const auto last = static_cast<std::int64_t>(rank) - 1;
    if (!axes || axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != last)) return false;
  }
  if (n.inputs.size() > 4 && n.inputs[4] != kNone && int_values(g, n.inputs[4]) != std::vector<std::int64_t>{1})
    return false;
  return true;
}

struct Chain {
  NodeId first_matmul = kNone;
  std::vector<NodeId> members;
  TensorId q = kNone, k = kNone, v = kNone, mask = kNone;
  TensorId sinks = kNone;  // gpt-oss's per-head logits, broadcastable to [B..., sq, 1]
  double scale = 1;
  TensorId scale_tensor = kNone;  // the scale's constant (its float value is not in the IR)
  bool scale_divides = false;     // the scores are divided by it
};

}  // namespace

bool is_causal_mask(const Graph& g, TensorId mask) {
  std::vector<TensorId> stack{mask};
  std::set<TensorId> seen;
  while (!stack.empty()) {
    const TensorId t = stack.back();
    stack.pop_back();
    if (t == kNone || !seen.insert(t).second || seen.size() > 32) continue;
    const Node* p = producer(g, t);
    if (!p || !plain_domain(*p)) continue;
    const std::string& op = p->op_type;
    if (op == "Trilu") return true;
    if (op == "Greater" || op == "Less" || op == "GreaterOrEqual" || op == "LessOrEqual") {
      // Positions compared with themselves along two different axes: position i vs j.
      const TensorId a = p->inputs.at(0), b = p->inputs.at(1);
      const TensorId sa = strip_views(g, a), sb = strip_views(g, b);
      const Shape& shape_a = g.tensor(a).shape;
      const Shape& shape_b = g.tensor(b).shape;
      if (sa == sb && sa != a && shape_a.size() == shape_b.size() && shape_a.size() >= 2) return true;
      const Node* ra = producer(g, sa);
      const Node* rb = producer(g, sb);
      if (ra && rb && ra->op_type == "Range" && rb->op_type == "Range") return true;
      continue;
    }
    // Where(cond, -big, 0) and the views of a mask lead to its condition.
    if (op == "Where") {
      stack.push_back(p->inputs.at(0));
    } else if (mask_passthrough(op) || op == "Mul" || op == "Sub") {
      for (TensorId in : p->inputs) stack.push_back(in);
    }
  }
  return false;
}

namespace {

// Walks back from a Softmax to the scores MatMul; nullopt when the chain is not attention.
std::optional<Chain> chain_from_softmax(const Graph& g, NodeId softmax) {
  const Node& s = g.node(softmax);
  if (s.inputs.empty() || s.outputs.empty()) return std::nullopt;
  const Shape& scores_shape = g.tensor(s.inputs[0]).shape;
  const std::size_t rank = scores_shape.size();
  if (rank < 3) return std::nullopt;
  const std::int64_t axis = s.attr_int("axis", s.opset > 0 && s.opset < 13 ? 1 : -1);
  if (axis != -1 && axis != static_cast<std::int64_t>(rank) - 1) return std::nullopt;
  Chain c;
  // Softmax's output feeds exactly one MatMul as its left operand, maybe through a
  // Dropout (FlashAttention drops inside the kernel) whose mask nobody reads.
  TensorId probs = s.outputs[0];
  if (!internal(g, probs)) return std::nullopt;
  std::optional<NodeId> dropout;
  if (const Node& d = g.node(g.tensor(probs).consumers[0]); d.op_type == "Dropout" && plain_domain(d)) {
    if (d.outputs.empty() || !internal(g, d.outputs[0])) return std::nullopt;
    for (std::size_t o = 1; o < d.outputs.size(); ++o)
      if (d.outputs[o] != kNone && (!g.tensor(d.outputs[o]).consumers.empty() || g.tensor(d.outputs[o]).is_graph_output))
        return std::nullopt;
    dropout = g.tensor(probs).consumers[0];
    probs = d.outputs[0];
  }
  // Attention sinks: the softmax ran over one more column than there are keys, dropped here.
  std::optional<NodeId> drop_sink;
  if (const Node& d = g.node(g.tensor(probs).consumers[0]); !dropout && drops_last_column(g, d, rank)) {
    if (d.outputs.empty() || !internal(g, d.outputs[0])) return std::nullopt;
    drop_sink = g.tensor(probs).consumers[0];
    probs = d.outputs[0];
  }
  const NodeId m2 = g.tensor(probs).consumers[0];
  const Node& pv = g.node(m2);
  if (pv.op_type != "MatMul" || !plain_domain(pv) || pv.inputs.at(0) != probs) return std::nullopt;
  c.v = pv.inputs.at(1);
  c.members = {softmax, m2};
  if (dropout) c.members.push_back(*dropout);
  TensorId x = s.inputs[0];
  bool max_folded = false;
  // The row max subtracted before the softmax (gpt-oss's overflow guard; softmax does it
  // anyway): Sub(a, ReduceMax(a, last axis)), a read by those two only.
  if (const Node* sub = producer(g, x); sub && internal(g, x) && sub->op_type == "Sub" && plain_domain(*sub)) {
    const TensorId a = sub->inputs.at(0);
    const Node* max = producer(g, sub->inputs.at(1));
    const Tensor& at = g.tensor(a);
    if (max && max->op_type == "ReduceMax" && plain_domain(*max) && max->inputs.at(0) == a && internal(g, sub->inputs[1]) &&
        !at.is_graph_output && at.consumers.size() == 2) {
      c.members.push_back(g.tensor(x).producer);
      c.members.push_back(g.tensor(sub->inputs[1]).producer);
      x = a;
      max_folded = true;
    }
  }
  if (drop_sink) {
    // Concat(scores, sinks) on the last axis; the sinks through their Expand to [B..., sq, 1].
    const Node* cat = producer(g, x);
    if (!cat || cat->op_type != "Concat" || !plain_domain(*cat) || cat->inputs.size() != 2 ||
        (cat->attr_int("axis", 0) != -1 && cat->attr_int("axis", 0) != static_cast<std::int64_t>(rank) - 1) ||
        g.tensor(x).is_graph_output || (!max_folded && !internal(g, x)))
      return std::nullopt;
    c.members.push_back(*drop_sink);
    c.members.push_back(g.tensor(x).producer);
    c.sinks = cat->inputs[1];
    if (const Node* e = producer(g, c.sinks); e && e->op_type == "Expand" && plain_domain(*e) && internal(g, c.sinks)) {
      c.members.push_back(g.tensor(c.sinks).producer);
      c.sinks = e->inputs.at(0);
    }
    x = cat->inputs[0];
  }
  bool scaled = false, masked = false;
  for (int steps = 0; steps < 3; ++steps) {
    if (!internal(g, x)) return std::nullopt;
    const NodeId pid = g.tensor(x).producer;
    if (pid == kNone) return std::nullopt;
    const Node& p = g.node(pid);
    if (!plain_domain(p)) return std::nullopt;
    if (p.op_type == "MatMul") {
      c.first_matmul = pid;
      c.q = p.inputs.at(0);
      c.k = p.inputs.at(1);
      c.members.push_back(pid);
      break;
    }
    if (!scaled && (p.op_type == "Div" || p.op_type == "Mul") && p.inputs.size() == 2 && is_constant_operand(g, p.inputs[1])) {
      const auto value = scalar_value(g, p.inputs[1]);
      if (value && *value != 0) c.scale = p.op_type == "Div" ? 1 / *value : *value;
      c.scale_tensor = p.inputs[1];
      c.scale_divides = p.op_type == "Div";
      scaled = true;
      x = p.inputs[0];
    } else if (!masked && p.op_type == "Add" && p.inputs.size() == 2) {
      // The scores are the operand made by the chain (a MatMul, or its scaling).
      auto on_chain = [&](TensorId t) {
        const Node* q = producer(g, t);
        return q && internal(g, t) && (q->op_type == "MatMul" || q->op_type == "Div" || q->op_type == "Mul");
      };
      if (on_chain(p.inputs[0]) == on_chain(p.inputs[1])) return std::nullopt;
      const int chain_side = on_chain(p.inputs[0]) ? 0 : 1;
      c.mask = p.inputs[1 - chain_side];
      masked = true;
      x = p.inputs[chain_side];
    } else if (!masked && p.op_type == "Where" && p.inputs.size() == 3) {
      c.mask = p.inputs[0];
      masked = true;
      x = p.inputs[1];
    } else {
      return std::nullopt;
    }
    c.members.push_back(pid);
  }
  if (c.first_matmul == kNone) return std::nullopt;
  for (TensorId t : {c.q, c.k, c.v}) {
    const Tensor& tensor = g.tensor(t);
    if (!tensor.shape_known || tensor.shape.size() != rank) return std::nullopt;
  }
  if (c.mask != kNone && g.tensor(c.mask).shape.size() > rank) return std::nullopt;
  if (c.sinks != kNone && (!g.tensor(c.sinks).shape_known || g.tensor(c.sinks).shape.size() > rank)) return std::nullopt;
  return c;
}

// `t` is GreaterOrEqual(Sub(q, k), w) or Greater(Sub(q, k), w - 1) of the same positions on
// two axes: the keys w or more positions behind the query. Returns w.
std::optional<std::int64_t> window_comparison(const Graph& g, TensorId t) {
  const Node* p = producer(g, t);
  if (!p || !plain_domain(*p) || (p->op_type != "GreaterOrEqual" && p->op_type != "Greater")) return std::nullopt;
  const Node* d = producer(g, p->inputs.at(0));
  const auto w = int_values(g, p->inputs.at(1));
  if (!d || d->op_type != "Sub" || !w || w->size() != 1) return std::nullopt;
  const TensorId a = strip_views(g, d->inputs.at(0)), b = strip_views(g, d->inputs.at(1));
  if (a != b || a == d->inputs[0]) return std::nullopt;
  const std::int64_t window = (*w)[0] + (p->op_type == "Greater" ? 1 : 0);
  return window > 0 ? std::optional<std::int64_t>(window) : std::nullopt;
}

}  // namespace

std::optional<std::int64_t> sliding_window_of(const Graph& g, TensorId mask) {
  TensorId t = mask;
  for (int steps = 0; steps < 12 && t != kNone; ++steps) {
    const Node* p = producer(g, t);
    if (!p || !plain_domain(*p) || p->inputs.empty()) return std::nullopt;
    if (p->op_type == "Where") {
      t = p->inputs[0];
    } else if (mask_passthrough(p->op_type) && p->op_type != "Not") {
      t = p->inputs[0];
    } else if (p->op_type == "Or" && p->inputs.size() == 2) {
      for (int side = 0; side < 2; ++side)
        if (const auto w = window_comparison(g, p->inputs[side]); w && is_causal_mask(g, p->inputs[1 - side])) return w;
      return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

PatternResult match_attention(const Graph& g) {
  PatternResult result;
  std::set<std::string> taken;
  for (const Node& n : g.nodes()) taken.insert(n.name);
  int causal_count = 0, grouped = 0, windowed = 0, with_sinks = 0;
  std::set<std::int64_t> windows;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id) {
    const Node& n = g.node(id);
    if (n.op_type != "Softmax" || !plain_domain(n)) continue;
    const auto chain = chain_from_softmax(g, id);
    if (!chain) continue;
    const Node& pv = g.node(chain->members[1]);
    const std::optional<std::int64_t> window = chain->mask != kNone ? sliding_window_of(g, chain->mask) : std::nullopt;
    const bool causal = window || (chain->mask != kNone && is_causal_mask(g, chain->mask));
    Node fused;
    fused.name = fused_node_name(g, g.node(chain->first_matmul), "FusedAttention", taken);
    fused.op_type = "FusedAttention";
    fused.domain = "ai.symtensor";
    fused.opset = 1;
    fused.inputs = {chain->q, chain->k, chain->v};
    if (chain->mask != kNone && !causal) fused.inputs.push_back(chain->mask);
    if (chain->sinks != kNone) {
      if (fused.inputs.size() == 3) fused.inputs.push_back(kNone);  // no mask read
      fused.inputs.push_back(chain->sinks);
      ++with_sinks;
    }
    fused.outputs = {pv.outputs.at(0)};
    fused.attributes["causal"] = std::int64_t{causal ? 1 : 0};
    if (window) {
      fused.attributes["window"] = *window;
      windows.insert(*window);
      ++windowed;
    }
    fused.attributes["scale"] = chain->scale;
    // The constant the scores were multiplied ("scale_mul") or divided ("scale_div") by, by
    // name: a float the IR holds no value of, read from the ONNX file where it matters.
    if (chain->scale_tensor != kNone)
      fused.attributes[chain->scale_divides ? "scale_div" : "scale_mul"] = g.tensor(chain->scale_tensor).name;
    causal_count += causal ? 1 : 0;
    const Shape& k = g.tensor(chain->k).shape;
    for (const auto& d : k)
      if (ops::is_one(d)) {
        ++grouped;
        break;
      }
    result.matches.push_back({chain->members, std::move(fused)});
  }
  if (!result.matches.empty()) {
    const int total = static_cast<int>(result.matches.size());
    if (windowed == 0) {
      result.detail = causal_count == total ? "causal" : causal_count == 0 ? "not causal" : std::to_string(causal_count) + " causal";
    } else {
      // Per layer type: full causal, causal in a sliding window, not causal.
      std::string sizes;
      for (std::int64_t w : windows) sizes += (sizes.empty() ? "" : "/") + std::to_string(w);
      const int full = causal_count - windowed;
      if (full > 0) result.detail = std::to_string(full) + " causal, ";
      result.detail += std::to_string(windowed) + " in a sliding window of " + sizes;
      if (causal_count < total) result.detail += ", " + std::to_string(total - causal_count) + " not causal";
    }
    if (with_sinks) result.detail += with_sinks == total ? ", attention sinks" : ", " + std::to_string(with_sinks) + " with attention sinks";
    if (grouped) result.detail += ", grouped-query";
    result.detail += "; e.g. " + result.matches.front().fused.name;
  }
  return result;
}

}  // namespace symtensor::compiler
