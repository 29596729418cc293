// Operator work copied between twins: the same operator at the same place of two repeated
// layers, priced in the same context (State::twin_class, State::twins).
#include "compiler/cost/analyzer.h"

#include <map>

namespace symtensor::compiler::analyzer_internal {

namespace {

// A twin key's parts, appended as raw bytes (a -0.0 against 0.0 only splits a class).
void twin_key_number(std::string& key, double x) { key.append(reinterpret_cast<const char*>(&x), sizeof x); }
void twin_key_affine(std::string& key, const Affine& a) {
  twin_key_number(key, a.constant);
  twin_key_number(key, a.per_batch);
}
void twin_key_text(std::string& key, const std::string& text) {
  twin_key_number(key, static_cast<double>(text.size()));
  key += text;
}
void twin_key_dims(std::string& key, const std::vector<std::vector<int>>& dims) {
  twin_key_number(key, static_cast<double>(dims.size()));
  for (const auto& d : dims) {
    twin_key_number(key, static_cast<double>(d.size()));
    for (int l : d) twin_key_number(key, l);
  }
}

// Operator contexts kept per class: a layer's operators see a few (the first layer's input
// comes from the embedding, the last feeds the head).
constexpr std::size_t kTwinContexts = 4;

}  // namespace

std::string Analyzer::twin_key(NodeId id) const {
  const Node& node = graph_.node(id);
  const NumericNode& nn = ng_.node(id);
  std::string key;
  twin_key_text(key, node.op_type);
  twin_key_text(key, node.domain);
  twin_key_number(key, static_cast<double>(nn.kind));
  twin_key_number(key, static_cast<double>(nn.loops.size()));
  for (const NumericLoop& l : nn.loops) {
    twin_key_affine(key, l.extent);
    twin_key_number(key, l.reduction);
  }
  twin_key_affine(key, nn.flops);
  twin_key_affine(key, nn.bytes);
  for (double x : {static_cast<double>(nn.quadratic_output), static_cast<double>(nn.no_kernel),
                   static_cast<double>(nn.head_dim_loop), static_cast<double>(nn.query_loop),
                   static_cast<double>(nn.expert_gemm)})
    twin_key_number(key, x);
  // kernel_precision: low-precision GEMMs run inside layers only.
  twin_key_number(key, ng_.num_layers() > 0 && ng_.node_layers()[id] >= 0);
  twin_key_dims(key, nn.space.input_dims);
  twin_key_dims(key, nn.space.output_dims);
  auto tensor = [&](TensorId t) {
    const TensorFacts& f = ng_.facts(t);
    twin_key_affine(key, f.elements);
    for (double x : {static_cast<double>(f.element_size), static_cast<double>(f.floating), static_cast<double>(f.constant),
                     static_cast<double>(f.parameter), static_cast<double>(f.graph_output),
                     static_cast<double>(f.needs_gradient), static_cast<double>(f.weight_derived),
                     static_cast<double>(f.fusable_intermediate), static_cast<double>(f.routing_table)})
      twin_key_number(key, x);
    const std::vector<Affine>& shape = ng_.tensor_shape(t);
    twin_key_number(key, static_cast<double>(shape.size()));
    for (const Affine& d : shape) twin_key_affine(key, d);
  };
  twin_key_number(key, static_cast<double>(node.inputs.size()));
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const TensorId t = node.inputs[i];
    if (t == kNone) {
      twin_key_number(key, -1);
      continue;
    }
    std::size_t first = 0;
    while (node.inputs[first] != t) ++first;
    twin_key_number(key, static_cast<double>(first));  // the inputs reading one tensor
    tensor(t);
    const NodeId producer = graph_.tensor(t).producer;
    twin_key_number(key, producer == kNone ? -1 : static_cast<double>(ng_.node(producer).kind));
    // routed_tokens and beside_microbatch: the routing node, itself or the input's producer.
    const NodeId routing = exchanged_routing_node(id, t);
    twin_key_number(key, routing == kNone ? 0 : routing == id ? 1 : 2);
    if (routing != kNone) {
      const Node& r = graph_.node(routing);
      for (const char* attr : {"top_k", "expert_groups", "top_groups"})
        twin_key_number(key, static_cast<double>(r.attr_int(attr, -1)));
      const std::vector<Affine>& shape = ng_.tensor_shape(r.inputs[0]);
      twin_key_number(key, static_cast<double>(shape.size()));
      for (const Affine& d : shape) twin_key_affine(key, d);
    }
  }
  twin_key_number(key, static_cast<double>(node.outputs.size()));
  for (TensorId t : node.outputs) {
    if (t == kNone) twin_key_number(key, -1);
    else tensor(t);
  }
  return key;
}

