#pragma once
// Cut propagation: every node that a strategy did not decide takes the cut that agrees
// best with its decided neighbours. Used by the fixed strategies (dp, zero3, megatron) and
// by the SymTensor search for the cheap operators folded into the edges.
//
// For an undecided node the candidates are: the loops its inputs' dims map to take the
// axes splitting those dims in each decided producer's output sharding; the loops its
// outputs' dims map to take the axes splitting those dims in each decided consumer's
// input sharding; the merge of all of these; its current cut; no cut. The candidate with
// the fewest redistribution bytes (compiler/sharding/redistribution.h) on the edges to its
// decided neighbours (none to a Shape or Size, which read dims only) wins; ties go to the
// candidate that divides the work most ways, then to the earliest. Passes run forward then
// backward over the topological order until no cut changes (at most `kMaxPropagationPasses`
// pairs).
//
// Never proposed: a loop cut by axes whose product does not divide its extent (when the
// extent is a number after the graph's bindings), a cut of a softmax or normalization
// reduction loop, a parallel loop that maps to no output dim (except Split's axis, read
// as the head-interleaved layout Megatron uses for a fused QKV), an axis used twice, the
// plan's pipeline axis.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/analysis/model_stats.h"  // node_iteration_spaces
#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/plan/plan.h"
#include "compiler/sharding/redistribution_memo.h"
#include "hardware/device_mesh.h"

namespace symtensor::compiler {

inline constexpr int kMaxPropagationPasses = 8;


// What propagation derives from the graph alone (numeric shapes and loop extents) and the
// redistributions it prices, kept between calls by a caller that propagates many plans of
// one graph (the search). Belongs to one graph; not thread-safe.
struct PropagationCache {
  std::vector<std::optional<std::vector<long>>> shapes;        // per tensor, free dims at kUnboundDimValue
  std::vector<char> shapes_known;                              // per tensor: `shapes` was evaluated
  std::map<GiNaC::ex, std::optional<long>, GiNaC::ex_is_less> dim_values;  // per dim expression
  std::vector<std::vector<std::optional<double>>> extents;    // per node and loop; nullopt while symbolic
  std::vector<bool> extents_known;                             // per node
  std::vector<NodeId> order;                                   // topological; empty until the first call
  // The graph's edges, node by node, packed so that a visit does not walk the graph's
  // tensors: an input edge per input (to its producer, if any), an output edge per
  // (output, consumer, consumer's input) reading it.
  struct Edge {
    TensorId tensor = kNone;
    NodeId other = kNone;  // the producer (input edge) or the consumer (output edge)
    int own = 0;           // this node's input or output index
    int others = 0;        // the producer's output index or the consumer's input index
    int rank = 0;
    double element_bytes = 1;
    // An output edge to a Shape or Size (reads_dims_only): it reads the tensor's dims, never
    // its data, so no layout is asked of the tensor (the sharded program folds the Shape to
    // the global dims). Part of the node's class (classify_nodes).
    bool reads_dims_only = false;
  };
  std::vector<Edge> in_edges, out_edges;
  std::vector<int> in_start, out_start;  // node n's edges: [start[n], start[n+1])
  RedistributionMemos redistributions;
  // A visit's choice is a function of the node's class (its operator, numeric iteration
  // space and edges' tensors: identical in every repeated layer), the mesh and pipeline
  // axis, its own cut when decided, and its decided neighbours' layouts of the shared
  // tensors; each choice is remembered under that key, so a layer repeated 96 times is
  // priced once per neighbourhood.
  std::vector<int> node_class;            // per node; empty until the first call
  std::map<std::vector<long>, int> mesh_ids;  // (size, level, stride) of every axis + pipeline axis
  struct KeyHash {
    std::size_t operator()(const std::vector<std::int64_t>& key) const;
  };
  std::unordered_map<std::vector<std::int64_t>, NodeCut, KeyHash> choices;
};

// `plan.node_cuts` and `fixed` are sized to the node count (node_cuts is resized when
// empty). Nodes with `fixed[n]` keep their cut; every other node's cut is replaced.
void propagate_cuts(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed);
//
// With `previous` (the cuts of an earlier propagated plan of the same graph and mesh), the
// undecided nodes start from their previous cuts and only the neighbourhoods of fixed
// nodes whose cut differs from `previous` are revisited: a local repair, as a search's
// refinement step needs, which may settle on another fixed point than a fresh run.
void propagate_cuts(Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan, const std::vector<bool>& fixed,
                    const std::vector<IterationSpace>& spaces, PropagationCache* cache = nullptr,
                    const std::vector<NodeCut>* previous = nullptr);

// The loop of `space` whose extent has the dim symbol `symbol` as a factor (`batch`
// finds `batch` and a flattened `batch*seq`), preferring a loop whose extent is exactly
// the symbol; -1 when none (or the graph has no such symbol).
int loop_with_symbol(const Graph& graph, const IterationSpace& space, const std::string& symbol);

// The numeric value of an extent after the graph's bindings, or nullopt while symbolic.
std::optional<double> numeric_extent(const Graph& graph, const GiNaC::ex& extent);

// True when cutting loop `loop` of `space` over `axes` is allowed by the rules above.
bool cut_allowed(const Graph& graph, const Node& node, const IterationSpace& space, int loop,
                 const std::vector<int>& axes, const hardware::DeviceMesh& mesh);
// The same with the loop's extent already evaluated (numeric_extent).
bool cut_allowed(const Node& node, const IterationSpace& space, int loop, std::optional<double> extent,
                 const std::vector<int>& axes, const hardware::DeviceMesh& mesh);

}  // namespace symtensor::compiler
