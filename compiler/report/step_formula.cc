#include "compiler/report/step_formula.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "compiler/cost/interleaved_pipeline.h"
#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/sharding/cut_sharding.h"

namespace symtensor::compiler {
namespace {

// a + k * x, x = batch / bound batch (the micro-batch size relative to the bound one).
struct Lin {
  double a = 0, k = 0;
  Lin& operator+=(const Lin& o) {
    a += o.a;
    k += o.k;
    return *this;
  }
  double at(double x) const { return a + k * x; }
};
Lin operator*(double s, Lin l) { return {s * l.a, s * l.k}; }
Lin operator+(Lin l, const Lin& o) { return l += o; }
Lin operator-(Lin l, const Lin& o) { return {l.a - o.a, l.k - o.k}; }

// The batch-dependent share of an affine quantity at micro-batch size b0.
double batch_share(const Affine& q, double b0) {
  const double total = q.at(b0);
  return total > 0 ? q.per_batch * b0 / total : 0;
}

// The data-parallel ways: the mesh axes cutting a batch-dependent loop of any node.
double data_parallel_ways(const NumericGraph& ng, const Plan& plan, const hardware::DeviceMesh& mesh) {
  double ways = 1;
  for (std::size_t n = 0; n < plan.node_cuts.size(); ++n) {
    const NumericNode& node = ng.node(static_cast<NodeId>(n));
    const auto& cut = plan.node_cuts[n].loop_axes;
    for (std::size_t l = 0; l < node.loops.size() && l < cut.size(); ++l) {
      if (node.loops[l].extent.per_batch <= 0) continue;
      double w = 1;
      for (int axis : cut[l]) w *= mesh.axes().at(axis).size;
      ways = std::max(ways, w);
    }
  }
  return ways;
}

class Builder {
 public:
  Builder(const NumericGraph& graph, const PlanAnalysis& a, const Plan& plan, const hardware::Cluster& cluster,
          const std::vector<double>& stage_capacity)
      : ng_(graph), a_(a), plan_(plan), cluster_(cluster), stage_capacity_(stage_capacity), mesh_(plan_mesh(plan, cluster)) {
    if (plan.node_cuts.size() != graph.graph().nodes().size())
      throw std::runtime_error("step formula: the plan has " + std::to_string(plan.node_cuts.size()) +
                               " node cuts for a graph of " + std::to_string(graph.graph().nodes().size()) +
                               " nodes");
    dp_ = data_parallel_ways(ng_, plan, mesh_);
    b0_ = plan.global_batch / (dp_ * std::max(plan.micro_batches, 1));
  }

  // An operator's seconds: launch constant, the rest split by the dominating roofline side.
  Lin op_time(const OpWork& w, double flops, double bytes, double seconds) const {
    if (seconds <= 0) return {};
    const auto& dev = cluster_.device;
    const double launch = std::min(dev.kernel_launch_s, seconds);
    const double math = flops > 0 ? flops / (dev.peak(plan_.precision) * dev.efficiency_for(flops)) : 0;
    const double memory = bytes > 0 && dev.hbm_bandwidth > 0 ? bytes / dev.hbm_bandwidth : 0;
    const NumericNode& node = ng_.node(w.node);
    const double share = math >= memory ? batch_share(node.flops, b0_) : batch_share(node.bytes, b0_);
    const double rest = seconds - launch;
    return {launch + rest * (1 - share), rest * share};
  }

  // A collective's seconds: latency constant, bandwidth part scaled by its tensor's share.
  Lin comm_time(const CommOp& op, bool parameter_sized) const {
    const double latency =
        std::min(op.seconds, hardware::collective_time(cluster_, op.kind, op.group, 0).seconds);
    double share = parameter_sized ? 0 : 1;
    if (!parameter_sized) {
      if (op.tensor != kNone) share = batch_share(ng_.tensor_elements(op.tensor), b0_);
    }
    const double rest = op.seconds - latency;
    return {latency + rest * (1 - share), rest * share};
  }

