#pragma once
// A node's cut: what a Plan holds per operator (compiler/plan/plan.h) and the sharding floor
// reads to give each operand its layout (cut_sharding.h).
#include <map>
#include <vector>

namespace symtensor::compiler {

// How one operator's iteration space is cut: for each loop dim (in the order of the
// node's IterationSpace::loops), the mesh axes splitting it, major to minor.
struct NodeCut {
  NodeCut() = default;
  NodeCut(const NodeCut&) = default;
  NodeCut(NodeCut&&) = default;
  NodeCut& operator=(NodeCut&&) = default;
  // A plan's cuts are copied whole (the analyzer keeps the plans it priced), and assigning an
  // empty std::map onto another (every node's but a padded vocabulary's) costs more than
  // copying the loop axes (~70 instructions). A member added here must be copied here too.
  NodeCut& operator=(const NodeCut& other) {
    loop_axes = other.loop_axes;
    if (!padded_extents.empty() || !other.padded_extents.empty()) padded_extents = other.padded_extents;
    return *this;
  }

  std::vector<std::vector<int>> loop_axes;
  // Loops run over more than their extent, loop -> padded extent: Megatron-LM's padded
  // vocabulary (a multiple of --make-vocab-size-divisible-by x tp). The extra rows are real
  // memory and FLOPs: the cost model prices every operand dim over such a loop at the padded
  // extent, split as cut. Empty for every other node.
  std::map<int, long long> padded_extents;
  friend bool operator==(const NodeCut&, const NodeCut&) = default;
};

}  // namespace symtensor::compiler
