#include "compiler/onnx_import/merged_heads.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/ir/empty_like.h"
#include "compiler/ops/op_helpers.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {
namespace {

bool merged_plain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

bool merged_unread(const Graph& g, TensorId t) {
  return t == kNone || (g.tensor(t).consumers.empty() && !g.tensor(t).is_graph_output);
}

// Operators that apply element by element with numpy broadcasting.
bool merged_pointwise(const std::string& op) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Cast", "Identity", "Neg", "Exp",
                                            "Sqrt", "Reciprocal", "Relu", "Tanh", "Sigmoid", "Erf", "Not", "Equal"};
  return ops.count(op) != 0;
}

// A Reshape [A, B, E] -> [A, B*H, D] with H = E / D an integer > 1: its B and H.
struct MergedSplit {
  GiNaC::ex outer;  // B
  std::int64_t heads = 0;
};

std::optional<MergedSplit> merged_split_of(const Graph& g, const Node& n) {
  if (n.op_type != "Reshape" || !merged_plain(n) || n.inputs.size() < 2 || n.outputs.empty()) return std::nullopt;
  const Tensor& in = g.tensor(n.inputs[0]);
  const Tensor& out = g.tensor(n.outputs[0]);
  if (!in.shape_known || !out.shape_known || in.shape.size() != 3 || out.shape.size() != 3) return std::nullopt;
  if (!ops::same_extent(in.shape[0], out.shape[0])) return std::nullopt;
  const auto heads = ops::as_int(ops::simplify(out.shape[1] / in.shape[1]));
  if (!heads || *heads < 2) return std::nullopt;
  if (!ops::same_extent(out.shape[2] * GiNaC::numeric(static_cast<long>(*heads)), in.shape[2])) return std::nullopt;
  return MergedSplit{in.shape[1], *heads};
}

class MergedHeadsSplitter {
 public:
  explicit MergedHeadsSplitter(Graph& g) : g_(g) {}

  MergedHeadsSummary run() {
    MergedHeadsSummary summary;
    const std::size_t tensors = g_.tensors().size();
    pos_.assign(tensors, -1);
    group_of_.assign(tensors, -1);
    for (NodeId id = 0; id < static_cast<NodeId>(g_.nodes().size()); ++id)
      if (auto split = merged_split_of(g_, g_.node(id))) {
        const int group = static_cast<int>(splits_.size());
        splits_.push_back(*split);
        parent_.push_back(group);
        candidates_.push_back(id);
        mark(g_.node(id).outputs[0], 1, group);
      }
    if (candidates_.empty()) return summary;
    discover();
    failed_.assign(splits_.size(), false);
    validate();
    std::set<int> kept;
    for (std::size_t c = 0; c < candidates_.size(); ++c)
      if (!failed_[find(static_cast<int>(c))]) kept.insert(find(static_cast<int>(c)));
    if (kept.empty()) return summary;
    summary.regions = static_cast<int>(kept.size());
    for (std::size_t c = 0; c < candidates_.size(); ++c)
      if (kept.count(find(static_cast<int>(c)))) {
        summary.example = example(candidates_[c], splits_[c]);
        break;
      }
    // A split the op rules disagree with is left undone (the graph as written imports as
    // before): a canonicalization must never make a model fail.
    if (!apply(kept)) return MergedHeadsSummary{};
    return summary;
  }

 private:
  int find(int x) { return parent_[x] == x ? x : parent_[x] = find(parent_[x]); }
  void join(int a, int b) { parent_[find(a)] = find(b); }
  int group(TensorId t) { return group_of_[t] < 0 ? -1 : find(group_of_[t]); }
  bool merged(TensorId t) const { return t != kNone && pos_[t] >= 0; }
  std::size_t rank(TensorId t) const { return g_.tensor(t).shape.size(); }