  Lin comm_sum(const std::vector<CommOp>& ops, bool parameter_sized) const {
    Lin s;
    for (const auto& op : ops) s += comm_time(op, parameter_sized);
    return s;
  }

  // One send of `bytes` between pipeline stages.
  Lin p2p(double bytes) const {
    if (plan_.pipeline_axis < 0 || bytes <= 0) return {};
    const auto& level = cluster_.levels.at(mesh_.axes().at(plan_.pipeline_axis).level);
    return {level.latency_s, bytes / level.peer_bandwidth()};  // sends carry activations
  }

  StepFormula build() {
    const int stages = plan_.pipeline_stages();
    const int m = plan_.micro_batches;
    const bool train = plan_.mode == ExecutionMode::train;
    std::vector<Lin> fwdc(stages), fwdm(stages), bwdc(stages), bwdm(stages);
    // The parameters' collectives per stage, summed as the estimate sums them.
    const StageTotals totals = stage_totals(a_, plan_);
    std::vector<double> dp = totals.grad_sync, gather = totals.gather;
    for (const OpWork& w : a_.ops) {
      if (w.stage < 0 || w.stage >= stages) throw std::runtime_error("step formula: operator stage out of range");
      const Lin f = op_time(w, w.fwd_flops, w.fwd_bytes, w.fwd_seconds);
      fwdc[w.stage] += f;
      fwdm[w.stage] += comm_sum(w.fwd_comm, false);
      if (!train) continue;
      bwdc[w.stage] += op_time(w, w.bwd_flops, w.bwd_bytes, w.bwd_seconds) + (w.recomputed ? f : Lin{});
      bwdm[w.stage] += comm_sum(w.bwd_comm, false) + (w.recomputed ? comm_sum(w.fwd_comm, false) : Lin{});
    }
    // Exposed ZeRO-3 gathers and ZeRO-2/3 reduce-scatters of each micro-batch as the estimate
    // prices them, at the bound batch (constants).
    std::vector<double> scatter(stages, 0.0);
    for (int s = 0; s < stages; ++s) {
      const double compute = (fwdc[s] + bwdc[s]).at(1);
      gather[s] = exposed_gather_seconds(gather[s], totals.first_gather[s], compute);
      if (train && s < static_cast<int>(totals.micro_batch_grad_sync.size())) {
        scatter[s] = exposed_scatter_seconds(totals.micro_batch_grad_sync[s], totals.gather[s], totals.first_gather[s], compute);
        dp[s] += totals.micro_batch_grad_sync[s] - scatter[s];
      }
      // The last backward's gathers share the links with the gradients (estimate_step).
      dp[s] += totals.gather[s] - gather[s];
    }
    // The pipeline's sends as estimate_step prices them: interleaved, what a stage's v sends
    // per pass take beyond its busy time (the branch active at the bound batch), and every
    // hop between the virtual stages in the fill and the drain.
    const double v = plan_.schedule == Schedule::interleaved_1f1b ? std::max(plan_.virtual_stages, 1) : 1;
    const double passes = train ? 2.0 : 1.0;
    std::vector<Lin> t(stages), p2ps(stages);
    Lin hops;
    int slow = 0;
    std::vector<Lin> overlapped_sends;  // v sends less the busy time, each stage's: their branch bounds the formula
    for (int s = 0; s < stages; ++s) {
      const Lin busy = fwdc[s] + fwdm[s] + bwdc[s] + bwdm[s] + Lin{2 * gather[s] + scatter[s], 0};
      const Lin hop = p2p(stage_send_bytes(a_.p2p_bytes, s));
      if (v > 1) {
        const Lin sends = passes * v * hop - busy;
        if (sends.at(1) > 0) p2ps[s] = sends;
        overlapped_sends.push_back(sends);
        hops += (passes * (s + 1 < stages ? v : v - 1)) * hop;
      } else if (s + 1 < stages) {
        p2ps[s] = passes * hop;
      }
      t[s] = busy + p2ps[s];
      if (t[s].at(1) > t[slow].at(1)) slow = s;
    }

    // Exposed gradient synchronisation: the stage and branch active at the bound batch.
    StepFormula f;
    f.bound_batch = plan_.global_batch;
    f.batch_granule = dp_ * std::max(m, 1);
    f.valid_from = 0;
    f.valid_to = std::numeric_limits<double>::infinity();
    // Each stage's exposed sends keep the branch (exposed or hidden) they have at the bound
    // batch up to where sends and busy time cross.
    for (const Lin& sends : overlapped_sends) {
      if (sends.k == 0) continue;
      const double x_switch = -sends.a / sends.k;
      if (x_switch <= 0) continue;
      const bool exposed = sends.at(1) > 0, exposed_above = sends.k > 0;
      if (exposed == exposed_above) f.valid_from = std::max(f.valid_from, x_switch * f.bound_batch);
      else f.valid_to = std::min(f.valid_to, x_switch * f.bound_batch);
    }
    Lin exposed;
    if (train) {
      int worst = -1;
      double worst_value = 0;
      for (int s = 0; s < stages; ++s) {
        const double e = dp[s] - bwdc[s].at(1);
        if (e > worst_value) worst_value = e, worst = s;
      }
      for (int s = 0; s < stages; ++s) {
        // dp[s] - bwdc[s](x) changes sign at x = (dp - a) / k.
        if (bwdc[s].k <= 0) continue;
        const double x_switch = (dp[s] - bwdc[s].a) / bwdc[s].k;
        if (s == worst) f.valid_to = std::min(f.valid_to, x_switch * f.bound_batch);
        else if (worst < 0) f.valid_from = std::max(f.valid_from, x_switch * f.bound_batch);
      }
      if (worst >= 0) exposed = Lin{dp[worst], 0} - bwdc[worst];
    }

    // Symbolic form: x = batch / bound batch.
    const GiNaC::symbol& B = batch_symbol();
    const GiNaC::ex x = B / GiNaC::numeric(f.bound_batch > 0 ? f.bound_batch : 1.0);
    auto ex = [&](const Lin& l) { return GiNaC::ex(l.a) + GiNaC::ex(l.k) * x; };
    const double mm = m, bubble_factor = 1.0 / v;
    Lin other;  // the other stages, for the fill/drain term
    for (int s = 0; s < stages; ++s)
      if (s != slow) other += t[s];
    f.compute = mm * ex(fwdc[slow] + bwdc[slow]);
    f.comm = mm * ex(fwdm[slow] + bwdm[slow] + Lin{2 * gather[slow] + scatter[slow], 0});
    f.p2p = mm * ex(p2ps[slow]);
    f.bubble = bubble_factor * ex(other) + ex(hops);
    f.dp_exposed = ex(exposed);
    f.optimizer = GiNaC::ex(totals.after_step_s);
    f.step_time = (f.compute + f.comm + f.p2p + f.bubble + f.dp_exposed + f.optimizer).expand();
    const GiNaC::ex c0 = GiNaC::evalf(f.step_time.subs(B == 0));
    const GiNaC::ex c1 = GiNaC::evalf(f.step_time.coeff(B, 1));
    f.constant_s = GiNaC::is_a<GiNaC::numeric>(c0) ? GiNaC::ex_to<GiNaC::numeric>(c0).to_double() : 0;
    f.per_sample_s = GiNaC::is_a<GiNaC::numeric>(c1) ? GiNaC::ex_to<GiNaC::numeric>(c1).to_double() : 0;

    // Memory: static + activations x in flight + the largest operator's buffers; those two
    // scale with the micro-batch (model states, collective staging and the reserve do not).
    f.max_batch_that_fits = std::numeric_limits<double>::infinity();
    std::vector<double> peaks;
    for (const StageMemory& mem : a_.stage_memory) peaks.push_back(mem.peak());
    const auto capacity = [&](std::size_t s) { return s < stage_capacity_.size() ? stage_capacity_[s] : a_.device_memory; };
    const std::size_t tightest = tightest_stage(peaks, capacity);
    for (std::size_t s = 0; s < a_.stage_memory.size(); ++s) {
      const StageMemory& mem = a_.stage_memory[s];
      const double scaling = mem.activations_per_micro_batch * mem.micro_batches_in_flight + mem.working_buffers;
      const double fixed = mem.peak() - scaling;
      const double grow = scaling / f.bound_batch;
      if (s == tightest) f.memory_constant = fixed, f.memory_per_sample = grow;
      if (grow > 0) f.max_batch_that_fits = std::min(f.max_batch_that_fits, (capacity(s) - fixed) / grow);
    }
    // A batch the plan can run: a whole multiple of dp x micro-batches, 0 when not even one fits.
    if (std::isfinite(f.max_batch_that_fits))
      f.max_batch_that_fits = std::max(0.0, std::floor(f.max_batch_that_fits / f.batch_granule)) * f.batch_granule;
    return f;
  }

