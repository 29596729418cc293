#pragma once
// A plan's step time as a GiNaC formula in the global batch, built from the plan
// analysis's terms (not fitted to samples): every per-micro-batch term is split into a
// part that scales with the micro-batch size (the operators' batch-dependent FLOPs or
// bytes, activation collectives' bandwidth part, pipeline sends) and a constant part
// (weight-only work, collective latencies, gradient synchronisation, ZeRO gathers, the
// optimizer). With the plan's micro-batch count and data-parallel ways fixed, the
// micro-batch size is batch / (dp x m), so the step time is affine in the batch:
//   T(batch) = m * t_slow(batch) + (sum_s t_s(batch) - t_slow(batch)) / v + dp_exposed(batch) + opt.
// Two approximations, stated in the report: the operators' efficiency and roofline side
// and the collectives' algorithm are held at the bound point, and the pieces chosen by a
// max (the slowest stage, whether gradient synchronisation is exposed) are the ones active
// there; `valid_from`/`valid_to` bound the batch range where the exposure branch holds.
#include <string>
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/ir/graph.h"
#include "hardware/symbolic.h"

namespace symtensor::compiler {

// The symbol every step formula is written in (one object, so formulas compare).
const GiNaC::symbol& batch_symbol();

struct StepFormula {
  GiNaC::ex step_time;         // seconds, in `batch`
  GiNaC::ex compute, comm, bubble, dp_exposed, optimizer, p2p;  // its components
  double constant_s = 0;       // T = constant_s + per_sample_s * batch
  double per_sample_s = 0;
  double bound_batch = 0;      // the batch the plan was made for
  double batch_granule = 1;    // batch must be a multiple of dp x micro-batches
  double valid_from = 0, valid_to = 0;  // batch range of the active branches (to may be inf)
  // Peak memory per device of the stage closest to its devices' memory (tightest_stage; on
  // one GPU type the fullest): memory_constant + memory_per_sample * batch.
  double memory_constant = 0, memory_per_sample = 0;
  // The largest multiple of batch_granule whose peak fits every stage's devices: 0 when none
  // does, inf when activations do not grow with the batch.
  double max_batch_that_fits = 0;

  double at(double batch_value) const { return constant_s + per_sample_s * batch_value; }
  std::string text() const;  // "0.0123 + 4.56e-05*batch s"
};

// Throws (one line) when the analysis and plan disagree (sizes). `stage_capacity`: each
// stage's devices' memory where they differ (a mixed fleet: StepEstimate::stage_memory_capacity);
// empty: the analysis's device memory for every stage.
StepFormula build_step_formula(const NumericGraph& graph, const PlanAnalysis& analysis, const Plan& plan,
                               const hardware::Cluster& cluster, const std::vector<double>& stage_capacity = {});

struct BreakEven {
  std::string faster_below, faster_above;  // strategy labels
  double batch = 0;                        // where their step times are equal
  double step_time_s = 0;                  // the common step time there
  bool within_validity = false;            // inside both formulas' valid ranges
};

// Pairs whose formulas cross at a batch of at least one sample, solved with GiNaC's lsolve.
std::vector<BreakEven> break_even_points(const std::vector<std::pair<std::string, const StepFormula*>>& formulas);

}  // namespace symtensor::compiler
