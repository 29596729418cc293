#pragma once
// A plan's label in the reports: its parallel degrees and batching in words that cannot be
// misread ("tp=2 dp=4 pp=2 cp=1 ep=1, 8 micro-batches of 4 samples, ..."), read off the
// plan's cuts of the transformer's weight GEMMs (compiler/analysis/transformer_structure.h)
// as the export recipe reads them, never from node names.
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct PlanDegrees {
  int tp = 1, dp = 1, pp = 1, cp = 1, ep = 1, vp = 1;
  int micro_batches = 1;
  double micro_batch_size = 1;  // samples per micro-batch per data-parallel rank
  int replicas = 1;  // HSDP: the data-parallel replicas (Plan::replicate_axes' size), dp / replicas the shard group
};

// tp: the column GEMMs' output width ways; dp: their batch loop's; cp: their sequence loop's;
// ep: the expert GEMMs' expert loop's. Without column GEMMs (not a transformer): dp the widest
// batch cut, tp the widest other cut of a weight GEMM.
PlanDegrees plan_degrees(Graph& graph, const Plan& plan, const hardware::Cluster& cluster);

// "<strategy> tp=2 dp=4 pp=2 cp=1 ep=1, 8 micro-batches of 4 samples[, vp=2][, recompute
// full][, ZeRO-1][, distributed optimizer][, HSDP 4 replicas x 8 shards][, sequence parallel]";
// with batch shares (Plan::group_micro_batches) "8 / 2 micro-batches per replica by group of 2 samples".
std::string plan_label(const std::string& strategy, const PlanDegrees& d, const Plan& plan);
// The label of `plan` as above, or `otherwise` where its degrees cannot be read: what the
// reports, compile, simulate and fit name a plan by.
std::string plan_label_or(const std::string& strategy, Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
                          const std::string& otherwise);

}  // namespace symtensor::compiler