 private:
  const NumericGraph& ng_;
  const PlanAnalysis& a_;
  const Plan& plan_;
  const hardware::Cluster& cluster_;
  const std::vector<double>& stage_capacity_;
  hardware::DeviceMesh mesh_;
  double dp_ = 1, b0_ = 1;
};

}  // namespace

const GiNaC::symbol& batch_symbol() {
  static const GiNaC::symbol batch("batch");
  return batch;
}

std::string StepFormula::text() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.4g + %.4g*batch s", constant_s, per_sample_s);
  return buf;
}

StepFormula build_step_formula(const NumericGraph& graph, const PlanAnalysis& analysis, const Plan& plan,
                               const hardware::Cluster& cluster, const std::vector<double>& stage_capacity) {
  return Builder(graph, analysis, plan, cluster, stage_capacity).build();
}

std::vector<BreakEven> break_even_points(const std::vector<std::pair<std::string, const StepFormula*>>& formulas) {
  std::vector<BreakEven> out;
  const GiNaC::symbol& B = batch_symbol();
  for (std::size_t i = 0; i < formulas.size(); ++i)
    for (std::size_t j = i + 1; j < formulas.size(); ++j) {
      const StepFormula& fi = *formulas[i].second;
      const StepFormula& fj = *formulas[j].second;
      if (std::fabs(fi.per_sample_s - fj.per_sample_s) <= 1e-15 * std::max(fi.per_sample_s, fj.per_sample_s))
        continue;
      const GiNaC::ex solution = GiNaC::lsolve(fi.step_time == fj.step_time, B);
      const GiNaC::ex value = GiNaC::evalf(solution);
      if (!GiNaC::is_a<GiNaC::numeric>(value)) continue;
      const double batch = GiNaC::ex_to<GiNaC::numeric>(value).to_double();
      // A crossing below one sample is no batch either plan runs.
      if (!(batch >= 1) || !std::isfinite(batch)) continue;
      BreakEven be;
      be.batch = batch;
      be.step_time_s = fi.at(batch);
      // Below the crossing the smaller constant wins; above it the smaller slope.
      const bool i_below = fi.per_sample_s > fj.per_sample_s;
      be.faster_below = i_below ? formulas[i].first : formulas[j].first;
      be.faster_above = i_below ? formulas[j].first : formulas[i].first;
      be.within_validity = batch >= std::max(fi.valid_from, fj.valid_from) && batch <= std::min(fi.valid_to, fj.valid_to);
      out.push_back(be);
    }
  return out;
}

}  // namespace symtensor::compiler
