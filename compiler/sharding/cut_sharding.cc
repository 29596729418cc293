#include "compiler/sharding/cut_sharding.h"

#include <algorithm>

namespace symtensor::compiler {
namespace {

TensorSharding operand_sharding(const std::vector<int>& dims, const NodeCut& cut) {
  TensorSharding s = TensorSharding::replicated(static_cast<int>(dims.size()));
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (dims[d] >= 0 && dims[d] < static_cast<int>(cut.loop_axes.size())) s.dim_axes[d] = cut.loop_axes[dims[d]];
  return s;
}

// Axes of cut loops that none of `dims` maps to.
std::vector<int> axes_of_absent_loops(const std::vector<int>& dims, const NodeCut& cut, const IterationSpace& space,
                                      bool reductions_only) {
  std::vector<int> axes;
  for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
    if (reductions_only && !(l < space.loops.size() && space.loops[l].reduction)) continue;
    if (std::find(dims.begin(), dims.end(), static_cast<int>(l)) != dims.end()) continue;
    axes.insert(axes.end(), cut.loop_axes[l].begin(), cut.loop_axes[l].end());
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

}  // namespace

TensorSharding input_sharding(const IterationSpace& space, const NodeCut& cut, int input) {
  return operand_sharding(space.input_dims.at(input), cut);
}

TensorSharding output_sharding(const IterationSpace& space, const NodeCut& cut, int output) {
  TensorSharding s = operand_sharding(space.output_dims.at(output), cut);
  s.partial_axes = axes_of_absent_loops(space.output_dims.at(output), cut, space, true);
  return s;
}

TensorSharding input_gradient_sharding(const IterationSpace& space, const NodeCut& cut, int input) {
  TensorSharding s = operand_sharding(space.input_dims.at(input), cut);
  s.partial_axes = axes_of_absent_loops(space.input_dims.at(input), cut, space, false);
  return s;
}

double cut_ways(const NodeCut& cut, const hardware::DeviceMesh& mesh) {
  double ways = 1;
  for (const auto& axes : cut.loop_axes)
    for (int a : axes) ways *= mesh.axes().at(a).size;
  return ways;
}

}  // namespace symtensor::compiler
