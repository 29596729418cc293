#pragma once
// D-Rec's graph simplification: the heavy operators (gemm, convolution, routing) are the
// search's nodes; the cheap ones between them are folded into edges that carry the
// mapping of the consumer's input dims onto the producer's output dims.
//
// Walking back from a heavy consumer's activation input through cheap operators, a dim
// follows its loop (output dim -> loop -> input dim). It is lost (-1) where it meets a
// normalization, softmax or reduction loop (a split there must be gathered first) or a
// broadcast. A path passes at most kMaxFoldedDepth cheap operators and at most one with
// several activation inputs (a residual Add), so a residual stream links a layer to its
// predecessor only, which keeps the edge count linear in the graph.
#include <vector>

#include "compiler/cost/numeric_graph.h"
#include "compiler/ir/graph.h"

namespace symtensor::compiler {

inline constexpr int kMaxFoldedDepth = 8;

struct FoldedEdge {
  int from = 0, to = 0;        // heavy operator indices (producer, consumer)
  int from_output = 0;         // output index of the producer
  int to_input = 0;            // input index of the consumer
  std::vector<int> dim_map;    // consumer input dim -> producer output dim, -1 when lost
  bool linear = true;          // data movement only: a partial sum may cross it
  double share = 1;            // 1 / edges leaving the same producer output (one redistribution serves them)
};

struct FoldedGraph {
  std::vector<NodeId> heavy;      // node ids of heavy operators, topological order
  std::vector<int> heavy_index;   // per node id: index into heavy, or -1
  std::vector<FoldedEdge> edges;
};

bool is_heavy(OpKind kind);

FoldedGraph fold_graph(const NumericGraph& ng);

}  // namespace symtensor::compiler
