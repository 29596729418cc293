#include "compiler/cost/moe_load.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/base/units.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {
namespace {

bool is_routing_op(const Node& n, const char* op) {
  return n.op_type == op && n.domain == "ai.symtensor" && n.inputs.size() == 2;
}

// A MoeDispatch's routing, from its [b, s, E, C] table; top-k from the attribute, else from the slots.
float dispatch_capacity(const NumericGraph& ng, const Node& dispatch) {
  const auto& shape = ng.tensor_shape(dispatch.inputs[0]);
  if (shape.size() != 4) return kDroplessRouting;
  const double seq = shape[1].at(0), experts = shape[2].at(0), slots = shape[3].at(0);
  double top_k = static_cast<double>(dispatch.attr_int("top_k", 0));
  if (top_k <= 0 && seq > 0) top_k = std::round(experts * slots / seq);
  return routing_of_buffers(seq, experts, slots, top_k);
}

// The routing of the routed inputs of a node that computes on the experts' tokens.
template <typename Capacity>
float node_capacity(const NumericGraph& ng, NodeId id, const Capacity& capacity_of) {
  const Node& node = ng.graph().node(id);
  if (is_routing_op(node, "MoeDispatch") || is_routing_op(node, "MoeCombine")) return kNotRouted;
  for (TensorId t : node.inputs)
    if (t != kNone && !ng.facts(t).parameter && capacity_of(t) != kNotRouted) return capacity_of(t);
  return kNotRouted;
}

}  // namespace

double check_moe_load_imbalance(double imbalance, const std::string& option) {
  if (const std::string problem = moe_load_imbalance_problem(imbalance); !problem.empty())
    throw std::runtime_error(option + ": " + problem);
  return imbalance;
}

float routing_of_buffers(double seq, double experts, double slots, double top_k) {
  if (!(seq > 0 && experts > 0 && top_k > 0) || slots == std::ceil(top_k * seq / experts)) return kDroplessRouting;
  return static_cast<float>(std::round(1000.0 * slots * experts / (top_k * seq)) / 1000);
}

double dropped_share(double imbalance, double capacity_factor) {
  return capacity_factor > 0 ? std::max(0.0, 1 - capacity_factor / imbalance) : 0.0;
}

std::vector<float> routed_capacities(const NumericGraph& ng) {
  const Graph& graph = ng.graph();
  std::vector<float> routed(graph.tensors().size(), kNotRouted);
  for (NodeId id : ng.topological_order()) {
    const Node& node = graph.node(id);
    float capacity = kNotRouted;
    if (is_routing_op(node, "MoeDispatch")) capacity = dispatch_capacity(ng, node);
    else capacity = node_capacity(ng, id, [&](TensorId t) { return routed[t]; });
    if (capacity == kNotRouted) continue;
    for (TensorId out : node.outputs)
      if (out != kNone && ng.facts(out).floating) routed[out] = capacity;
  }
  return routed;
}

float routed_capacity_of_node(const NumericGraph& ng, NodeId id) {
  return node_capacity(ng, id, [&](TensorId t) { return ng.facts(t).routed_capacity; });
}

MoeLoad moe_load(const NumericGraph& ng, double imbalance) {
  MoeLoad load;
  load.imbalance = imbalance;
  const Graph& graph = ng.graph();
  for (const Node& node : graph.nodes()) {
    if (!is_routing_op(node, "MoeDispatch")) continue;
    const float capacity = dispatch_capacity(ng, node);
    if (capacity == kDroplessRouting) {
      ++load.dropless_layers;
    } else {
      ++load.capacity_layers;
      load.capacity_factor = load.capacity_factor > 0 ? std::min<double>(load.capacity_factor, capacity) : capacity;
    }
  }
  load.dropped = dropped_share(imbalance, load.capacity_factor);
  return load;
}

std::string describe_moe_load(const MoeLoad& load) {
  if (!load.moe())
    return load.imbalance == 1 ? "" : fmt::format("{:g}x stated, but the model has no experts: nothing is priced differently",
                                                  load.imbalance);
  std::string text = fmt::format("busiest expert rank at {:g}x the mean tokens", load.imbalance);
  if (load.imbalance == 1) text += " (token-count balanced; --moe-load-imbalance F for skewed routing)";
  if (load.dropless_layers > 0 && load.imbalance > 1)
    text += load.expert_parallel
                ? fmt::format(" (dropless: its expert work and token exchanges x{:g})", load.imbalance)
                : std::string(" (dropless, no expert parallelism: every rank runs all experts on its own tokens, "
                              "so the skew moves no work)");
  if (load.capacity_layers > 0)
    text += fmt::format(" (capacity factor {:g}: {} of its routed tokens dropped)", load.capacity_factor,
                        format_percent(load.dropped));
  return text;
}

nlohmann::json moe_load_json(const MoeLoad& load) {
  if (!load.moe()) return nullptr;
  return {{"imbalance", load.imbalance},
          {"routing", load.capacity_layers == 0 ? "dropless" : load.dropless_layers == 0 ? "capacity" : "mixed"},
          {"capacity_factor", load.capacity_factor},
          {"dropped_fraction", load.dropped},
          {"expert_parallel", load.expert_parallel}};
}

}  // namespace symtensor::compiler
