#include "compiler/cost/analyzer.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace symtensor::compiler::analyzer_internal {

void Analyzer::check_sizes_and_stages() const {
  const std::size_t n = graph_.nodes().size();
  if (plan_.node_cuts.size() != n || plan_.stage_of_node.size() != n)
    throw std::runtime_error("plan: it describes " + std::to_string(plan_.node_cuts.size()) + " operators, the model has " +
                             std::to_string(n));
  const int stages = plan_.pipeline_stages();
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id)
    if (plan_.stage_of_node[id] < 0 || plan_.stage_of_node[id] >= stages)
      throw std::runtime_error("plan: node '" + graph_.node(id).name + "' is on stage " +
                               std::to_string(plan_.stage_of_node[id]) + " of " + std::to_string(stages));
}

void Analyzer::check_node(NodeId id) const {
  const Node& node = graph_.node(id);
  const NodeCut& cut = plan_.node_cuts[id];
  const NumericNode& nn = ng_.node(id);
  if (cut.loop_axes.size() > nn.loops.size())
    throw std::runtime_error("plan: node '" + node.name + "' cuts " + std::to_string(cut.loop_axes.size()) +
                             " loops, it has " + std::to_string(nn.loops.size()));
  std::uint64_t used = 0;  // a mesh has fewer than 64 axes (one per prime factor of a level)
  for (const auto& axes : cut.loop_axes)
    for (int axis : axes) {
      if (axis < 0 || axis >= static_cast<int>(mesh_.axes().size()) || axis >= 64)
        throw std::runtime_error("plan: node '" + node.name + "' uses mesh axis " + std::to_string(axis) + ", which does not exist");
      if (axis == plan_.pipeline_axis)
        throw std::runtime_error("plan: node '" + node.name + "' is cut over the pipeline axis");
      if (used >> axis & 1)
        throw std::runtime_error("plan: node '" + node.name + "' uses mesh axis '" + mesh_.axes()[axis].name + "' twice");
      used |= std::uint64_t{1} << axis;
    }
  for (const auto& [loop, padded] : cut.padded_extents)
    if (loop < 0 || loop >= static_cast<int>(nn.loops.size()))
      throw std::runtime_error("plan: node '" + node.name + "' pads loop " + std::to_string(loop) + ", it has " +
                               std::to_string(nn.loops.size()));
}

void Analyzer::check_divisible(NodeId id) const {
  const NodeCut& cut = plan_.node_cuts[id];
  const NumericNode& nn = ng_.node(id);
  for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
    if (cut.loop_axes[l].empty()) continue;
    const double extent = padded_extent(id, static_cast<int>(l));
    const double w = ways(cut.loop_axes[l]);
    if (extent < w || std::fmod(extent, w) != 0)
      throw std::runtime_error("plan: node '" + graph_.node(id).name + "': loop '" + nn.space.loops[l].name + "' of extent " +
                               std::to_string(static_cast<long long>(extent)) + (extent != nn.loops[l].extent.at(batch_) ? " (padded)" : "") +
                               " does not split " + std::to_string(static_cast<long long>(w)) + " ways");
  }
}

double Analyzer::padded_extent(NodeId id, int l) const {
  const NumericNode& nn = ng_.node(id);
  const NodeCut& cut = plan_.node_cuts[id];
  const double extent = nn.loops[l].extent.at(batch_);
  const auto it = cut.padded_extents.find(l);
  if (it == cut.padded_extents.end()) return extent;
  if (static_cast<double>(it->second) < extent)
    throw std::runtime_error("plan: node '" + graph_.node(id).name + "': loop '" + nn.space.loops[l].name +
                             "' is padded to " + std::to_string(it->second) + ", below its extent " +
                             std::to_string(static_cast<long long>(extent)));
  return static_cast<double>(it->second);
}

double Analyzer::loop_padding(NodeId id) const {
  double f = 1;
  for (const auto& [l, padded] : plan_.node_cuts[id].padded_extents)
    f *= padded_extent(id, l) / ng_.node(id).loops[l].extent.at(batch_);
  return f;
}

double Analyzer::element_bytes(TensorId t) const {
  const TensorFacts& f = ng_.facts(t);
  if (f.routing_table) return 0;
  return f.floating ? activation_bytes_ : static_cast<double>(f.element_size);
}

double Analyzer::local_elements(TensorId t, const OperandLayout& layout) const {
  const double e = ng_.facts(t).elements.at(batch_) / layout.ways(mesh_);
  return layout.padded() ? e * padding(t, layout) : e;
}

double Analyzer::padding(TensorId t, const OperandLayout& layout) const {
  double f = 1;
  const std::vector<Affine>& shape = ng_.tensor_shape(t);
  for (int d = 0; d < layout.rank() && d < static_cast<int>(shape.size()); ++d)
    if (const long long padded = layout.padded_extent(d); padded > 0 && shape[d].at(batch_) > 0)
      f *= static_cast<double>(padded) / shape[d].at(batch_);
  return f;
}

}  // namespace symtensor::compiler::analyzer_internal
