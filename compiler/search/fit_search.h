#pragma once
// `symtensor fit`: what fits, searched over the real cost model (analyze_plan +
// estimate_step), never extrapolated:
// - the largest micro-batch: for a micro-batch size b, every Megatron layout of the cluster
//   (tp dividing the GPUs per node, pp the rest of the devices, its layers split as Megatron-LM
//   splits them (megatron_uneven_splits where pp does not divide them), sp with tp, recompute none |
//   selective | full, distributed optimizer or not; dp the rest, pp micro-batches per step)
//   is priced and the fastest that fits kept (only those the target of StrategyOptions::bound
//   runs as written, when set: `fit --stack T`); b doubles until none fits, then bisection
//   finds the largest b that fits (memory grows with b);
// - the longest sequence: the model re-imported with seq = S, planned by the strategy
//   search at the given batch; S doubles from the bound value, then bisection to a
//   multiple of `seq_step`;
// - the fewest devices: the cluster profile at 1, 2, 4, ... GPUs in one node, then 2, 3,
//   4 ... nodes, each planned by the strategy search; the first that fits.
// Each answer carries the fastest plan there and the first value that does not fit.
#include <functional>
#include <map>
#include <string>

#include "compiler/fusion/fusion_pass.h"
#include "compiler/strategies/megatron.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct FitPlan {
  bool fits = false;
  std::string label;          // the plan's name (FitQuery::label)
  double step_time_s = 0;
  double samples_per_s = 0;
  double tokens_per_sample = 0;  // the bound sequence length; 0 where the model has none
  double mfu = 0;
  double peak_memory = 0;     // the fastest fitting plan's, or the least any plan needed
  double capacity = 0;
};

struct FitAnswer {
  bool found = false;         // some value fits
  double value = 0;           // the largest (micro-batch, sequence) or smallest (devices) that fits
  FitPlan plan;               // the fastest plan at `value`
  double next = 0;            // the value one step further, which does not fit
  FitPlan next_plan;          // what it would need
  int evaluations = 0;        // plans priced
};

struct FitQuery {
  std::string model;          // ONNX file
  std::string bind;           // --bind text (batch and seq for the sequence and device queries)
  FusionOptions fusion;
  std::string batch_dim;      // --batch-dim (empty: found from the graph)
  std::string sequence_dim;   // --seq-dim (empty: `seq`)
  std::string strategy = "symtensor";
  StrategyOptions options;
  int seq_step = 64;
  int max_micro_batch = 1 << 16;
  int max_nodes = 1024;
  std::function<void(const std::string&)> progress;
  // The name of a plan the strategy made (the driver's: report/plan_label, which sits above
  // the searches); unset: the strategy's name. The Megatron micro-batch query names its
  // layouts by their --megatron knobs ("megatron tp=8,pp=1,mb=4,..."), or with a label by it
  // and the knobs after it ("megatron tp=8 dp=1 pp=1 cp=1 ep=1, ... (--megatron tp=8,...)").
  std::function<std::string(Graph&, const Plan&, const hardware::Cluster&)> label;
};

// The fastest Megatron layout with micro-batch size `b` on `cluster` (see above).
FitPlan fit_micro_batch(const FitQuery& q, const hardware::Cluster& cluster, int b, int* evaluations = nullptr);
FitAnswer largest_micro_batch(const FitQuery& q, const hardware::Cluster& cluster);

// The strategy's plan with the model bound as q.bind plus `overrides` (the sequence dim -> S).
FitPlan fit_strategy(const FitQuery& q, const hardware::Cluster& cluster, const std::map<std::string, double>& overrides);
FitAnswer longest_sequence(const FitQuery& q, const hardware::Cluster& cluster);
// `base`: the cluster (its profile, stack and headroom) scaled as the search walks.
FitAnswer fewest_devices(const FitQuery& q, const hardware::Cluster& base);

}  // namespace symtensor::compiler