void Analyzer::find_twins() {
  if (!state_.twin_class.empty()) return;
  NumericGraph::TwinClasses& found = ng_.twin_classes();
  if (found.of_node.empty()) {
    const std::size_t n = graph_.nodes().size();
    std::map<std::string, int> classes;
    std::vector<int> of_node(n);
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id)
      of_node[id] = classes.try_emplace(twin_key(id), static_cast<int>(classes.size())).first->second;
    found.count = static_cast<int>(classes.size());  // kept whole or not at all
    found.of_node = std::move(of_node);
  }
  state_.twin_class = found.of_node;
  state_.twins.assign(found.count, {});
}

void Analyzer::delivery_context(NodeId id, bool train, const PlanAnalyzer::State::Twin* like) {
  const Node& node = graph_.node(id);
  const NumericNode& nn = ng_.node(id);
  const NodeCut& cut = plan_.node_cuts[id];
  const std::size_t inputs = node.inputs.size();
  twin_delivered_.assign(inputs, 0);
  twin_gradient_delivered_.assign(inputs, 0);
  twin_wants_.assign(inputs, std::nullopt);
  twin_gradients_.assign(inputs, std::nullopt);
  for (std::size_t i = 0; i < inputs; ++i) {
    const TensorId t = node.inputs[i];
    if (t == kNone || i >= nn.space.input_dims.size() || !produced_sharding(t)) continue;
    const auto& made = state_.delivered[t];
    const OperandLayout& want = twin_wants_[i].emplace(OperandLayout::input(nn.space, cut, static_cast<int>(i)));
    twin_delivered_[i] = std::find(made.begin(), made.end(), want) != made.end() ? 2 : 1;
    if (train && needs_gradient(t) && !(nn.kind == OpKind::attention && i == 3)) {
      const auto& grads = state_.delivered_gradients[t];
      // A twin of the same cut that delivers this gradient has its partial axes; one that
      // does not (its input was not produced in a layout) leaves them to be derived.
      const OperandLayout& grad = twin_gradients_[i].emplace(
          like && like->gradient_delivered[i] != 0
              ? twin_wants_[i]->partial_over(like->gradient_partials[i])
              : OperandLayout::input_gradient(nn.space, cut, static_cast<int>(i)));
      twin_gradient_delivered_[i] = std::find(grads.begin(), grads.end(), grad) != grads.end() ? 2 : 1;
    }
  }
}

bool Analyzer::copy_twin(NodeId id, std::size_t position, bool train) {
  if (!state_.reuse_twins) return false;
  std::vector<PlanAnalyzer::State::Twin>& priced = state_.twins[state_.twin_class[id]];
  PlanAnalyzer::State::TwinReplay& replay = state_.twin_replay;
  if (replay.replaying) {
    const int j = replay.twin_of[position];
    return j >= 0 && take_twin_work(id, position, priced[j], true);
  }
  const Node& node = graph_.node(id);
  const NodeCut& cut = plan_.node_cuts[id];
  const auto& order = ng_.topological_order();
  bool context_made = false;  // the delivery context, made for the first twin of the same cut
  for (std::size_t j = 0; j < priced.size(); ++j) {
    const PlanAnalyzer::State::Twin& twin = priced[j];
    const Node& other = graph_.node(order[twin.position]);
    if (!(plan_.node_cuts[order[twin.position]] == cut)) continue;
    auto same_context = [&] {
      return twin.delivered == twin_delivered_ && twin.gradient_delivered == twin_gradient_delivered_;
    };
    if (context_made && !same_context()) continue;
    bool same = true;
    for (std::size_t i = 0; i < node.inputs.size() && same; ++i) {
      // A layout copied from the twin's input is that layout.
      if (node.inputs[i] == kNone || state_.produced_copy_of[node.inputs[i]] == other.inputs[i]) continue;
      const auto& mine = state_.produced[node.inputs[i]];
      const auto& theirs = state_.produced[other.inputs[i]];
      same = mine.has_value() == theirs.has_value() && (!mine || *mine == *theirs);
    }
    if (!same) continue;
    if (!context_made) {
      delivery_context(id, train, &twin), context_made = true;
      if (!same_context()) continue;
    }
    if (!take_twin_work(id, position, twin, false)) continue;
    if (!replay.twin_of.empty()) replay.twin_of[position] = static_cast<int>(j);
    return true;
  }
  if (priced.size() < kTwinContexts) {
    if (!context_made) delivery_context(id, train, nullptr);
    PlanAnalyzer::State::Twin& twin = priced.emplace_back();
    twin.position = position;
    twin.delivered = twin_delivered_;
    twin.gradient_delivered = twin_gradient_delivered_;
    twin.gradient_partials.assign(node.inputs.size(), 0);
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      if (twin_gradients_[i]) twin.gradient_partials[i] = twin_gradients_[i]->partial_axes();
  }
  return false;
}

