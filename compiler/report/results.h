#pragma once
// What `symtensor compare` and `symtensor sweep` found: one row per strategy (or per
// cluster and size), with the numbers every report file is written from. The report
// writers only format these; tests parse the files back and compare them to these values.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/analysis/palm_flops.h"
#include "compiler/cost/memory_breakdown.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/lowering/simulation_report.h"
#include "compiler/plan/plan.h"
#include "compiler/report/plan_explain.h"
#include "compiler/report/step_formula.h"
#include "compiler/report/timeline.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct StrategyResult {
  std::string strategy;  // as requested: "dp", "megatron", ...
  std::string label;     // with its knobs: "megatron tp=8,pp=2"
  bool ok = false;       // a plan was made and estimated
  std::string error;     // why not, one line
  double search_time_s = 0;  // make_plan wall time
  std::optional<Plan> plan;
  StepEstimate estimate;
  std::vector<StageMemoryBreakdown> memory;  // the estimate's peak per stage, part by part
  bool simulated = false;
  std::string simulation_error;  // why the simulation is missing, when it is
  SimulationReport simulation;
  std::optional<StepFormula> formula;
  PlanExplanation explanation;
  // The memory the row's plan must fit in on its devices: their usable share (the profile's
  // reserve and the headroom off), a mixed fleet's tightest stage's; 0 (no plan): the
  // results' device memory. Each stage's own: stage_capacity_bytes.
  double memory_capacity_bytes = 0;

  // The referee's numbers when simulated, else the analytic estimate's.
  double step_time_s() const;
  double samples_per_s() const;
  double mfu() const;
  std::optional<double> mfu_6n() const;  // 6N + 12Lhs (palm_mfu); nullopt where it does not apply
  bool fits() const;
  std::vector<double> stage_peak_memory() const;
  // Stage s's devices' memory (of stage_peak_memory()'s stage s): the simulator's for it when
  // simulated, else estimate.stage_memory_capacity's on a mixed fleet, else memory_capacity_bytes.
  double stage_capacity_bytes(std::size_t s) const;
  // The stage whose peak comes closest to its own devices' memory (or furthest over it); on
  // one GPU type the fullest stage. Its peak and capacity are the row's memory figures, so
  // that a fleet row never shows one GPU's peak against another's capacity.
  std::size_t tightest_stage() const;
  double peak_memory_bytes() const;  // the tightest stage's
  std::string evaluator() const;  // "simulation" or "analytic"
};

// The GPUs of a cluster, one entry per group of a mixed fleet (in order; else one): their
// device, how many, and each one's memory.
struct DeviceKind {
  std::string name;
  int devices = 0;
  double memory_bytes = 0;
};
std::vector<DeviceKind> device_kinds(const hardware::Cluster& cluster);
// "32 devices, 79.63 GiB each", or for several kinds each one's count and memory:
// "48 devices: 16 H100-SXM5-80GB of 79.63 GiB, 32 L4-24GB of 22.49 GiB".
std::string describe_devices(const std::vector<DeviceKind>& kinds);

struct CompareResults {
  std::string model;
  std::string cluster;
  int devices = 0;
  double device_memory_bytes = 0;  // a mixed fleet's uniform view's (the least of its groups')
  std::vector<DeviceKind> device_kinds;
  std::map<std::string, double> bindings;
  double tokens_per_sample = 0;  // bound_sequence_length: the bound sequence dim, 0 when unknown
  PalmFlops palm;                // the terms of every row's mfu_6n
  std::vector<StrategyResult> strategies;
  int chosen = -1;  // index of the fastest plan that fits, -1 when none
  // Why the chosen plan beats the next one that fits, in lines of text (why_chosen, plan_versus.h);
  // empty when none was chosen or the results were read back from files.
  std::vector<std::string> why_chosen;
  // step_time_lower_bound (compiler/cost/step_bound.h): no plan steps faster; 0 when the
  // graph has no bound batch.
  double step_lower_bound_s = 0;
  std::vector<BreakEven> break_evens;
  Timeline timeline;  // the chosen plan's simulated step (empty when not simulated)
  // On a mixed fleet: the fleet search's result in lines (describe_fleet_result: each group
  // with its stages and layers, Megatron-best (a) and (b), the speedup, the ceiling); else empty.
  std::string fleet;

  double tokens_per_s(const StrategyResult& r) const { return r.samples_per_s() * tokens_per_sample; }
  // The capacity beside a row's peak: its tightest stage's.
  double row_memory_bytes(const StrategyResult& r) const {
    const double capacity = r.stage_capacity_bytes(r.tightest_stage());
    return capacity > 0 ? capacity : device_memory_bytes;
  }
};

struct SweepPoint {
  std::string cluster;
  int gpus = 0;
  bool ok = false;
  std::string error;         // why no plan (every strategy failed or none fits)
  std::string strategy;      // best label
  std::string evaluator = "analytic";
  double step_time_s = 0, samples_per_s = 0, tokens_per_s = 0, mfu = 0, peak_memory_bytes = 0;
  std::optional<double> mfu_6n;    // 6N + 12Lhs (palm_mfu); nullopt where it does not apply
  double memory_capacity_bytes = 0;
  double price_per_gpu_hour = 0;   // 0 when the profile has none
  double time_to_train_s = 0;      // for SweepResults::tokens
  double cost_usd = 0;             // gpus x hours x price
  double cost_per_million_tokens = 0;
  std::vector<std::string> rejected;  // "strategy: reason" for the ones not chosen
  std::vector<StageMemoryBreakdown> memory;  // the chosen plan's, per stage
};

struct SweepResults {
  std::string model;
  std::map<std::string, double> bindings;
  double tokens_per_sample = 0;
  PalmFlops palm;     // the terms of every point's mfu_6n
  double tokens = 0;  // to train
  // The prices given with --price (USD per GPU-hour, by cluster name); the other clusters'
  // prices are their profiles' illustrative ones.
  std::map<std::string, double> prices_given;
  std::vector<std::string> clusters;
  std::vector<int> gpus;
  std::vector<SweepPoint> points;
  double elapsed_s = 0;
  // `sweep --shard K/N`: this result holds the points whose index (clusters major, then
  // GPU counts) is K-1 modulo N; `merge` joins N of them (shard_count 1: the whole sweep).
  int shard_index = 1, shard_count = 1;
};

}  // namespace symtensor::compiler
