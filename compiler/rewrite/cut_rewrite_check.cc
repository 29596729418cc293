// Which operator cuts have a local equivalent: the same ONNX operator, run on each rank's
// pieces, computes the rank's piece of the output (or a partial sum of it).
#include <algorithm>
#include <set>

#include "compiler/ops/op_semantics.h"
#include "compiler/rewrite/sharded_program.h"
#include "compiler/rewrite/tensor_data.h"

namespace symtensor::compiler {
namespace {

// Data-movement operators whose non-axis dims move element for element.
const std::set<std::string> kMovementOps = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Flatten",
                                            "Gather", "Concat", "Split", "Slice", "Expand", "Cast", "Where",
                                            "Dropout", "CastLike", "Pad", "Tile"};
// Operators whose output depends on element positions along every dim.
const std::set<std::string> kPositionalOps = {"Trilu", "Range", "OneHot", "NonZero", "ScatterND",
                                              "ScatterElements", "GatherElements", "GatherND",
                                              "Shape", "Size", "RandomNormalLike", "RandomUniformLike",
                                              "EyeLike", "Resize", "DepthToSpace", "SpaceToDepth"};
// Movement operators whose attributes or inputs place the output along an axis globally.
const std::set<std::string> kOffsetOps = {"Slice", "Pad", "Tile"};
// Operators with an `axis` attribute that names a dim that must stay whole (CumSum: its
// axis input, a running sum along that dim only).
const std::set<std::string> kAxisOps = {"Softmax", "LogSoftmax", "Hardmax", "TopK", "ArgMax", "ArgMin", "Concat",
                                        "Split", "LayerNormalization", "Gather", "CumSum"};

// Gemm's C and Conv's bias are added once per rank, so under a cut reduction they must be
// weight data, which the first rank of each reduction group holds and the others hold as
// zeros (a partial-sum layout of the data, sharded_program.h).
bool sum_reduction_op(const Graph& g, const Node& n) {
  if (n.op_type == "MatMul" || n.op_type == "Einsum" || n.op_type == "ReduceSum") return true;
  const bool plain_third = n.inputs.size() <= 2 || n.inputs[2] == kNone || holds_weight_data(g, n.inputs[2]);
  if (n.op_type == "Gemm") return plain_third;
  if (n.op_type == "Conv") return plain_third && n.attr_int("group", 1) == 1;
  return false;
}

// The loops along which a positional operator's result depends on global positions; the
// others it treats element for element, so a cut of them runs locally. nullopt: every loop.
// (Pad and Tile are movement operators: they change only the dims they pad or repeat,
// which the extent check refuses.)
std::optional<std::set<int>> positional_loops(const Graph& g, const Node& n, const IterationSpace& space) {
  auto output_loop = [&](std::int64_t axis) -> std::optional<int> {
    if (space.output_dims.empty()) return std::nullopt;
    const auto& dims = space.output_dims[0];
    if (axis < 0) axis += static_cast<std::int64_t>(dims.size());
    if (axis < 0 || axis >= static_cast<std::int64_t>(dims.size())) return std::nullopt;
    return dims[axis];
  };
  if (n.op_type == "OneHot") {
    if (auto l = output_loop(n.attr_int("axis", -1))) return std::set<int>{*l};
  } else if (n.op_type == "Trilu") {
    auto a = output_loop(-1), b = output_loop(-2);
    if (a && b) return std::set<int>{*a, *b};
  } else if (n.op_type == "CumSum" && n.inputs.size() > 1 && n.inputs[1] != kNone) {
    const auto& axis = g.tensor(n.inputs[1]).value;
    if (axis && axis->size() == 1 && GiNaC::is_a<GiNaC::numeric>((*axis)[0]))
      if (auto l = output_loop(GiNaC::ex_to<GiNaC::numeric>((*axis)[0]).to_long())) return std::set<int>{*l};
  }
  return std::nullopt;
}

bool same_extent(const Graph& g, const GiNaC::ex& a, const GiNaC::ex& b) {
  return (g.symbols.substitute(a) - g.symbols.substitute(b)).expand().is_zero();
}

}  // namespace

bool holds_weight_data(const Graph& g, TensorId t) {
  const Tensor& x = g.tensor(t);
  // A Constant node's output: in the imported graph its node, in the fused one (the fusion
  // pass folds Constant nodes) a constant without a producer that is no graph input.
  return x.initializer.proto_index >= 0 || (x.producer != kNone && g.node(x.producer).op_type == "Constant") ||
         (x.producer == kNone && x.is_constant && !x.is_graph_input);
}

