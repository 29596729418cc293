#pragma once
// The sharded program: what every pipeline stage runs, per rank, with local shapes.
// Built in Shardy's export order:
//   1. shardings: each node's operands from its cut (cut_sharding.h); a parameter, graph
//      input or weight Constant takes the sharding of its first consumer (so each rank
//      holds only its shard); compile-time integer values (shape sub-graphs) are folded
//      into replicated constants and the nodes computing them dropped;
//   2. explicit reshards: where a consumer needs another sharding than the value carries
//      (and for graph outputs, which are returned replicated), plan_redistribution's steps
//      become collective steps producing new values;
//   3. global to local: every value gets its local shape; shape-carrying inputs (Reshape,
//      Expand, ConstantOfShape, Resize sizes) are replaced by local constants.
// Two writers read it: the per-stage SPMD files and the emulation graph.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/sharding/redistribution.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

enum class ValueOrigin {
  node_output,     // produced by a node step
  collective,      // produced by a collective step
  graph_input,     // an input of the original model (activation or weight-free parameter)
  initializer,     // weight data (initializer or Constant node), sliced per rank
  folded_constant, // compile-time value, replicated
  local_constant,  // a shape input rewritten to local extents (same on every rank)
};

struct ShardedValue {
  std::string name;  // unique in the program; the original tensor name for home values
  TensorId tensor = kNone;
  ValueOrigin origin = ValueOrigin::node_output;
  TensorSharding sharding;
  std::vector<std::int64_t> global_shape;
  std::vector<std::int64_t> local_shape;
  int elem_type = 0;  // onnx::TensorProto::DataType
  int stage = 0;      // stage that produces (or holds) it
  const onnx::TensorProto* data = nullptr;  // initializer / constant data (global)
  // A dim whose local piece is one chunk of each block, concatenated (split_blocks.h):
  // the input of a Split whose axis is cut and what feeds it. -1: none.
  int blocked_dim = -1;
  std::vector<std::int64_t> blocks;  // global block extents along blocked_dim
};

struct ProgramStep {
  enum class Kind { node, collective } kind = Kind::node;
  int stage = 0;
  NodeId node = kNone;              // node steps
  std::vector<int> inputs;          // value ids; -1 for an omitted optional input
  std::vector<int> outputs;         // value ids; -1 for an omitted output
  RedistributionStep redistribution;  // collective steps: one input, one output
  std::vector<std::int64_t> local_split;  // a cut Split's local `split` attribute (opset < 13)
  // Integer attributes that count what a cut divides: a grouped Conv's `group`, packed
  // attention's `num_heads` and `kv_num_heads`, with their local values.
  std::vector<std::pair<std::string, std::int64_t>> local_attributes;
  // Integer-list attributes the import rewrote (a Transpose's perm after the merged heads were
  // split, compiler/onnx_import/merged_heads.h), as the IR holds them.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> rewritten_ints;
};

// Test-only mutations that make the program wrong on purpose (the check must fail).
enum class Mutation { none, drop_all_reduce, wrong_weight_slice };
Mutation parse_mutation(const std::string& text);  // "none", "drop-all-reduce", "wrong-weight-slice"

struct ShardedProgram {
  hardware::DeviceMesh mesh;
  int pipeline_axis = -1;
  int stages = 1;
  std::map<std::string, double> bindings;
  std::vector<ShardedValue> values;
  std::vector<ProgramStep> steps;  // dependency order, stages non-decreasing
  std::vector<std::pair<std::string, int>> outputs;  // original output name -> replicated value (or KeptOutputs')
  std::deque<onnx::TensorProto> owned_data;           // folded / Constant-node data
  Mutation mutation = Mutation::none;

  // Stage of a rank, and the rank's index inside its stage (pipeline coordinate removed).
  int stage_of_rank(int rank) const;
  int local_index(int rank) const;
  std::vector<int> ranks_of_stage(int stage) const;
  // Mesh axes other than the pipeline axis.
  std::vector<int> spmd_axes() const;
};

// Graph outputs returned in the sharding of a graph input rather than replicated: output name
// -> input name. A decode step's present KV cache keeps its past input's cut (each rank keeps
// its heads of the cache for the next step); pending sums are reduced first.
using KeptOutputs = std::map<std::string, std::string>;

// Throws (one line naming the node or tensor) when the plan does not fit the graph, a
// dim is unbound or unevenly split, or a node's cut has no local equivalent in ONNX.
ShardedProgram build_sharded_program(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                                     const hardware::Cluster& cluster, Mutation mutation = Mutation::none,
                                     const KeptOutputs& kept = {});

// The original node of a node step with its inputs and outputs cleared (the writers name
// them), its `split` and counting attributes local (ProgramStep::local_split, local_attributes)
// and the attributes the import rewrote as the IR holds them (rewritten_ints).
onnx::NodeProto step_node(const onnx::ModelProto& original, const ProgramStep& step);

// The tensor is weight data in the model: an initializer, or a Constant node's output (in the
// fused graph a constant without a producer, the fusion pass folding Constant nodes).
bool holds_weight_data(const Graph& graph, TensorId tensor);

// Why a cut of `node` cannot run as the same ONNX operator on local pieces; nullopt when
// it can (cut loops must be parallel with equal operand extents, or sum reductions).
struct IterationSpace;
std::optional<std::string> cut_rewrite_problem(const Graph& graph, NodeId node, const IterationSpace& space,
                                               const NodeCut& cut);

// The box of a value that `rank` holds: offset and extent per dim (global coordinates).
struct Piece {
  std::vector<std::int64_t> offset, extent;
  friend bool operator==(const Piece&, const Piece&) = default;
};
Piece piece_of(const TensorSharding& sharding, const std::vector<std::int64_t>& global_shape,
               const hardware::DeviceMesh& mesh, int rank);
// The boxes of a value that `rank` holds, in local order: piece_of, or for a blocked dim
// one box per block (concatenated along ShardedValue::blocked_dim).
std::vector<Piece> boxes_of(const ShardedValue& value, const hardware::DeviceMesh& mesh, int rank);
// The boxes of weight data stored for `rank`: boxes_of, except under Mutation::wrong_weight_slice,
// where the first split initializer takes the mirrored boxes (the wrong shard).
std::vector<Piece> data_boxes(const ShardedProgram& program, int value, int rank);
// False for the ranks that hold zeros of a partial initializer (a Gemm's C or a Conv's bias
// under a cut reduction: the first rank of each reduction group holds the data).
bool holds_data(const ShardedValue& value, const hardware::DeviceMesh& mesh, int rank);
// The TensorProto `name` holding the weight data of `value` stored for `rank` (data_boxes).
onnx::TensorProto shard_data(const ShardedProgram& program, int value, int rank, const std::string& name);
// Text naming a rank's boxes, unique per distinct shard ("0_32", blocks joined by "+").
std::string boxes_key(const std::vector<Piece>& boxes);

}  // namespace symtensor::compiler
