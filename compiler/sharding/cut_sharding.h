#pragma once
// The shardings an operator's cut implies for its operands: a dim that maps to a cut loop
// is split by that loop's axes; a cut reduction loop absent from an output leaves that
// output partial over its axes; every other axis replicates. The gradient of an operand
// is partial over the axes of every cut loop that does not index it.
#include <cstdint>
#include <vector>

#include "compiler/ops/op_semantics.h"
#include "compiler/sharding/node_cut.h"
#include "compiler/sharding/tensor_sharding.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

// The same layouts read in place from the cut, without allocating: what the cost model
// compares and multiplies out for every operand of every plan. Holds pointers into the
// space and the cut, which must outlive it. Partial axes are a bit set (axis ids < 64).
class OperandLayout {
 public:
  static OperandLayout input(const IterationSpace& space, const NodeCut& cut, int input);
  static OperandLayout output(const IterationSpace& space, const NodeCut& cut, int output);
  static OperandLayout input_gradient(const IterationSpace& space, const NodeCut& cut, int input);
  // This layout for another operator of the same iteration space dims and an equal cut (a
  // repeated layer's): the same split and partial axes, read from `dims` and `cut`.
  OperandLayout on(const std::vector<int>& dims, const NodeCut& cut) const { return OperandLayout(dims, cut, partial_); }
  // The same split, partial over the axes of the bit set `axes`: a layout whose partial axes
  // are known already (a repeated layer's gradient).
  OperandLayout partial_over(std::uint64_t axes) const { return OperandLayout(*dims_, *cut_, axes); }

  int rank() const { return static_cast<int>(dims_->size()); }
  // Mesh axes splitting dim d, major to minor.
  const std::vector<int>& dim_axes(int d) const {
    const int loop = (*dims_)[d];
    return loop >= 0 && loop < static_cast<int>(cut_->loop_axes.size()) ? cut_->loop_axes[loop] : kNoAxes;
  }
  std::uint64_t partial_axes() const { return partial_; }
  bool is_partial(int axis) const { return axis >= 0 && axis < 64 && (partial_ >> axis & 1); }
  int dim_of(int axis) const;  // the dim `axis` splits, or -1
  // Every dim split alike (partial sums aside). Inline: the cost model compares layouts of
  // every operand of every plan.
  bool same_split(const OperandLayout& other) const {
    const std::vector<int>& dims = *dims_;
    if (dims.size() != other.dims_->size()) return false;
    if (dims_ == other.dims_ && cut_ == other.cut_) return true;
    for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
      const std::vector<int>& a = dim_axes(d);
      const std::vector<int>& b = other.dim_axes(d);
      if (a.size() != b.size()) return false;
      for (std::size_t k = 0; k < a.size(); ++k)
        if (a[k] != b[k]) return false;
    }
    return true;
  }
  double ways(const hardware::DeviceMesh& mesh) const;  // pieces the tensor is split into
  bool padded() const { return !cut_->padded_extents.empty(); }
  long long padded_extent(int d) const;  // of the loop dim d maps to (NodeCut::padded_extents), 0 when none
  TensorSharding sharding() const;
  friend bool operator==(const OperandLayout& a, const OperandLayout& b) {
    return a.partial_ == b.partial_ && a.same_split(b);
  }

 private:
  static inline const std::vector<int> kNoAxes;
  OperandLayout(const std::vector<int>& dims, const NodeCut& cut, std::uint64_t partial)
      : dims_(&dims), cut_(&cut), partial_(partial) {}
  const std::vector<int>* dims_;  // operand dim -> loop
  const NodeCut* cut_;
  std::uint64_t partial_;
};

// The axis ids of a bit set (OperandLayout::partial_axes), ascending.
std::vector<int> axes_in(std::uint64_t axes);
// The same into `out`, whose storage is kept.
void axes_in(std::uint64_t axes, std::vector<int>& out);

TensorSharding input_sharding(const IterationSpace& space, const NodeCut& cut, int input);
TensorSharding output_sharding(const IterationSpace& space, const NodeCut& cut, int output);
// The sharding in which the gradient of input `input` is produced by the backward pass.
TensorSharding input_gradient_sharding(const IterationSpace& space, const NodeCut& cut, int input);

// Number of devices the node's work is divided over (product of all cut axes' sizes).
double cut_ways(const NodeCut& cut, const hardware::DeviceMesh& mesh);

}  // namespace symtensor::compiler