std::optional<std::string> cut_rewrite_problem(const Graph& g, NodeId id, const IterationSpace& space,
                                               const NodeCut& cut) {
  const Node& n = g.node(id);
  std::vector<int> cut_loops;
  for (std::size_t l = 0; l < cut.loop_axes.size(); ++l)
    if (!cut.loop_axes[l].empty()) cut_loops.push_back(static_cast<int>(l));
  if (cut_loops.empty()) return std::nullopt;
  if (cut.loop_axes.size() > space.loops.size())
    return "the cut lists " + std::to_string(cut.loop_axes.size()) + " loops, the operator has " +
           std::to_string(space.loops.size());
  if (n.opaque || space.kind == OpKind::opaque) return "operator without semantics cannot be cut";
  if (kPositionalOps.count(n.op_type)) {
    const auto positional = positional_loops(g, n, space);
    for (int l : cut_loops)
      if (!positional || positional->count(l))
        return n.op_type + " depends on global positions along loop '" + space.loops[l].name + "'";
  }
  if (space.kind == OpKind::data_movement && !kMovementOps.count(n.op_type))
    return "data-movement operator " + n.op_type + " has no local form";
  // ONNX Runtime's packed attention reads its masks, caches and sequence lengths whole, and
  // GroupQueryAttention's causal positions come from its query's place in the sequence.
  if (n.domain == "com.microsoft" && (n.op_type == "MultiHeadAttention" || n.op_type == "GroupQueryAttention")) {
    for (std::size_t i = 3; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNone) return n.op_type + " with masks or caches cannot be cut";
    for (int l : cut_loops)
      if (n.op_type == "GroupQueryAttention" && space.loops[l].name == "sq")
        return "GroupQueryAttention's queries cannot be cut (its causal positions are global)";
  }
  const bool reshaping = n.op_type == "Reshape" || n.op_type == "Flatten";
  std::optional<int> axis_loop;
  if (kAxisOps.count(n.op_type) && !n.inputs.empty() && n.inputs[0] != kNone && !space.input_dims.empty()) {
    const int rank = static_cast<int>(space.input_dims[0].size());
    std::int64_t axis = n.attr_int("axis", n.op_type == "Softmax" && n.opset < 13 ? 1 : -1);
    if (n.op_type == "Concat" || n.op_type == "Split" || n.op_type == "Gather") axis = n.attr_int("axis", 0);
    if (n.op_type == "CumSum") {
      const Tensor* axis_input = n.inputs.size() > 1 && n.inputs[1] != kNone ? &g.tensor(n.inputs[1]) : nullptr;
      if (!axis_input || !axis_input->value || axis_input->value->size() != 1 ||
          !GiNaC::is_a<GiNaC::numeric>((*axis_input->value)[0]))
        return "CumSum's axis is not known";
      axis = GiNaC::ex_to<GiNaC::numeric>((*axis_input->value)[0]).to_long();
    }
    if (axis < 0) axis += rank;
    if (axis >= 0 && axis < rank) axis_loop = space.input_dims[0][axis];
  }
  for (int l : cut_loops) {
    const LoopDim& loop = space.loops[l];
    if (loop.reduction && !sum_reduction_op(g, n))
      return "reduction loop '" + loop.name + "' of " + n.op_type + " is not a plain sum";
    // A cut Split axis is a block layout of its input (split_blocks.h).
    if (axis_loop && *axis_loop == l && n.op_type != "Split")
      return "loop '" + loop.name + "' is the axis of " + n.op_type;
    if (reshaping) continue;  // extents differ by design; local element counts are checked later
    // Slice's starts, Pad's pads and Tile's repeats are global: a loop of the output that no
    // dim of the data input follows (a sliced, padded or tiled axis) has no local form.
    if (kOffsetOps.count(n.op_type) && !space.input_dims.empty() && !space.output_dims.empty()) {
      const auto& in = space.input_dims[0];
      const auto& out = space.output_dims[0];
      if (std::count(out.begin(), out.end(), l) && !std::count(in.begin(), in.end(), l)) {
        // A Slice computes its output whole along that axis and keeps each rank's share
        // (sharded_program.cc, computed_sharding): the q, k and v Slices of PyTorch's packed
        // in_proj cut column-parallel read it whole along its columns.
        if (n.op_type == "Slice") continue;
        return "loop '" + loop.name + "' is an axis that " + n.op_type + " offsets (its starts, pads or repeats are global)";
      }
    }
    // Packed attention's [b, s, heads·d] operands: the heads are the packed dim's outer factor.
    if (n.domain == "com.microsoft" && space.kind == OpKind::attention && loop.name == "h") continue;
    auto check = [&](const std::vector<std::vector<int>>& dims, const std::vector<TensorId>& tensors) -> std::optional<std::string> {
      for (std::size_t i = 0; i < dims.size() && i < tensors.size(); ++i) {
        if (tensors[i] == kNone) continue;
        const Tensor& t = g.tensor(tensors[i]);
        for (std::size_t d = 0; d < dims[i].size() && d < t.shape.size(); ++d)
          if (dims[i][d] == l && !same_extent(g, t.shape[d], loop.extent))
            return "tensor '" + t.name + "' dim " + std::to_string(d) + " differs from loop '" + loop.name +
                   "' (a window or offset along it)";
      }
      return std::nullopt;
    };
    if (auto p = check(space.input_dims, n.inputs)) return p;
    if (auto p = check(space.output_dims, n.outputs)) return p;
  }
  return std::nullopt;
}

