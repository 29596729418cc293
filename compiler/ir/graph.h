#pragma once
// The IR: operator nodes connected by tensor edges in a Boost.Graph, plus a tensor table.
// Shapes are symbolic (GiNaC expressions in the model's dim symbols).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "compiler/ir/element_type.h"
#include "compiler/ir/symbols.h"
#include "hardware/symbolic.h"

namespace symtensor::compiler {

using TensorId = int;
using NodeId = int;
inline constexpr int kNone = -1;
// The sequence dim of a model imported without --seq-dim.
inline constexpr const char* kDefaultSequenceDim = "seq";
// Graph::metadata keys of the fusion pass's summary: kFusedMetadataPrefix + pattern (run_fusion_pass).
inline constexpr const char* kFusedMetadataPrefix = "symtensor.fused.";

using Shape = std::vector<GiNaC::ex>;

// Where a parameter's data lives. External data is located, never read.
struct InitializerData {
  enum class Storage { none, inline_data, external } storage = Storage::none;
  std::string external_location;  // relative to the model file, as written in the model
  std::int64_t external_offset = 0;
  std::int64_t external_length = -1;
  int proto_index = -1;           // index into ModelProto.graph.initializer, or -1
};

struct Tensor {
  std::string name;
  ElementType dtype = ElementType::undefined;
  Shape shape;
  bool shape_known = false;
  NodeId producer = kNone;
  std::vector<NodeId> consumers;
  bool is_graph_input = false;
  bool is_graph_output = false;
  bool is_parameter = false;  // trainable weight: initializer, weight Constant, or marked input
  bool is_constant = false;   // value fixed at compile time (initializer or Constant output)
  InitializerData initializer;
  // Elements of small integer tensors known at compile time (shape sub-graphs, axes,
  // Reshape targets), possibly symbolic: Shape(x) is x's shape.
  std::optional<std::vector<GiNaC::ex>> value;

  GiNaC::ex num_elements() const;  // product of shape
  GiNaC::ex num_bytes() const;
};

using AttributeValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                                    std::vector<double>, std::vector<std::string>>;

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ai.onnx
  int opset = 0;       // version of the node's domain imported by the model
  std::vector<TensorId> inputs;   // kNone for an omitted optional input
  std::vector<TensorId> outputs;
  std::map<std::string, AttributeValue> attributes;
  bool has_subgraph = false;  // If/Loop/Scan bodies are not imported
  bool opaque = false;        // no semantics known: replicated, priced by tensor sizes

  const AttributeValue* attribute(const std::string& key) const;
  std::int64_t attr_int(const std::string& key, std::int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::optional<std::vector<std::int64_t>> attr_ints(const std::string& key) const;
};

// Vertex property: the node id. Edge property: the tensor carried producer -> consumer
// (a struct with an initializer: Boost default-constructs edge properties when copying).
struct TensorEdge {
  TensorId tensor = kNone;
};
using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, NodeId, TensorEdge>;

class Graph {
 public:
  std::string name;
  std::string source;  // file it was imported from
  std::map<std::string, std::string> metadata;

  TensorId add_tensor(Tensor t);  // name must be new
  NodeId add_node(Node n);        // wires producer/consumers and Boost edges
  TensorId find_tensor(const std::string& name) const;  // kNone when absent

  Tensor& tensor(TensorId id) { return tensors_.at(id); }
  const Tensor& tensor(TensorId id) const { return tensors_.at(id); }
  Node& node(NodeId id) { return nodes_.at(id); }
  const Node& node(NodeId id) const { return nodes_.at(id); }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Tensor>& tensors() { return tensors_; }
  std::vector<Node>& nodes() { return nodes_; }
  const BoostGraph& boost_graph() const { return bg_; }

  std::vector<TensorId> inputs;   // graph inputs that are not parameters
  std::vector<TensorId> outputs;

  // Nodes in dependency order; throws std::runtime_error naming a node on a cycle.
  std::vector<NodeId> topological_order() const;

  SymbolTable symbols;
  // The dim that is the batch (a symbol of the data inputs: "batch", or the exporter's own
  // name); empty for a model whose batch is not a dim of its inputs.
  std::string batch_dim;
  // The dim that is the sequence (tokens per sample): "seq" unless the import was told
  // otherwise (--seq-dim). Context parallelism, the quadratic activations of attention,
  // tokens/s and the exported recipes' sequence length read it.
  std::string sequence_dim = kDefaultSequenceDim;

  // Set by the fusion pass (compiler/fusion): the graph as imported, and for each node the
  // nodes of `unfused` it stands for (just itself when no pattern matched it). Both empty
  // when no fusion ran. The ONNX rewrite works on `unfused`: its node ids are the model's.
  std::shared_ptr<Graph> unfused;
  std::vector<std::vector<NodeId>> fused_from;

 private:
  NodeId node_on_cycle() const;

  std::vector<Tensor> tensors_;
  std::vector<Node> nodes_;
  std::map<std::string, TensorId> by_name_;
  BoostGraph bg_;
};

// The value bound to the graph's sequence dim; 0 when it is not bound (or not a dim).
double bound_sequence_length(const Graph& graph);

// The layer a node belongs to from its name: the path up to the first scope component
// holding a digit ("h.3/attn/MatMul" -> "h.3"); "" when none (the operator's own name,
// "/model/Mul_5", is no scope). The unit ZeRO-3 gathers (FSDP's
// per-block wrapping) and the simulator's timeline labels.
std::string layer_of(const std::string& node_name);

// Per tensor: a parameter, or computed from parameters and constants alone (a tied LM
// head's Transpose of the token embedding), in `order` (a topological order).
std::vector<bool> weight_derived_tensors(const Graph& graph, const std::vector<NodeId>& order);

}  // namespace symtensor::compiler