namespace {

// The tensor of `node` at the slot where `twin` (its twin) has tensor t, else kNone.
TensorId counterpart(const Node& node, const Node& twin, TensorId t) {
  for (std::size_t i = 0; i < twin.inputs.size(); ++i)
    if (twin.inputs[i] == t) return node.inputs[i];
  for (std::size_t o = 0; o < twin.outputs.size(); ++o)
    if (twin.outputs[o] == t) return node.outputs[o];
  return kNone;
}

}  // namespace

bool Analyzer::take_twin_work(NodeId id, std::size_t position, const PlanAnalyzer::State::Twin& twin, bool replayed) {
  const Node& node = graph_.node(id);
  const Node& other = graph_.node(ng_.topological_order()[twin.position]);
  std::vector<OpWork>& ops = state_.analysis.ops;
  const OpWork& theirs = ops[twin.position];
  // Its collectives move this operator's operands: the twin's operand at the same slot.
  for (const auto* comms : {&theirs.fwd_comm, &theirs.bwd_comm})
    for (const CommOp& op : *comms)
      if (counterpart(node, other, op.tensor) == kNone) return false;
  // Everything but the collectives, copied into this operator's slot (prepare_operator_work).
  // The slot's collectives are an older plan's until copy_pending_collectives replaces them.
  OpWork& w = ops[position];
  static_cast<OpNumbers&>(w) = theirs;
  state_.collectives_of_twin[position] = static_cast<int>(twin.position);
  w.node = id;
  w.stage = plan_.stage_of_node[id];
  // input_work's deliveries, in its order (1: the layout was not delivered before this
  // operator; an input read twice finds the first reading's). The context matched the twin's,
  // so its flags are this operator's; replayed, the layouts are made here (delivery_context
  // made them otherwise).
  const NumericNode& nn = ng_.node(id);
  const NodeCut& cut = plan_.node_cuts[id];
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const TensorId t = node.inputs[i];
    if (twin.delivered[i] == 1)
      first_delivery(state_.delivered[t], replayed ? OperandLayout::input(nn.space, cut, static_cast<int>(i)) : *twin_wants_[i]);
    if (twin.gradient_delivered[i] == 1)
      first_delivery(state_.delivered_gradients[t],
                     replayed ? OperandLayout::input(nn.space, cut, static_cast<int>(i)).partial_over(twin.gradient_partials[i])
                              : *twin_gradients_[i]);
  }
  state_.comm_ends.resize(static_cast<std::size_t>(state_.input_base.back()));
  const std::size_t from = static_cast<std::size_t>(state_.input_base[twin.position]);
  const std::size_t to = static_cast<std::size_t>(state_.input_base[position]);
  for (std::size_t i = 0; i < node.inputs.size(); ++i) state_.comm_ends[to + i] = state_.comm_ends[from + i];
  // record_outputs: the twin's output layouts (the same cut and dims), read from this
  // operator's cut, and the local sizes of its outputs (the same shapes and facts).
  const NodeCut& kept_cut = state_.ops_plan->node_cuts[id];
  for (std::size_t o = 0; o < node.outputs.size() && o < nn.space.output_dims.size(); ++o) {
    const TensorId t = node.outputs[o];
    if (t == kNone || ng_.facts(t).constant) continue;
    const auto& theirs = state_.produced[other.outputs[o]];
    state_.produced[t] = theirs ? theirs->on(nn.space.output_dims[o], kept_cut)
                                : OperandLayout::output(nn.space, kept_cut, static_cast<int>(o));
    state_.produced_copy_of[t] = theirs ? other.outputs[o] : kNone;
    state_.produced_elements[t] = state_.produced_elements[other.outputs[o]];
  }
  ++state_.twin_copies;
  return true;
}

void Analyzer::copy_pending_collectives() {
  std::vector<int>& twin_of = state_.collectives_of_twin;
  std::vector<OpWork>& ops = state_.analysis.ops;
  const auto& order = ng_.topological_order();
  for (std::size_t k = 0; k < twin_of.size() && k < ops.size(); ++k) {
    if (twin_of[k] < 0) continue;
    const OpWork& theirs = ops[static_cast<std::size_t>(twin_of[k])];
    const Node& node = graph_.node(order[k]);
    const Node& other = graph_.node(order[static_cast<std::size_t>(twin_of[k])]);
    OpWork& w = ops[k];
    w.fwd_comm = theirs.fwd_comm;
    w.bwd_comm = theirs.bwd_comm;
    for (auto* comms : {&w.fwd_comm, &w.bwd_comm})
      for (CommOp& op : *comms) op.tensor = counterpart(node, other, op.tensor);
  }
  twin_of.clear();
}

}  // namespace symtensor::compiler::analyzer_internal
