#include "compiler/cost/step_estimate.h"

#include <algorithm>

#include "compiler/cost/interleaved_pipeline.h"

namespace symtensor::compiler {
namespace {

// The link between two consecutive pipeline stages: the level of the pipeline axis (one
// link of a mesh).
double p2p_seconds(const hardware::Cluster& cluster, const hardware::DeviceMesh& mesh, int pipeline_axis, double bytes) {
  if (pipeline_axis < 0 || bytes <= 0) return 0;
  const auto& level = cluster.levels.at(mesh.axes().at(pipeline_axis).level);
  return level.latency_s + bytes / level.peer_bandwidth();
}

}  // namespace

double exposed_gather_seconds(double gather, double first, double compute) {
  if (gather <= 0) return 0;
  const double beyond = std::max(0.0, 2 * (gather - first) - compute);  // both passes against the compute
  return std::min(gather, first + beyond / 2);
}

double exposed_scatter_seconds(double scatter, double gather, double first, double compute) {
  if (scatter <= 0) return 0;
  const double busy = 2 * std::max(0.0, gather - first);  // the gathers beyond the first, both passes
  return std::max(0.0, busy + scatter - compute) - std::max(0.0, busy - compute);
}

namespace {

double micro_batch_scatter(const StageTotals& a, int s) {
  return s < static_cast<int>(a.micro_batch_grad_sync.size()) ? a.micro_batch_grad_sync[s] : 0.0;
}

}  // namespace

double exposed_parameter_seconds(const StageTotals& a, int s) {
  const double compute = a.fwd_compute.at(s) + a.bwd_compute.at(s);
  return 2 * exposed_gather_seconds(a.gather.at(s), a.first_gather.at(s), compute) +
         exposed_scatter_seconds(micro_batch_scatter(a, s), a.gather[s], a.first_gather[s], compute);
}

double pipeline_compute_bound(const std::vector<double>& fwd, const std::vector<double>& bwd, int micro_batches, bool chained) {
  double bound = 0, fill = 0, drain = 0;
  for (std::size_t st = 0; st < fwd.size(); ++st) {
    bound = std::max(bound, (chained ? fill + drain : 0.0) + (fwd[st] + bwd.at(st)) * micro_batches);
    fill += fwd[st], drain += bwd[st];
  }
  return bound;
}

StepEstimate estimate_step(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster) {
  return estimate_step(stage_totals(analysis, plan), plan, cluster);
}

StepEstimate estimate_step(const StageTotals& a, const Plan& plan, const hardware::Cluster& cluster) {
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  const int stages = plan.pipeline_stages();
  const int m = plan.micro_batches;
  const bool train = plan.mode == ExecutionMode::train;
  const std::vector<double>&fwd_compute = a.fwd_compute, &fwd_comm = a.fwd_comm, &bwd_compute = a.bwd_compute,
                          &bwd_comm = a.bwd_comm, &dp = a.grad_sync;
  StepEstimate e;
  e.model_flops = a.model_flops;
  e.hardware_flops = a.hardware_flops;
  // Per micro-batch: ZeRO-3's exposed gathers of one pass, and the whole exposure with
  // ZeRO-2/3's reduce-scatter of each micro-batch's gradients.
  std::vector<double> gather(stages), parameters(stages);
  for (int s = 0; s < stages; ++s) {
    gather[s] = exposed_gather_seconds(a.gather[s], a.first_gather[s], fwd_compute[s] + bwd_compute[s]);
    parameters[s] = train ? exposed_parameter_seconds(a, s) : 2 * gather[s];
  }
  // A model cut over the pipeline counts each device once per stage: the FLOPs above are
  // per pipeline, and every data-parallel replica is inside the cut ways already.

  // Pipeline: the slowest stage sets the steady state; fill and drain pass through all.
  // Interleaved, a micro-batch leaves each device once per chunk: v sends instead of one,
  // which run beside the chunks' compute (Megatron-LM overlaps pipeline sends with virtual
  // stages by default, --overlap-p2p-communication; FRAMEWORKS.md): a device exposes only
  // what its sends need beyond its busy time, while the fill and the drain, with nothing
  // to overlap, wait for every hop between the p x v virtual stages (p x v - 1 of them, each
  // way). Without interleaving, 1F1B's sends are on the critical path.
  const double v = plan.schedule == Schedule::interleaved_1f1b ? std::max(plan.virtual_stages, 1) : 1;
  const double passes = train ? 2 : 1;
  double slowest = 0, fill = 0, hops = 0, slowest_compute = 0, slowest_comm = 0;
  for (int s = 0; s < stages; ++s) {
    const double hop = stages > 1 ? p2p_seconds(cluster, mesh, plan.pipeline_axis, stage_send_bytes(a.p2p_bytes, s)) : 0;
    const double busy = fwd_compute[s] + fwd_comm[s] + bwd_compute[s] + bwd_comm[s] + parameters[s];
    double sends = 0;
    if (v > 1) {
      sends = std::max(0.0, passes * v * hop - busy);
      hops += passes * (s + 1 < stages ? v : v - 1) * hop;
    } else if (s + 1 < stages) {
      sends = passes * hop;
    }
    const double t = busy + sends;
    fill += t;
    if (t > slowest) {
      slowest = t;
      slowest_compute = fwd_compute[s] + bwd_compute[s];
      slowest_comm = fwd_comm[s] + bwd_comm[s] + parameters[s];
      e.p2p_s = sends * m;
    }
  }
  const double pipeline = m * slowest + (fill - slowest) / v + hops;
  e.compute_s = m * slowest_compute;
  e.exposed_comm_s = m * slowest_comm;
  e.bubble_s = pipeline - m * slowest;
  // Gradient synchronisation overlaps the last micro-batch's backward (DDP buckets), with no
  // forward after it to hide behind. That backward's gathers (ZeRO-3) and reduce-scatter
  // (ZeRO-2/3) share the data-parallel links with it: what all need beyond the backward's
  // compute is exposed, less what the micro-batch already counted.
  e.dp_exposed_s = 0;
  for (int s = 0; train && s < stages; ++s)
    e.dp_exposed_s = std::max(e.dp_exposed_s, std::max(0.0, dp[s] + micro_batch_scatter(a, s) + a.gather[s] - bwd_compute[s] -
                                                                 (parameters[s] - gather[s])));
  e.optimizer_s = a.after_step_s;
  e.step_time_s = pipeline + e.dp_exposed_s + e.optimizer_s;

  e.memory_capacity = a.device_memory;
  e.stage_peak_memory = a.peak_memory;
  for (double peak : a.peak_memory) e.peak_memory = std::max(e.peak_memory, peak);
  e.fits = e.peak_memory <= e.memory_capacity;
  const double devices = mesh.num_devices();
  const double peak = cluster.device.peak(plan.precision);
  if (e.step_time_s > 0) {
    e.mfu = e.model_flops / (e.step_time_s * devices * peak);
    e.hfu = e.hardware_flops / (e.step_time_s * devices * peak);
    e.samples_per_s = plan.global_batch / e.step_time_s;
  }
  return e;
}

}  // namespace symtensor::compiler
