#pragma once
// Block layouts for Splits whose axis is cut. Megatron-LM cuts a fused QKV projection
// head-wise: rank r holds [q_r, k_r, v_r], so the local Split yields q_r, k_r and v_r. The
// Split's input then is not one contiguous chunk of its axis but one chunk of each block
// (one block per Split output), concatenated. That layout reaches back along the same loop
// through every operator between the Split and the weights (bias Add, MatMul columns), so
// the weights are sliced block by block. An operator that would need such a dim whole, in
// another layout, or regrouped (Reshape, Concat, a collective on it) is refused.
#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

struct DimBlocks {
  int dim = -1;                      // -1: the tensor has no blocked dim
  std::vector<std::int64_t> sizes;   // global extents of the blocks, in order along `dim`
  std::vector<int> axes;             // mesh axes splitting every block, major to minor
  NodeId split = kNone;              // the Split the layout comes from (for messages)
  friend bool operator==(const DimBlocks& a, const DimBlocks& b) { return a.dim == b.dim && a.sizes == b.sizes; }
};

// Per tensor; `live` marks the nodes the program runs, `global_shape` gives bound extents.
// Throws (one line naming the node and tensor) where the layout cannot be carried.
std::vector<DimBlocks> find_split_blocks(Graph& graph, const Plan& plan, const hardware::DeviceMesh& mesh,
                                         const std::vector<bool>& live,
                                         const std::function<std::vector<std::int64_t>(TensorId)>& global_shape);

// The loop of a Split's axis when the cut splits it (so the Split is the end of a block
// layout), else -1.
int cut_split_axis_loop(const Graph& graph, NodeId node, const NodeCut& cut);

}  // namespace symtensor::compiler
