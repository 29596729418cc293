#include "compiler/sharding/cut_sharding.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace symtensor::compiler {
namespace {

// Bit set of the axes of cut loops that none of `dims` maps to.
std::uint64_t axes_of_absent_loops(const std::vector<int>& dims, const NodeCut& cut, const IterationSpace& space,
                                   bool reductions_only) {
  std::uint64_t axes = 0;
  for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
    if (cut.loop_axes[l].empty()) continue;  // most loops are not cut: no search of the dims
    if (reductions_only && !(l < space.loops.size() && space.loops[l].reduction)) continue;
    if (std::find(dims.begin(), dims.end(), static_cast<int>(l)) != dims.end()) continue;
    for (int a : cut.loop_axes[l]) {
      if (a < 0 || a >= 64) throw std::runtime_error("sharding: mesh axis id " + std::to_string(a) + " is out of range");
      axes |= std::uint64_t{1} << a;
    }
  }
  return axes;
}

}  // namespace

OperandLayout OperandLayout::input(const IterationSpace& space, const NodeCut& cut, int input) {
  return OperandLayout(space.input_dims.at(input), cut, 0);
}

OperandLayout OperandLayout::output(const IterationSpace& space, const NodeCut& cut, int output) {
  const auto& dims = space.output_dims.at(output);
  return OperandLayout(dims, cut, axes_of_absent_loops(dims, cut, space, true));
}

OperandLayout OperandLayout::input_gradient(const IterationSpace& space, const NodeCut& cut, int input) {
  const auto& dims = space.input_dims.at(input);
  return OperandLayout(dims, cut, axes_of_absent_loops(dims, cut, space, false));
}

int OperandLayout::dim_of(int axis) const {
  for (int d = 0; d < rank(); ++d) {
    const auto& axes = dim_axes(d);
    if (std::find(axes.begin(), axes.end(), axis) != axes.end()) return d;
  }
  return -1;
}

double OperandLayout::ways(const hardware::DeviceMesh& mesh) const {
  double w = 1;
  for (int d = 0; d < rank(); ++d)
    for (int a : dim_axes(d)) w *= mesh.axes()[a].size;
  return w;
}

long long OperandLayout::padded_extent(int d) const {
  const auto it = cut_->padded_extents.find((*dims_)[d]);
  return it == cut_->padded_extents.end() ? 0 : it->second;
}

TensorSharding OperandLayout::sharding() const {
  TensorSharding s = TensorSharding::replicated(rank());
  for (int d = 0; d < rank(); ++d) s.dim_axes[d] = dim_axes(d);
  s.partial_axes = axes_in(partial_);
  return s;
}

std::vector<int> axes_in(std::uint64_t axes) {
  std::vector<int> out;
  axes_in(axes, out);
  return out;
}

void axes_in(std::uint64_t axes, std::vector<int>& out) {
  out.clear();
  out.reserve(static_cast<std::size_t>(std::popcount(axes)));
  for (; axes != 0; axes &= axes - 1) out.push_back(std::countr_zero(axes));
}

TensorSharding input_sharding(const IterationSpace& space, const NodeCut& cut, int input) {
  return OperandLayout::input(space, cut, input).sharding();
}

TensorSharding output_sharding(const IterationSpace& space, const NodeCut& cut, int output) {
  return OperandLayout::output(space, cut, output).sharding();
}

TensorSharding input_gradient_sharding(const IterationSpace& space, const NodeCut& cut, int input) {
  return OperandLayout::input_gradient(space, cut, input).sharding();
}

double cut_ways(const NodeCut& cut, const hardware::DeviceMesh& mesh) {
  double ways = 1;
  for (const auto& axes : cut.loop_axes)
    for (int a : axes) ways *= mesh.axes().at(a).size;
  return ways;
}

}  // namespace symtensor::compiler
