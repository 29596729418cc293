#pragma once
// `--strategy megatron` without knobs: Megatron-LM's best configuration. Every valid
// (tp, pp, cp, dp, mb, vp, sp, recompute, distopt, ep, etp) is enumerated — tp dividing the
// GPUs per node and the attention heads, pp dividing the layers or the ranks tp and cp leave
// (uneven stages: --decoder-first/last-pipeline-num-layers, see pipeline_depths), cp (fused attention,
// at least 2k tokens per rank) a power of two up to 32 with the sequence
// divisible by 2·cp, dp the rest, mb dividing the
// per-replica batch, vp dividing the layers per stage (interleaving needs the micro-batch
// count to be a multiple of pp), sp only with tp > 1, and for MoE models ep dividing the
// experts with etp = tp, or etp = 1 when tp divides ep, such that ep x etp divides tp x dp — built with the fixed-knob generator
// (make_megatron_plan; one build per (tp, pp, sp, ep, etp): the other knobs are plan fields) and
// priced by analyze_plan + estimate_step; the fastest plan that fits memory wins.
//
// Four exact prunings keep it fast, from the estimator's monotonicity and a bound:
// micro-batch sizes go up until none of the memory options fits (a larger one only needs
// more memory), and once a plan fits, a memory option that did not fit at a smaller
// micro-batch is not priced where the micro-batches in flight are at their cap (at least 2p);
// a (recompute, distopt) pair is skipped when a pair with no more
// recomputation and no more sharding already fits (it can only be slower); and a
// (layout, vp, mb) point is not priced when the model's compute spread over the devices
// (compute_time_lower_bound), or, once the layout was priced at that micro-batch size, the
// layout's own compute and exposed activation collectives, stretched by its pipeline's fill and
// drain, already exceeds the fastest fitting step found for its expert-parallel size
// (MegatronSpace::unpruned prices those and the skipped memory options too: the same result,
// for checking that).
//
// MegatronSpace::seed is the cheap part of that space the SymTensor search starts from:
// tensor, context or expert parallelism (tp = 1 without them is data and pipeline
// parallelism, which the SymTensor search covers itself, but for uneven stages) with sequence parallelism and the
// distributed optimizer; tensor-parallel widths walked upwards until two in a row do not
// help, micro-batch sizes while they help, interleaving and pipeline depths while they help
// or while memory forces recomputation or FSDP's full sharding on them (a few hundred evaluations
// instead of thousands; not exhaustive, so never the baseline).
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
  // The seed space only: the three fastest fitting configurations that recompute every layer,
  // fastest first, which recomputing fewer layers (as memory needs) may make the fastest of all
  // (the SymTensor search tries them: LLaVA-1.5 7B on 32 H100, tp=2 dp=16 missing its memory
  // by 0.3 GB without recomputation).
  struct FullRecompute {
    Plan plan;
    MegatronKnobs knobs;
    double step_time_s = 0;
  };
  std::vector<FullRecompute> fastest_full_recompute;
  int configurations = 0;  // valid configurations considered (pruned ones included)
  int evaluations = 0;     // analyze_plan + estimate_step calls
  int pruned = 0;          // (layout, vp, mb) points not priced: their step bound exceeds a fitting step
};

enum class MegatronSpace { exhaustive, seed, unpruned };

// Throws when no configuration is valid (naming the last reason).
MegatronSearchResult megatron_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);
// With the caller's analyzer (its graph and cluster), e.g. a search pricing other plans too.
MegatronSearchResult megatron_search(PlanAnalyzer& analyzer, const StrategyOptions& options, MegatronSpace space);

// The exhaustive search restricted to the given knobs (issue #30: partial knobs are
// constraints): each knob the text gives takes that value only, the others are searched as
// above. A given knob no configuration can meet (tp not dividing the GPUs per node or the
// heads, ep not dividing the experts, first=/last= without pp > 1, ...) throws one line naming
// it ("--megatron tp=3: ..."); when every configuration fails, the line names the knobs and
// the last reason. Inference keeps pp = 1 unless pp is given. ep given without etp means
// etp = tp (Megatron-LM's default for --expert-model-parallel-size); sp=1 rules out tp = 1.
MegatronSearchResult megatron_search(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                                     const MegatronConstraints& constraints);

// make_plan's entry for options.megatron:
// - empty: the exhaustive search above;
// - fully fixed (MegatronConstraints::fully_fixed: tp, pp and mb all given): exactly that plan,
//   the knobs left out at their defaults (cp=1, vp=1, sp=0, recompute=none, distopt=0, ep=1,
//   etp=tp, fsdp=0), built by make_megatron_plan as before constraints existed. tp, pp and mb
//   fix the mesh (dp is what they leave) and the micro-batch count; the others are options
//   Megatron-LM itself leaves off unless asked, so "tp=8,pp=2,mb=1" is one configuration;
// - otherwise (e.g. "tp=2", "pp=2,sp=1", "fsdp=3,mb=1"): the constrained search, the fastest
//   plan that fits among those with the given knobs.
Plan make_megatron_best_plan(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);

// The context-parallel degrees Megatron-best prices for this model on `devices` GPUs: 1, and
// from 4k-token sequences with a fused attention kernel each power of two that leaves every rank
// at least 2k tokens and divides the sequence in 2·cp pieces.
std::vector<int> context_parallel_sizes(const Graph& graph, const TransformerStructure& s,
                                        const std::vector<IterationSpace>& spaces, int devices);

}  // namespace symtensor::compiler
