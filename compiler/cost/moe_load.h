#pragma once
// The routing load of a mixture of experts as the user states it (Plan::moe_load_imbalance,
// --moe-load-imbalance F; issue #31): F >= 1, the busiest expert-parallel rank's routed tokens
// over the mean (1: token-count balanced, the default). The step waits for the busiest rank,
// so every prediction (step time, peak memory) is that rank's:
// - dropless routing: its routed work is F times the balanced share's. The operators computing
//   on the experts' tokens (the grouped expert GEMMs and the element-wise ops between them,
//   forward and backward) take F times the FLOPs, token bytes and kernel time (at the balanced
//   kernel's rate), the collectives moving its routed tokens F times the bytes (the dispatch
//   all-to-all's receive volume, the combine's send volume), and its saved routed activations
//   and working buffers F times the bytes. Weights do not grow.
// - capacity routing: the capacity buffer caps the load; the work stays the buffer's and the
//   busiest rank drops 1 - capacity_factor / F of its routed tokens when F exceeds the
//   capacity factor (a simple stated model: its experts get F times the mean, keep cf times).
// A graph states its routing by its experts' buffers, C = ceil(cf k s / E) slots per expert
// and sequence (onnx_models/layers.h): buffers of exactly the even share (cf = 1, the zoo's
// default) are read as a dropless dispatcher's balanced load, any other capacity as capacity
// routing; the exports read them the same way (no capacity factor for the even share).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace symtensor::compiler {

class NumericGraph;

// TensorFacts::routed_capacity of a tensor that holds no routed tokens, and of one whose
// routing is dropless (else the capacity factor, > 0).
constexpr float kNotRouted = -1, kDroplessRouting = 0;

// Returns F; throws "OPTION: F is not a routing load (the busiest expert rank's tokens over
// the mean: a finite number >= 1)" otherwise. `option` names where it came from.
double check_moe_load_imbalance(double imbalance, const std::string& option);

// The routing a MoeDispatch's buffers of `slots` per expert state for `seq` tokens, `experts`
// experts and top-k: kDroplessRouting when slots is exactly the even share ceil(k s / E) (or the
// sizes are unknown), else the capacity factor slots E / (k s), to 1/1000.
float routing_of_buffers(double seq, double experts, double slots, double top_k);

// The busiest rank's share of routed tokens dropped: max(0, 1 - capacity_factor / F).
double dropped_share(double imbalance, double capacity_factor);

// Per tensor of ng's graph: the routing of the experts' tokens it holds (a MoeDispatch's
// output, what the experts compute from it, a MoeCombine's expert input): kDroplessRouting,
// the capacity factor, or kNotRouted.
std::vector<float> routed_capacities(const NumericGraph& ng);

// An operator computing on routed tokens (not MoeDispatch / MoeCombine, which run on the
// token side): its routed inputs' routing; kNotRouted for other operators. Made once per
// node by NumericGraph (NumericNode::routed_capacity), which the cost model reads.
float routed_capacity_of_node(const NumericGraph& ng, int node);

// The routing load a prediction assumed, for the reports.
struct MoeLoad {
  double imbalance = 1;
  int dropless_layers = 0, capacity_layers = 0;  // MoeDispatch nodes of each routing
  double capacity_factor = 0;  // the least among the capacity-routed layers (0: none)
  double dropped = 0;          // dropped_share(imbalance, capacity_factor) of those layers
  // The plan cuts the experts over devices; without, every rank runs all experts on its own
  // tokens and a skewed routing moves no work (the cost model leaves it unscaled).
  bool expert_parallel = true;
  bool moe() const { return dropless_layers + capacity_layers > 0; }
  bool told() const { return moe() || imbalance != 1; }  // worth a line in the reports
};
MoeLoad moe_load(const NumericGraph& ng, double imbalance);

// "busiest expert rank at 1.5x the mean tokens (dropless: its expert work and exchanges x1.5)",
// "... (capacity factor 1.25: 16.7% of its routed tokens dropped)"; without experts, that a
// stated load changes nothing, else empty.
std::string describe_moe_load(const MoeLoad& load);
// {"imbalance": F, "routing": "dropless"|"capacity"|"mixed", "capacity_factor": cf,
// "dropped_fraction": d, "expert_parallel": bool}; null without experts.
nlohmann::json moe_load_json(const MoeLoad& load);

}  // namespace symtensor::compiler