Piece piece_of(const TensorSharding& sharding, const std::vector<std::int64_t>& global_shape,
               const hardware::DeviceMesh& mesh, int rank) {
  Piece p;
  const auto& axes = mesh.axes();
  for (std::size_t d = 0; d < global_shape.size(); ++d) {
    std::int64_t shards = 1, index = 0;
    if (d < sharding.dim_axes.size())
      for (int a : sharding.dim_axes[d]) {
        const int coord = (rank / axes.at(a).stride) % axes.at(a).size;
        index = index * axes.at(a).size + coord;
        shards *= axes.at(a).size;
      }
    const std::int64_t extent = global_shape[d] / shards;
    p.offset.push_back(index * extent);
    p.extent.push_back(extent);
  }
  return p;
}

std::vector<Piece> boxes_of(const ShardedValue& value, const hardware::DeviceMesh& mesh, int rank) {
  const Piece whole = piece_of(value.sharding, value.global_shape, mesh, rank);
  if (value.blocked_dim < 0) return {whole};
  const int d = value.blocked_dim;
  const std::int64_t shards = value.global_shape[d] / whole.extent[d], index = whole.offset[d] / whole.extent[d];
  std::vector<Piece> boxes;
  std::int64_t start = 0;
  for (std::int64_t size : value.blocks) {
    Piece p = whole;
    p.extent[d] = size / shards;
    p.offset[d] = start + index * p.extent[d];
    boxes.push_back(std::move(p));
    start += size;
  }
  return boxes;
}

bool holds_data(const ShardedValue& value, const hardware::DeviceMesh& mesh, int rank) {
  for (int a : value.sharding.partial_axes)
    if ((rank / mesh.axes().at(a).stride) % mesh.axes().at(a).size != 0) return false;
  return true;
}

std::vector<Piece> data_boxes(const ShardedProgram& program, int value, int rank) {
  const ShardedValue& v = program.values.at(value);
  std::vector<Piece> boxes = boxes_of(v, program.mesh, rank);
  if (program.mutation != Mutation::wrong_weight_slice || v.origin != ValueOrigin::initializer) return boxes;
  auto splits = [](const TensorSharding& s) {
    return std::any_of(s.dim_axes.begin(), s.dim_axes.end(), [](const auto& axes) { return !axes.empty(); });
  };
  for (std::size_t i = 0; i < program.values.size(); ++i) {
    const ShardedValue& w = program.values[i];
    if (w.origin != ValueOrigin::initializer || !splits(w.sharding)) continue;
    if (static_cast<int>(i) != value) return boxes;
    for (Piece& p : boxes)
      for (std::size_t d = 0; d < p.offset.size(); ++d) p.offset[d] = v.global_shape[d] - p.offset[d] - p.extent[d];
    return boxes;
  }
  return boxes;
}

onnx::TensorProto shard_data(const ShardedProgram& program, int value, int rank, const std::string& name) {
  const ShardedValue& v = program.values.at(value);
  const TensorBytes all = read_tensor_bytes(*v.data);
  std::vector<TensorBytes> parts;
  for (const Piece& p : data_boxes(program, value, rank)) parts.push_back(slice_tensor(all, p.offset, p.extent));
  TensorBytes shard = parts.size() == 1 ? parts.front() : concat_tensors(parts, v.blocked_dim);
  if (!holds_data(v, program.mesh, rank)) std::fill(shard.bytes.begin(), shard.bytes.end(), '\0');
  return to_tensor_proto(shard, name);
}

std::string boxes_key(const std::vector<Piece>& boxes) {
  std::string k;
  for (const Piece& p : boxes) {
    if (!k.empty()) k += "+";
    for (std::size_t d = 0; d < p.offset.size(); ++d) k += (d ? "_" : "") + std::to_string(p.offset[d]);
  }
  return k;
}

}  // namespace symtensor::compiler