  // `t` carries the merged dim at `pos`; a second way there must agree.
  void mark(TensorId t, int pos, int group) {
    if (pos_[t] >= 0) {
      join(group_of_[t], group);
      if (pos_[t] != pos) conflicts_.push_back(t);
      return;
    }
    pos_[t] = pos;
    group_of_[t] = group;
    queue_.push_back(t);
  }

  // Where each reader puts the merged dim of its merged input, followed to the Reshapes.
  void discover() {
    while (!queue_.empty()) {
      const TensorId t = queue_.back();
      queue_.pop_back();
      const int p = pos_[t];
      for (NodeId c : g_.tensor(t).consumers) {
        const Node& n = g_.node(c);
        if (!merged_plain(n) || n.op_type == "Reshape") continue;
        if (n.outputs.empty() || n.outputs[0] == kNone || !g_.tensor(n.outputs[0]).shape_known) continue;
        const TensorId out = n.outputs[0];
        int out_pos = -1;
        if (n.op_type == "Transpose") {
          const auto perm = n.attr_ints("perm");
          if (!perm) continue;
          const auto it = std::find(perm->begin(), perm->end(), p);
          if (it == perm->end()) continue;
          out_pos = static_cast<int>(it - perm->begin());
        } else if (n.op_type == "MatMul" || n.op_type == "Softmax" || n.op_type == "LogSoftmax" ||
                   n.op_type == "Dropout" || merged_pointwise(n.op_type)) {
          out_pos = p + static_cast<int>(rank(out)) - static_cast<int>(rank(t));
        } else {
          continue;  // validate() fails the region
        }
        if (out_pos < 0) continue;
        mark(out, out_pos, group_of_[t]);
        // Dropout's mask has its output's shape (validate() wants it unread).
        if (n.op_type == "Dropout")
          for (std::size_t o = 1; o < n.outputs.size(); ++o)
            if (n.outputs[o] != kNone && rank(n.outputs[o]) == rank(out)) mark(n.outputs[o], out_pos, group_of_[t]);
      }
    }
  }

