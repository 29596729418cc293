#pragma once
// `--strategy megatron` without knobs: Megatron-LM's best configuration. Every valid
// (tp, pp, cp, dp, mb, vp, sp, recompute, distopt, ep, etp) is enumerated — tp dividing the
// GPUs per node and the attention heads, pp dividing the layers, cp (fused attention,
// sequences from 8k, at least 2k tokens per rank) a power of two up to 32 with the sequence
// divisible by 2·cp, dp the rest, mb dividing the
// per-replica batch, vp dividing the layers per stage (interleaving needs the micro-batch
// count to be a multiple of pp), sp only with tp > 1, and for MoE models ep dividing the
// experts with etp = tp, or etp = 1 when tp divides ep, such that ep x etp divides tp x dp — built with the fixed-knob generator
// (make_megatron_plan; one build per (tp, pp, sp, ep, etp): the other knobs are plan fields) and
// priced by analyze_plan + estimate_step; the fastest plan that fits memory wins.
//
// Two exact prunings keep it fast, both from the estimator's monotonicity: micro-batch
// sizes go up until none of the memory options fits (a larger one only needs more
// memory), and a (recompute, distopt) pair is skipped when a pair with no more
// recomputation and no more sharding already fits (it can only be slower).
//
// MegatronSpace::seed is the cheap part of that space the SymTensor search starts from:
// tensor parallelism (tp > 1; tp = 1 is data and pipeline parallelism, which the
// SymTensor search covers itself) with sequence parallelism and the distributed
// optimizer, micro-batches of 1 or 2 samples, and interleaving and pipeline depths walked
// upwards only while the step time drops (about a hundred evaluations instead of
// thousands; not exhaustive, so never the baseline).
#include <map>
#include <string>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/strategies/megatron.h"

namespace symtensor::compiler {

struct MegatronSearchResult {
  Plan plan;
  MegatronKnobs knobs;
  PlanAnalysis analysis;  // of the plan; filled by the searches that own their analyzer
  StepEstimate estimate;
  // The fastest fitting configuration for each expert-parallel size (MoE models; ep = 1
  // only otherwise): its knobs and estimated step time.
  struct Best {
    MegatronKnobs knobs;
    double step_time_s = 0;
  };
  std::map<int, Best> best_by_ep;
  int configurations = 0;  // valid configurations considered (pruned ones included)
  int evaluations = 0;     // analyze_plan + estimate_step calls
};

enum class MegatronSpace { exhaustive, seed };

// Throws when no configuration is valid (naming the last reason).
MegatronSearchResult megatron_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);
// With the caller's analyzer (its graph and cluster), e.g. a search pricing other plans too.
MegatronSearchResult megatron_search(PlanAnalyzer& analyzer, const StrategyOptions& options, MegatronSpace space);

// make_plan's entry: the knobs in options.megatron when given, else the search.
Plan make_megatron_best_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);

}  // namespace symtensor::compiler
