#pragma once
// Where a stage's peak memory goes, part by part, from a PlanAnalysis: the model states
// (16-bit weights and gradients, fp32 master weights and Adam moments, each sharded as
// the ZeRO stage says), and the activations saved for backward by the layer's part that
// keeps them (attention, MLP / experts, norms, embedding, head and loss, other:
// compiler/analysis/layer_parts.h; by op type in a graph without transformer layers) times the
// micro-batches in flight at the peak, the transient buffers beside them
// (the largest operator's inputs and outputs, as the logits on the last stage; ZeRO's
// gather and reduce-scatter staging) and the reserve the cluster profile states for the
// CUDA context, NCCL and the allocator. The parts sum to StageMemory::peak().
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/cost/plan_analysis.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {

struct StageMemoryBreakdown {
  int stage = 0;
  double parameters = 0, gradients = 0, optimizer = 0;  // bytes per device
  std::string parameters_detail, gradients_detail, optimizer_detail;  // dtype and ZeRO sharding
  // Per micro-batch, by the layer's part of the operator that keeps them (its op type in a
  // graph without transformer layers), largest first.
  std::vector<std::pair<std::string, double>> activations_by_class;
  double activations_per_micro_batch = 0;
  double micro_batches_in_flight = 1;
  double activations = 0;   // activations_per_micro_batch x micro_batches_in_flight
  double working_buffers = 0;      // the largest operator's (StageMemory::working_buffers)
  std::string working_buffers_detail;  // which operator
  double collective_buffers = 0;   // ZeRO staging (StageMemory::collective_buffers)
  std::string collective_buffers_detail;
  double transient = 0;            // working_buffers + collective_buffers
  double reserve = 0;              // the profile's device.memory_reserve_gb
  double peak = 0;          // parameters + gradients + optimizer + activations + transient + reserve
};

std::vector<StageMemoryBreakdown> memory_breakdown(Graph& graph, const Plan& plan, const PlanAnalysis& analysis);

// `memory_breakdown` of results.json and `simulate --json` (keys in compiler/lowering/README.md).
nlohmann::json memory_breakdown_json(const std::vector<StageMemoryBreakdown>& stages);
// Its inverse (a sweep's worker processes and shard files pass breakdowns as JSON); throws
// nlohmann::json's exception naming the key on a missing or mistyped field.
std::vector<StageMemoryBreakdown> memory_breakdown_from_json(const nlohmann::json& stages);

// The stage of the largest peak (nullptr when there is none).
const StageMemoryBreakdown* fullest_stage(const std::vector<StageMemoryBreakdown>& stages);

// One block of text per stage (compile's output).
std::string memory_breakdown_text(const std::vector<StageMemoryBreakdown>& stages);

}  // namespace symtensor::compiler
