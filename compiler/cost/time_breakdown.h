#pragma once
// Where a stage's compute time goes, by operator class (op type, as the fusion pass left it:
// FusedAttention, MatMul, Einsum, ...), for one micro-batch, from a PlanAnalysis: kernel
// seconds forward, backward and recomputed, the collectives each class exposes past its
// kernels, and the FLOPs (per device) behind them. The classes of a stage sum to its
// StageTotals' fwd/bwd compute and comm (less activation offloading, shown apart).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/cost/plan_analysis.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {

struct OpClassTime {
  std::string op_class;
  int operators = 0;
  double forward_s = 0, backward_s = 0, recompute_s = 0;  // kernels, per micro-batch
  double exposed_comm_s = 0;                              // its collectives past its kernels
  double flops = 0;                                       // per device, forward + backward + recompute
  double total_s() const { return forward_s + backward_s + recompute_s + exposed_comm_s; }
};

// One operator's share, for the slowest of a stage.
struct OperatorTime {
  std::string name, op_type;
  double kernel_s = 0, exposed_comm_s = 0;  // forward + backward + recompute
  double flops = 0, bytes = 0;              // per device, forward + backward + recompute
};

struct StageTimeBreakdown {
  int stage = 0;
  std::vector<OpClassTime> classes;  // largest total first
  std::vector<OperatorTime> slowest;  // the stage's slowest operators (kernels + exposed comm), slowest first
  double offload_s = 0;              // exposed activation offloading copies (Plan::offload_layers)
};

// `slowest`: how many of each stage's slowest operators to list.
std::vector<StageTimeBreakdown> time_breakdown(const Graph& graph, const Plan& plan, const PlanAnalysis& analysis,
                                               std::size_t slowest = 10);

// A table per stage (class, operators, forward, backward, recompute, exposed comm, achieved
// TFLOP/s) and its slowest operators, for `simulate --ops`.
std::string time_breakdown_text(const std::vector<StageTimeBreakdown>& stages);
nlohmann::json time_breakdown_json(const std::vector<StageTimeBreakdown>& stages);

}  // namespace symtensor::compiler
