#include "compiler/cost/plan_analysis.h"

#include <algorithm>
#include <memory>

#include "compiler/cost/analysis_state.h"
#include "compiler/cost/analyzer.h"

namespace symtensor::compiler {

double StageMemory::peak() const {
  return parameters + gradients + optimizer + activations_per_micro_batch * micro_batches_in_flight + working_buffers +
         collective_buffers + reserve;
}

namespace {

double sum_seconds(const std::vector<CommOp>& ops) {
  double s = 0;
  for (const auto& op : ops) s += op.seconds;
  return s;
}

// Of those run each micro-batch (CommOp::every_micro_batch), or of the others.
double sum_seconds(const std::vector<CommOp>& ops, bool every_micro_batch) {
  double s = 0;
  for (const auto& op : ops)
    if (op.every_micro_batch == every_micro_batch) s += op.seconds;
  return s;
}

}  // namespace

namespace analyzer_internal {

StageTotals assemble_totals(const PlanAnalyzer::State::OperatorSums& ops,
                            const PlanAnalyzer::State::ParameterSums& params, const std::vector<double>& p2p_bytes,
                            const std::vector<StageMemory>& memory, double optimizer_s, const Plan& plan,
                            double device_memory) {
  StageTotals t;
  t.fwd_compute = ops.fwd_compute;
  t.fwd_comm = ops.fwd_comm;
  t.bwd_compute = ops.bwd_compute;
  t.bwd_comm = ops.bwd_comm;
  for (std::size_t s = 0; s < t.fwd_comm.size(); ++s) {
    t.fwd_comm[s] += std::max(0.0, ops.fwd_beside[s] - ops.fwd_compute[s]);
    t.bwd_comm[s] += std::max(0.0, ops.bwd_beside[s] - ops.bwd_compute[s]);
  }
  t.grad_sync = params.grad_sync;
  t.micro_batch_grad_sync = params.micro_batch_sync;
  t.gather = params.gather;
  t.first_gather = params.first_gather;
  t.p2p_bytes = p2p_bytes;
  for (const StageMemory& m : memory) t.peak_memory.push_back(m.peak());
  t.model_flops = ops.model_flops * plan.micro_batches;
  t.hardware_flops = ops.hardware_flops * plan.micro_batches;
  const double regather = params.regather.empty() ? 0.0 : *std::max_element(params.regather.begin(), params.regather.end());
  t.after_step_s = optimizer_s + regather;
  t.device_memory = device_memory;
  return t;
}

}  // namespace analyzer_internal

bool selective_recompute_is_none(const NumericGraph& ng, const hardware::Stack& stack) {
  if (stack.selective_recompute == hardware::SelectiveRecompute::every_other_matmul && ng.num_layers() > 0) return false;
  for (NodeId id : ng.topological_order())
    if (ng.node(id).quadratic_output) return false;
  for (const SavedTensor& s : ng.saved_tensors())
    if (s.quadratic_in_sequence) return false;
  return true;
}

std::vector<int> stage_layer_ordinals(const NumericGraph& ng, const Plan& plan, std::vector<int>* counts) {
  const int stages = plan.pipeline_stages();
  std::vector<int> ordinals(ng.node_layers().size(), -1);
  std::vector<int> stage_of_layer(ng.num_layers(), -1), ordinal(ng.num_layers(), 0), seen(stages, 0);
  for (NodeId id : ng.topological_order()) {
    const int l = ng.node_layers()[id];
    if (l < 0) continue;
    const int s = plan.stage_of_node.at(id);
    if (stage_of_layer[l] != s) stage_of_layer[l] = s, ordinal[l] = seen.at(s)++;
    ordinals[id] = ordinal[l];
  }
  if (counts) *counts = seen;
  return ordinals;
}

double beside_microbatch_seconds(const std::vector<CommOp>& ops) {
  double seconds = 0;
  for (const CommOp& op : ops)
    if (op.beside_microbatch) seconds += op.seconds;
  return seconds;
}

double exposed_seconds(const std::vector<CommOp>& ops, double kernel_seconds) {
  double blocking = 0, overlapped = 0;
  for (const CommOp& op : ops)
    if (!op.beside_microbatch) (op.overlapped ? overlapped : blocking) += op.seconds;
  return blocking + std::max(0.0, overlapped - kernel_seconds);
}

PlanAnalyzer::PlanAnalyzer(Graph& graph, const hardware::Cluster& cluster, const NumericGraph& ng)
    : graph_(graph), cluster_(cluster), ng_(ng), state_(std::make_unique<State>()) {}

PlanAnalyzer::~PlanAnalyzer() = default;

void PlanAnalyzer::reuse_repeated_layers(bool on) { state_->reuse_twins = on; }
std::size_t PlanAnalyzer::twin_copies() const { return state_->twin_copies; }
std::size_t PlanAnalyzer::twin_replays() const { return state_->twin_replay.replays; }

const PlanAnalysis& PlanAnalyzer::analyze_in_place(const Plan& plan) {
  return analyzer_internal::Analyzer(graph_, cluster_, plan, ng_, *state_).run();
}

PlanAnalysis PlanAnalyzer::analyze(const Plan& plan) { return analyze_in_place(plan); }

const StageTotals& PlanAnalyzer::totals(const Plan& plan) {
  return analyzer_internal::Analyzer(graph_, cluster_, plan, ng_, *state_).totals();
}

StageTotals stage_totals(const PlanAnalysis& a, const Plan& plan) {
  const int stages = plan.pipeline_stages();
  const bool train = plan.mode == ExecutionMode::train;
  PlanAnalyzer::State::OperatorSums ops(stages);
  for (const OpWork& w : a.ops) {
    ops.add(w, w.recomputed, train);
    ops.fwd_compute[w.stage] += w.offload_fwd_seconds, ops.bwd_compute[w.stage] += w.offload_bwd_seconds;
  }
  PlanAnalyzer::State::ParameterSums params(stages);
  for (const ParamWork& p : a.params)
    params.add(p.stage, p.gather_unit, p.local_elements, !p.gather.empty(), sum_seconds(p.grad_sync, false),
               sum_seconds(p.gather), sum_seconds(p.regather), sum_seconds(p.grad_sync, true));
  params.find_first_gathers();  // the analysis' memory has the staging buffers
  return analyzer_internal::assemble_totals(ops, params, a.p2p_bytes, a.stage_memory, a.optimizer_seconds_per_stage, plan,
                                            a.device_memory);
}

PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  const NumericGraph ng(graph);
  return analyze_plan(graph, cluster, plan, ng);
}

PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan, const NumericGraph& ng) {
  return PlanAnalyzer(graph, cluster, ng).analyze(plan);
}

}  // namespace symtensor::compiler
