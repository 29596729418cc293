#include "compiler/rewrite/split_blocks.h"

#include <deque>
#include <stdexcept>
#include <string>

#include "compiler/analysis/model_stats.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {
namespace {

std::string where(const Node& n) { return "rewrite: node '" + n.name + "' (" + n.op_type + "): "; }

class BlockFinder {
 public:
  BlockFinder(Graph& graph, const Plan& plan, const hardware::DeviceMesh& mesh, const std::vector<bool>& live,
              const std::function<std::vector<std::int64_t>(TensorId)>& global_shape)
      : g_(graph), plan_(plan), mesh_(mesh), live_(live), shape_(global_shape), blocks_(graph.tensors().size()) {}

  std::vector<DimBlocks> run() {
    for (NodeId id = 0; id < static_cast<NodeId>(g_.nodes().size()); ++id)
      if (live_[id]) seed(id);
    while (!queue_.empty()) {
      const TensorId t = queue_.front();
      queue_.pop_front();
      const Tensor& tensor = g_.tensor(t);
      if (tensor.producer != kNone && live_[tensor.producer]) visit(tensor.producer, t);
      for (NodeId c : tensor.consumers)
        if (live_[c]) visit(c, t);
    }
    return std::move(blocks_);
  }

 private:
  // The Split's input takes one block per output, each cut like the axis.
  void seed(NodeId id) {
    const Node& n = g_.node(id);
    const NodeCut& cut = plan_.node_cuts.at(id);
    const int axis = cut_split_axis_loop(g_, id, cut);
    if (axis < 0) return;
    const int ways = mesh_.group_shape(cut.loop_axes[axis]).size();
    DimBlocks b;
    b.dim = axis;
    b.axes = cut.loop_axes[axis];
    b.split = id;
    for (TensorId o : n.outputs) {
      if (o == kNone) throw std::runtime_error(where(n) + "an omitted output cannot be cut");
      const std::int64_t extent = shape_(o).at(axis);
      if (extent % ways != 0)
        throw std::runtime_error(where(n) + "part '" + g_.tensor(o).name + "' has extent " + std::to_string(extent) +
                                 " along the cut axis, which does not split " + std::to_string(ways) + " ways");
      b.sizes.push_back(extent);
    }
    mark(n.inputs.at(0), b, n);
  }

  void mark(TensorId t, const DimBlocks& b, const Node& at) {
    if (blocks_[t].dim < 0) {
      blocks_[t] = b;
      queue_.push_back(t);
    } else if (!(blocks_[t] == b)) {
      throw std::runtime_error(where(at) + "tensor '" + g_.tensor(t).name +
                               "' would hold the parts of two cut Splits in different layouts");
    }
  }

  // Node `id` reads or writes `t`, whose dim holds blocks: every operand on the same loop
  // holds the same blocks.
  void visit(NodeId id, TensorId t) {
    const Node& n = g_.node(id);
    const DimBlocks b = blocks_[t];
    const NodeCut& cut = plan_.node_cuts.at(id);
    const std::string need = where(n) + "needs '" + g_.tensor(t).name + "' along dim " + std::to_string(b.dim) +
                             " in another layout than the parts of the cut Split '" + g_.node(b.split).name +
                             "' (its weights interleaved per rank)";
    if (const int axis = cut_split_axis_loop(g_, id, cut); axis >= 0 && n.inputs.at(0) == t) {
      if (axis != b.dim || blocks_[t].split != id) throw std::runtime_error(need);
      return;
    }
    const IterationSpace space = iteration_space_of(g_, id);
    int loop = -1;
    auto find_loop = [&](const std::vector<std::vector<int>>& dims, const std::vector<TensorId>& tensors) {
      for (std::size_t i = 0; i < tensors.size() && i < dims.size(); ++i) {
        if (tensors[i] != t) continue;
        const int l = b.dim < static_cast<int>(dims[i].size()) ? dims[i][b.dim] : -1;
        if (l < 0 || (loop >= 0 && l != loop)) throw std::runtime_error(need);
        loop = l;
      }
    };
    find_loop(space.input_dims, n.inputs);
    find_loop(space.output_dims, n.outputs);
    if (loop < 0 || loop >= static_cast<int>(cut.loop_axes.size()) || cut.loop_axes[loop] != b.axes)
      throw std::runtime_error(need);
    std::int64_t total = 0;
    for (auto s : b.sizes) total += s;
    auto spread = [&](const std::vector<std::vector<int>>& dims, const std::vector<TensorId>& tensors) {
      for (std::size_t i = 0; i < tensors.size() && i < dims.size(); ++i) {
        if (tensors[i] == kNone) continue;
        for (std::size_t d = 0; d < dims[i].size(); ++d) {
          if (dims[i][d] != loop) continue;
          // A Reshape passes the blocks on only where it keeps the dim as it is.
          if (shape_(tensors[i]).at(d) != total) throw std::runtime_error(need);
          DimBlocks moved = b;
          moved.dim = static_cast<int>(d);
          mark(tensors[i], moved, n);
        }
      }
    };
    spread(space.input_dims, n.inputs);
    spread(space.output_dims, n.outputs);
  }

  Graph& g_;
  const Plan& plan_;
  const hardware::DeviceMesh& mesh_;
  const std::vector<bool>& live_;
  const std::function<std::vector<std::int64_t>(TensorId)>& shape_;
  std::vector<DimBlocks> blocks_;
  std::deque<TensorId> queue_;
};

}  // namespace

int cut_split_axis_loop(const Graph& graph, NodeId node, const NodeCut& cut) {
  const Node& n = graph.node(node);
  if (n.op_type != "Split" || !n.domain.empty() || n.inputs.empty() || n.inputs[0] == kNone) return -1;
  const auto rank = static_cast<std::int64_t>(graph.tensor(n.inputs[0]).shape.size());
  std::int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || axis >= static_cast<std::int64_t>(cut.loop_axes.size())) return -1;
  return cut.loop_axes[axis].empty() ? -1 : static_cast<int>(axis);
}

std::vector<DimBlocks> find_split_blocks(Graph& graph, const Plan& plan, const hardware::DeviceMesh& mesh,
                                         const std::vector<bool>& live,
                                         const std::function<std::vector<std::int64_t>(TensorId)>& global_shape) {
  return BlockFinder(graph, plan, mesh, live, global_shape).run();
}

}  // namespace symtensor::compiler
