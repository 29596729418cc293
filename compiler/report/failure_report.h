#pragma once
// What-if after a failure, in words and files (issue #32): `compile --without K node` prints
// how many of the GPUs left SymTensor's plan and Megatron-best's use and idle, and
// `sweep --fail-nodes A..B` tabulates throughput as nodes are lost, both plans side by side,
// into report.md, results.csv and results.json.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/search/failure_plans.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// "0..2" (both ends included) or "2" (that one count). Throws "--fail-nodes TEXT: ..." on
// bad text or a range that runs downwards.
std::pair<int, int> parse_fail_nodes(const std::string& text);

// One row of the sweep: the cluster after `lost` nodes.
struct FailureRow {
  int lost = 0;
  FailurePlans plans;
};

struct FailureSweep {
  std::string model;
  std::string cluster;       // the cluster as given (before any loss)
  double tokens_per_sample = 0;
  double global_batch = 0;
  std::vector<FailureRow> rows;
};

// Rows for `lost` = from .. to nodes taken from `cluster` (hardware::without_nodes with
// `group`), each planned by plans_after_loss (on a mixed fleet every row simulated, also one
// left with a single group: simulate_failure_plans). `progress` (may be empty) gets a line a row.
FailureSweep run_failure_sweep(Graph& graph, const hardware::Cluster& cluster, int from, int to, const std::string& group,
                               const StrategyOptions& options, const std::function<void(const std::string&)>& progress);

// Tokens (or samples where the model has no sequence) a second of a plan; 0 when it has no step.
double plan_throughput(const GridPlan& p, double tokens_per_sample);

// compile's lines: the GPUs left, then each plan with the GPUs it uses and idles, its step and
// throughput, and why it runs on fewer GPUs than are left.
std::string describe_after_loss(const FailurePlans& plans, int lost, double tokens_per_sample);

// The table (stdout and report.md): one row per nodes lost.
std::string failure_table(const FailureSweep& sweep);
// report.md, results.csv and results.json, for write_files_atomically.
std::vector<std::pair<std::string, std::string>> failure_sweep_files(const FailureSweep& sweep);

}  // namespace symtensor::compiler