  // Whether node `n` keeps the function when its merged tensors get [B, H] for B*H.
  bool node_ok(const Node& n) {
    if (!merged_plain(n)) return false;
    for (TensorId o : n.outputs)
      if (o != kNone && merged(o) && g_.tensor(o).is_graph_output) return false;
    const bool reads_merged = std::any_of(n.inputs.begin(), n.inputs.end(), [&](TensorId t) { return merged(t); });
    if (n.op_type == "Reshape" && !reads_merged) return true;  // a candidate
    if (n.op_type == "Reshape") {
      // Leaving: the same elements in the same order; a copied dim (0) would change meaning.
      if (merged(n.inputs.at(1)) || !merged(n.inputs[0])) return false;
      const auto& target = g_.tensor(n.inputs[1]).value;
      if (!target || n.attr_int("allowzero", 0) != 0) return false;
      for (const auto& e : *target)
        if (const auto v = ops::as_int(e); v && *v == 0) return false;
      return n.outputs.empty() || !merged(n.outputs[0]);
    }
    const TensorId out = n.outputs.empty() ? kNone : n.outputs[0];
    if (out == kNone || !merged(out)) return false;
    const int p = pos_[out];
    const std::size_t r = rank(out);
    if (n.op_type == "Transpose") return n.inputs.size() == 1 && merged(n.inputs[0]) && n.attr_ints("perm");
    if (n.op_type == "MatMul") {
      if (n.inputs.size() != 2 || p + 2 >= static_cast<int>(r)) return false;
      for (TensorId in : n.inputs)
        if (merged(in) ? (rank(in) != r || pos_[in] != p) : rank(in) != 2) return false;
      return true;
    }
    if (n.op_type == "Softmax" || n.op_type == "LogSoftmax") {
      if (n.inputs.size() != 1 || !merged(n.inputs[0]) || pos_[n.inputs[0]] != p) return false;
      const auto* attr = n.attribute("axis");
      if (!attr && n.opset > 0 && n.opset < 13) return false;  // default 1: no attribute to renumber
      const std::int64_t axis = n.attr_int("axis", -1);
      const std::int64_t a = axis < 0 ? axis + static_cast<std::int64_t>(r) : axis;
      return a >= 0 && a < static_cast<std::int64_t>(r) && a != p;
    }
    if (n.op_type == "Dropout") {
      for (std::size_t o = 1; o < n.outputs.size(); ++o)
        if (!merged_unread(g_, n.outputs[o])) return false;
    } else if (!merged_pointwise(n.op_type) || n.outputs.size() != 1) {
      return false;
    }
    // Element-wise: merged operands as the output; the others not reaching the merged dim.
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const TensorId in = n.inputs[i];
      if (in == kNone) continue;
      if (merged(in) ? (rank(in) != r || pos_[in] != p) : static_cast<int>(rank(in)) > static_cast<int>(r) - 1 - p)
        return false;
    }
    return true;
  }

  void validate() {
    for (TensorId t : conflicts_) failed_[group(t)] = true;
    // Every candidate of a region splits the same B and H.
    for (std::size_t c = 0; c < candidates_.size(); ++c) {
      const int root = find(static_cast<int>(c));
      const MergedSplit& a = splits_[c];
      const MergedSplit& b = splits_[root];
      if (a.heads != b.heads || !ops::same_extent(a.outer, b.outer)) failed_[root] = true;
    }
    for (TensorId t = 0; t < static_cast<TensorId>(pos_.size()); ++t) {
      if (!merged(t)) continue;
      const MergedSplit& s = splits_[group(t)];
      if (!ops::same_extent(g_.tensor(t).shape.at(pos_[t]), s.outer * GiNaC::numeric(static_cast<long>(s.heads))))
        failed_[group(t)] = true;
      // Every reader, and the writer, of a merged tensor keeps the function.
      for (NodeId c : g_.tensor(t).consumers)
        if (!node_ok(g_.node(c))) failed_[group(t)] = true;
      if (const NodeId p = g_.tensor(t).producer; p != kNone && !node_ok(g_.node(p))) failed_[group(t)] = true;
    }
  }

  std::string example(NodeId id, const MergedSplit& s) const {
    std::ostringstream os;
    const Shape& out = g_.tensor(g_.node(id).outputs[0]).shape;
    os << "[" << out[0] << ", " << out[1] << ", " << out[2] << "] -> [" << out[0] << ", " << s.outer << ", " << s.heads
       << ", " << out[2] << "] at '" << g_.node(id).name << "'";
    return os.str();
  }

  // The graph rebuilt with the same node and tensor ids: merged tensors' shapes split,
  // candidates reading new targets, perms and axes renumbered.
  bool apply(const std::set<int>& kept) {
    auto kept_tensor = [&](TensorId t) { return merged(t) && kept.count(group(t)) != 0; };
    Graph out = empty_like(g_);
    for (TensorId t = 0; t < static_cast<TensorId>(g_.tensors().size()); ++t) {
      Tensor copy = g_.tensor(t);
      copy.producer = kNone;
      copy.consumers.clear();
      if (kept_tensor(t)) copy.shape = split_shape(t);
      out.add_tensor(std::move(copy));
    }
    out.inputs = g_.inputs;
    out.outputs = g_.outputs;
    std::vector<NodeId> touched;
    for (NodeId id = 0; id < static_cast<NodeId>(g_.nodes().size()); ++id) {
      Node n = g_.node(id);
      const bool in_region = std::any_of(n.inputs.begin(), n.inputs.end(), kept_tensor) ||
                             std::any_of(n.outputs.begin(), n.outputs.end(), kept_tensor);
      if (in_region) {
        touched.push_back(id);
        edit(n, out, kept_tensor);
      }
      out.add_node(std::move(n));
    }
    if (!same_shapes(out, touched)) return false;
    g_ = std::move(out);
    return true;
  }

  Shape split_shape(TensorId t) {
    const Shape& s = g_.tensor(t).shape;
    const int p = pos_[t];
    const MergedSplit& split = splits_[group(t)];
    Shape out(s.begin(), s.begin() + p);
    out.push_back(split.outer);
    out.push_back(GiNaC::numeric(static_cast<long>(split.heads)));
    out.insert(out.end(), s.begin() + p + 1, s.end());
    return out;
  }

  template <typename Kept>
  void edit(Node& n, Graph& out, const Kept& kept_tensor) {
    if (n.op_type == "Reshape" && !kept_tensor(n.inputs[0])) {
      // A candidate: a constant target [A, B, H, D].
      Tensor target;
      target.name = n.outputs[0] == kNone ? n.name : g_.tensor(n.outputs[0]).name;
      target.name += "__heads_shape";
      while (out.find_tensor(target.name) != kNone) target.name += "_";
      target.dtype = ElementType::i64;
      const Shape shape = out.tensor(n.outputs[0]).shape;
      target.shape = {GiNaC::numeric(static_cast<long>(shape.size()))};
      target.shape_known = true;
      target.is_constant = true;
      target.value = shape;
      n.inputs[1] = out.add_tensor(std::move(target));
    } else if (n.op_type == "Transpose") {
      const int p = pos_[n.inputs[0]];
      std::vector<std::int64_t> perm;
      const std::vector<std::int64_t> old_perm = n.attr_ints("perm").value();
      for (std::int64_t a : old_perm) {
        if (a < p) perm.push_back(a);
        else if (a == p) perm.insert(perm.end(), {a, a + 1});
        else perm.push_back(a + 1);
      }
      n.attributes["perm"] = perm;
    } else if ((n.op_type == "Softmax" || n.op_type == "LogSoftmax") && n.attribute("axis")) {
      // A negative axis counts from the end, which moves by one: written non-negative.
      const std::int64_t rank = static_cast<std::int64_t>(g_.tensor(n.inputs[0]).shape.size());
      const std::int64_t axis = n.attr_int("axis", -1);
      const std::int64_t a = axis < 0 ? axis + rank : axis;
      n.attributes["axis"] = a > pos_[n.inputs[0]] ? a + 1 : a;
    }
  }

  // The op rules give the shapes the split says (and the leaving Reshapes their old ones).
  static bool same_shapes(Graph& out, const std::vector<NodeId>& touched) {
    for (NodeId id : touched) {
      const Node& n = out.node(id);
      const OpRule* rule = find_op_rule(n.domain, n.op_type);
      if (!rule || !rule->infer) return false;
      OpContext ctx{n, {}, {}, out.symbols};
      for (TensorId in : n.inputs) ctx.inputs.push_back(in == kNone ? nullptr : &out.tensor(in));
      for (TensorId o : n.outputs) ctx.outputs.push_back(o == kNone ? nullptr : &out.tensor(o));
      std::vector<OutputInfo> infos;
      try {
        infos = rule->infer(ctx);
      } catch (const std::exception&) {
        return false;
      }
      for (std::size_t o = 0; o < n.outputs.size() && o < infos.size(); ++o) {
        if (n.outputs[o] == kNone) continue;
        const Shape& want = out.tensor(n.outputs[o]).shape;
        const Shape& got = infos[o].shape;
        bool same = want.size() == got.size();
        for (std::size_t d = 0; same && d < want.size(); ++d) same = ops::same_extent(want[d], got[d]);
        if (!same) return false;
      }
    }
    return true;
  }

  Graph& g_;
  std::vector<int> pos_, group_of_, parent_;
  std::vector<MergedSplit> splits_;
  std::vector<NodeId> candidates_;
  std::vector<TensorId> queue_, conflicts_;
  std::vector<bool> failed_;
};

}  // namespace

MergedHeadsSummary split_merged_heads(Graph& graph) { return MergedHeadsSplitter(graph).run(); }

}  // namespace symtensor::compiler
