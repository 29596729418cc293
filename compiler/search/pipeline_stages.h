#pragma once
// Cost-balanced contiguous pipeline stages over the topological order. A stage boundary
// may sit only where the activations crossing it are (within 5%) the fewest of any
// interior position — between layers of a transformer, where only the residual stream
// crosses. Among those boundaries the split minimizing the most expensive stage is
// found by a binary search on the stage limit with a greedy fill (exact for contiguous
// partitions over a fixed candidate set).
#include <vector>

#include "compiler/cost/numeric_graph.h"

namespace symtensor::compiler {

struct StageSplit {
  std::vector<int> stage_of_node;  // per node id
  std::vector<double> stage_cost;  // sum of node costs per stage
};

// `node_cost`: per node id. Throws when the graph has fewer boundary positions than
// `stages - 1`. Nodes fed only by constants and graph inputs take their first consumer's stage.
StageSplit split_pipeline_stages(const NumericGraph& ng, const std::vector<double>& node_cost, double micro_batch,
                                 int stages);

// Positions (index into the topological order where a new stage may begin) allowed as
// boundaries; exposed to size the pipeline candidates.
std::vector<int> stage_boundary_candidates(const NumericGraph& ng, double micro_batch);

}  // namespace symtensor::compiler
