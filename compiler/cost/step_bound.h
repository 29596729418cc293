#pragma once
// A lower bound on the step time of every plan of a model on a cluster that the cost
// model can price: the whole step's forward and backward compute (and the optimizer)
// as one device would run it on the whole global batch, spread evenly over the devices,
// with no communication, no pipeline bubble and no recomputation. Splitting an operator
// never makes it faster per FLOP (the GEMM and attention efficiency curves rise with the
// kernel's size, and a shard reads at least its share of the bytes), so no partitioning
// beats it; the ratio of a plan's step to it is the most any other plan could gain.
#include "compiler/ir/graph.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

class NumericGraph;

// Seconds; throws where the graph has no bound batch (as the data-parallel plan does).
double step_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options);
// The same with the graph compiled at hand (NumericGraph: its iteration spaces and sizes).
double step_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                             const NumericGraph& ng);

// Its compute part alone (the optimizer left out): what the devices' compute streams of any
// plan add up to at least, per device. A pipelined plan's estimate stretches it by the fill
// and drain (MegatronSearch prunes with that).
double compute_time_lower_bound(Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                                const NumericGraph& ng);

}  // namespace symtensor::compiler
