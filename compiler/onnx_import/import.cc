#include "compiler/onnx_import/import.h"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "compiler/onnx_import/merged_heads.h"
#include "compiler/onnx_import/parameters.h"
#include "compiler/onnx_import/proto_reading.h"
#include "compiler/onnx_import/symbolic_shapes.h"

namespace symtensor::compiler {
namespace {

// Small integer tensors (shapes, axes, indices) keep their values for folding.
constexpr std::size_t kMaxValueElements = 4096;

// ONNX's messages span lines ("... of node: \nname: X OpType: Y\n is not ..."): join them.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// ONNX 1.12's convolution/pooling shape inference indexes `pads`, `strides`, `dilations`
// and the weight's dims by the input's spatial rank without checking them against each
// other, and crashes on a model where they disagree (found by fuzzing): refuse such nodes
// first, from what is known before inference (attributes and the declared ranks).
void check_window_ranks(const onnx::GraphProto& graph, const std::string& source) {
  static const std::set<std::string> windowed = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv",
                                                 "MaxPool", "AveragePool", "LpPool", "MaxUnpool"};
  // Every rank declared for a value must agree (an output may repeat an input's name, and
  // inference then merges the two declarations).
  std::map<std::string, int> known_rank;
  auto declare = [&](const std::string& name, int rank) {
    const auto [it, fresh] = known_rank.emplace(name, rank);
    if (!fresh && it->second != rank)
      throw std::runtime_error(source + ": tensor '" + name + "' is declared with rank " + std::to_string(it->second) +
                               " and with rank " + std::to_string(rank));
  };
  for (const auto& t : graph.initializer()) declare(t.name(), t.dims_size());
  for (const auto* values : {&graph.input(), &graph.output(), &graph.value_info()})
    for (const auto& v : *values)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        declare(v.name(), v.type().tensor_type().shape().dim_size());
  for (const auto& node : graph.node()) {
    if (node.domain() != "" && node.domain() != "ai.onnx") continue;
    if (!windowed.count(node.op_type())) continue;
    const std::string where = source + ": node '" + node.name() + "' (" + node.op_type() + ")";
    std::optional<int> spatial;
    auto agree = [&](int n, const std::string& what) {
      if (spatial && *spatial != n)
        throw std::runtime_error(where + ": " + what + " gives " + std::to_string(n) + " spatial dims, expected " +
                                 std::to_string(*spatial));
      spatial = n;
    };
    auto rank_of = [&](int input) -> std::optional<int> {
      if (node.input_size() <= input) return std::nullopt;
      const auto it = known_rank.find(node.input(input));
      if (it == known_rank.end()) return std::nullopt;
      return it->second;
    };
    if (auto r = rank_of(0)) agree(*r - 2, "the input's rank");
    const int weight = node.op_type() == "QLinearConv" ? 3 : 1;
    if (node.op_type().find("Conv") != std::string::npos)
      if (auto r = rank_of(weight)) agree(*r - 2, "the weight's rank");
    for (const auto& a : node.attribute()) {
      const bool positive = a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations";
      if (positive || a.name() == "output_padding") agree(a.ints_size(), "'" + a.name() + "'");
      if (a.name() == "pads") {
        if (a.ints_size() % 2 != 0) throw std::runtime_error(where + ": 'pads' has an odd length");
        agree(a.ints_size() / 2, "'pads'");
      }
      for (auto v : a.ints())  // inference divides by strides and dilations
        if (positive ? v < 1 : v < 0)
          throw std::runtime_error(where + ": '" + a.name() + "' holds " + std::to_string(v) + ", expected " +
                                   (positive ? "values >= 1" : "values >= 0"));
    }
    if (spatial && *spatial < 0) throw std::runtime_error(where + ": the input has fewer than 2 dims");
  }
}

// ONNX 1.12's LayerNormalization inference sets its Mean / InvStdDev outputs' dims from `axis`
// without checking it against the input's rank, and crashes on axis < -rank (found by
// fuzzing). With only its first output it does not: infer a copy so, then check each such
// node's axis against the rank found for its input.
void check_layer_norm_axes(const onnx::ModelProto& model, const std::string& source) {
  auto checked = [](const onnx::NodeProto& n) {
    return n.op_type() == "LayerNormalization" && (n.domain().empty() || n.domain() == "ai.onnx") && n.output_size() > 1;
  };
  const auto& nodes = model.graph().node();
  if (std::none_of(nodes.begin(), nodes.end(), checked)) return;
  onnx::ModelProto copy = model;
  for (auto& n : *copy.mutable_graph()->mutable_node())
    if (checked(n))
      while (n.output_size() > 1) n.mutable_output()->RemoveLast();
  try {
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception&) {
    return;  // the model's own inference reports it
  }
  std::map<std::string, int> rank;
  for (const auto& t : copy.graph().initializer()) rank[t.name()] = t.dims_size();
  for (const auto* values : {&copy.graph().input(), &copy.graph().value_info(), &copy.graph().output()})
    for (const auto& v : *values)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) rank[v.name()] = v.type().tensor_type().shape().dim_size();
  for (const auto& n : nodes) {
    if (!checked(n) || n.input_size() == 0) continue;
    const auto r = rank.find(n.input(0));
    if (r == rank.end()) continue;
    std::int64_t axis = -1;
    for (const auto& a : n.attribute())
      if (a.name() == "axis") axis = a.i();
    if (axis < -r->second || axis >= r->second)
      throw std::runtime_error(source + ": node '" + n.name() + "' (LayerNormalization): axis " + std::to_string(axis) +
                               " is outside its input's rank " + std::to_string(r->second));
  }
}

// Declared dims a plan could only get wrong: negative, implausibly large, or 0 in an input.
void check_declared_shapes(const onnx::GraphProto& graph, const std::string& source) {
  constexpr std::int64_t kLargest = std::int64_t{1} << 40;
  auto check = [&](const onnx::ValueInfoProto& vi, bool input) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    const auto& dims = vi.type().tensor_type().shape().dim();
    for (int d = 0; d < dims.size(); ++d) {
      if (!dims[d].has_dim_value()) continue;
      const std::int64_t v = dims[d].dim_value();
      const std::string where = source + ": tensor '" + vi.name() + "' dim " + std::to_string(d) + " is declared " +
                                std::to_string(v);
      if (v < 0) throw std::runtime_error(where + " (dims must be >= 0)");
      if (v > kLargest) throw std::runtime_error(where + " (implausibly large: above 2^40)");
      if (v == 0 && input) throw std::runtime_error(where + " (an empty input cannot be planned)");
    }
  };
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) {
    initializers.insert(t.name());
    for (int d = 0; d < t.dims_size(); ++d)
      if (t.dims(d) < 0 || t.dims(d) > kLargest)
        throw std::runtime_error(source + ": initializer '" + t.name() + "' dim " + std::to_string(d) + " is " +
                                 std::to_string(t.dims(d)));
  }
  for (const auto& vi : graph.input()) check(vi, !initializers.count(vi.name()));
  for (const auto& vi : graph.output()) check(vi, false);
  for (const auto& vi : graph.value_info()) check(vi, false);
}

// Tensors stored inline whose raw bytes do not hold their dims' elements: ONNX's shape
// inference reads them unchecked (libonnx 1.14 writes past its buffer on a 7-byte int64).
void check_tensor_payloads(const onnx::GraphProto& graph, const std::string& source) {
  auto check = [&](const onnx::TensorProto& t, const std::string& what) {
    if (!t.has_raw_data() || t.data_location() == onnx::TensorProto::EXTERNAL) return;
    const std::size_t size = element_size(static_cast<ElementType>(t.data_type()));
    if (size == 0) return;
    const std::uint64_t have = t.raw_data().size();
    // A negative dim (no elements) is the checker's to report.
    const std::uint64_t need = element_count(t, have / size).value_or(0) * size;
    if (need != have)
      throw std::runtime_error(source + ": " + what + " '" + t.name() + "' holds " + std::to_string(have) +
                               " bytes of raw data, which its dims and type do not match");
  };
  for (const auto& t : graph.initializer()) check(t, "initializer");
  for (const auto& node : graph.node())
    for (const auto& a : node.attribute()) {
      if (a.has_t()) check(a.t(), "tensor attribute of node '" + node.name() + "'");
      if (a.has_g()) check_tensor_payloads(a.g(), source);
      for (const auto& g : a.graphs()) check_tensor_payloads(g, source);
    }
}

// An opset of a standard domain newer than this build's ONNX knows: its operators' meaning
// is not known here.
void check_opsets(const onnx::ModelProto& model, const std::string& source) {
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& o : model.opset_import()) {
    const std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
    const auto it = known.find(domain);
    if (it == known.end()) continue;  // a custom domain: its operators are opaque or ours
    if (o.version() > it->second.second)
      throw std::runtime_error(source + ": opset " + std::to_string(o.version()) + " of domain '" +
                               (domain.empty() ? std::string("ai.onnx") : domain) +
                               "' is newer than this build's ONNX knows (up to " + std::to_string(it->second.second) + ")");
  }
}

// `path` is the model's file when it came from one: the checker then finds external
// data files next to it (it checks they exist, without reading them).
void check_and_infer(onnx::ModelProto& model, const std::string& source, const std::string& path) {
  if (model.ir_version() > onnx::IR_VERSION)
    throw std::runtime_error(source + ": ir_version " + std::to_string(model.ir_version()) +
                             " is above what this build reads (" + std::to_string(onnx::IR_VERSION) + ")");
  check_opsets(model, source);
  check_declared_shapes(model.graph(), source);
  check_tensor_payloads(model.graph(), source);
  try {
    if (path.empty()) onnx::checker::check_model(model);
    else onnx::checker::check_model(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": invalid ONNX model: " + one_line(e.what()));
  }
  check_window_ranks(model.graph(), source);
  check_layer_norm_axes(model, source);
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": shape inference failed: " + one_line(e.what()));
  }
}

AttributeValue convert_attribute(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return static_cast<std::int64_t>(a.i());
    case onnx::AttributeProto::FLOAT: return static_cast<double>(a.f());
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto::TENSOR: {
      // One-element tensors (ConstantOfShape's fill value) become numbers; larger ones
      // are read where they matter (Constant).
      const auto v = read_scalar(a.t());
      if (!v) return std::string();
      if (a.t().data_type() == onnx::TensorProto::FLOAT || a.t().data_type() == onnx::TensorProto::DOUBLE) return *v;
      return static_cast<std::int64_t>(*v);
    }
    default: return std::string();  // graphs are not imported
  }
}

class Importer {
 public:
  // `declared_outputs`: the graph outputs as the file declares them, before ONNX's inference
  // merged its own dims into them (it silently prefers an inferred number to a name).
  Importer(const onnx::ModelProto& model, const std::string& source,
           const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& declared_outputs)
      : model_(model), source_(source), declared_outputs_(declared_outputs) {}

  Graph run(const ImportOptions& options) {
    const auto& gp = model_.graph();
    graph_.name = gp.name();
    graph_.source = source_;
    for (const auto& p : model_.metadata_props()) graph_.metadata[p.key()] = p.value();
    for (const auto& o : model_.opset_import()) opsets_[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(o.version());

    for (const auto& vi : gp.value_info()) types_[vi.name()] = &vi.type();
    for (const auto& vi : declared_outputs_) types_[vi.name()] = &vi.type();
    for (const auto& vi : gp.input()) types_[vi.name()] = &vi.type();

    for (int i = 0; i < gp.initializer_size(); ++i) add_initializer(gp.initializer(i), i);
    for (const auto& in : gp.input()) {
      if (graph_.find_tensor(in.name()) != kNone) continue;  // IR < 4 lists initializers as inputs
      const TensorId id = declare(in.name());
      graph_.tensor(id).is_graph_input = true;
      graph_.inputs.push_back(id);
    }
    for (int i = 0; i < gp.node_size(); ++i) add_node(gp.node(i), i);
    for (const auto& out : gp.output()) {
      const TensorId id = graph_.find_tensor(out.name());
      if (id == kNone || (graph_.tensor(id).producer == kNone && !graph_.tensor(id).is_graph_input &&
                          !graph_.tensor(id).is_constant))
        throw std::runtime_error(source_ + ": graph output '" + out.name() + "' is produced by no node");
      graph_.tensor(id).is_graph_output = true;
      graph_.outputs.push_back(id);
    }

    std::set<std::string> opaque;
    try {
      opaque = infer_symbolic_shapes(graph_);
      classify_parameters(graph_);
    } catch (const std::exception& e) {
      throw std::runtime_error(source_ + ": " + e.what());
    }
    if (options.warn_opaque) {
      for (const auto& op : opaque)
        std::cerr << "symtensor: warning: " << source_ << ": operator " << op
                  << " has no semantics; treated as opaque and replicated\n";
      for (const auto& note : shared_weight_notes(graph_)) std::cerr << "symtensor: warning: " << source_ << ": " << note << "\n";
    }
    for (const auto& [name, value] : options.bindings) {
      if (!graph_.symbols.contains(name)) throw std::runtime_error(source_ + ": --bind " + name + ": " + unknown_dim_message(name));
      graph_.symbols.bind(name, value);
    }
    if (!options.bindings.empty()) check_bound_extents();
    graph_.batch_dim = find_batch_dim(options.batch_dim);
    if (!options.sequence_dim.empty()) {
      if (!graph_.symbols.contains(options.sequence_dim))
        throw std::runtime_error(source_ + ": --seq-dim " + options.sequence_dim + ": " + unknown_dim_message(options.sequence_dim));
      graph_.sequence_dim = options.sequence_dim;
    }
    try {
      // Heads merged with the batch (nn.MultiheadAttention) as a dim of their own, before
      // the fusion pass matches the attention (merged_heads.h).
      const MergedHeadsSummary merged = split_merged_heads(graph_);
      if (options.warn_opaque && merged.regions > 0)
        std::cerr << "symtensor: note: " << source_ << ": heads merged with the batch (as nn.MultiheadAttention writes them) "
                  << "given a dim of their own in " << merged.regions << " attention layer" << (merged.regions > 1 ? "s" : "")
                  << ", so tensor parallelism can cut them: " << merged.example << "\n";
    } catch (const std::exception& e) {
      throw std::runtime_error(source_ + ": " + e.what());
    }
    try {
      run_fusion_pass(graph_, options.fusion);
    } catch (const std::exception& e) {
      throw std::runtime_error(source_ + ": fusion: " + e.what());
    }
    return std::move(graph_);
  }

 private:
  // Bindings too small for the model (a sequence shorter than a VLM's image tokens) leave a
  // dim like seq - 576 negative: refused, naming the first tensor and its node.
  void check_bound_extents() const {
    for (const Tensor& t : graph_.tensors())
      for (const auto& d : t.shape) {
        if (GiNaC::is_a<GiNaC::numeric>(d) || GiNaC::is_a<GiNaC::symbol>(d)) continue;  // bindings are positive
        const std::optional<double> v = graph_.symbols.evaluate(d);
        if (!v || *v >= 0) continue;
        std::ostringstream dim;
        dim << d;
        const std::string node = t.producer == kNone ? std::string("a graph input") : "node '" + graph_.node(t.producer).name + "'";
        throw std::runtime_error(source_ + ": tensor '" + t.name + "' (" + node + ") has dim " + dim.str() + " = " +
                                 std::to_string(static_cast<long long>(*v)) + " under the bindings: bind larger dims");
      }
  }

  std::string find_batch_dim(const std::string& requested) const {
    std::set<std::string> dims;
    std::vector<std::string> leading;
    for (TensorId in : graph_.inputs) {
      const Shape& shape = graph_.tensor(in).shape;
      for (const auto& d : shape)
        if (GiNaC::is_a<GiNaC::symbol>(d)) dims.insert(GiNaC::ex_to<GiNaC::symbol>(d).get_name());
      if (!shape.empty() && GiNaC::is_a<GiNaC::symbol>(shape[0])) leading.push_back(GiNaC::ex_to<GiNaC::symbol>(shape[0]).get_name());
    }
    if (!requested.empty()) {
      if (!dims.count(requested))
        throw std::runtime_error(source_ + ": --batch-dim " + requested + ": " + unknown_dim_message(requested));
      return requested;
    }
    if (dims.count("batch")) return "batch";
    return leading.empty() ? std::string() : leading.front();
  }

  std::string unknown_dim_message(const std::string& name) const {
    std::string dims;
    for (const auto& [n, s] : graph_.symbols.all())
      if (n.rfind("unk", 0) != 0) dims += (dims.empty() ? "" : ", ") + n;
    return "the model has no dim named '" + name + "' (its dims: " + (dims.empty() ? "none" : dims) + ")";
  }

  TensorId declare(const std::string& name) {
    TensorId id = graph_.find_tensor(name);
    if (id != kNone) return id;
    Tensor t;
    t.name = name;
    auto it = types_.find(name);
    if (it != types_.end()) {
      t.dtype = static_cast<ElementType>(it->second->tensor_type().elem_type());
      if (auto shape = shape_from_type(*it->second, graph_.symbols)) {
        t.shape = std::move(*shape);
        t.shape_known = true;
      }
    }
    return graph_.add_tensor(std::move(t));
  }

  void set_constant(Tensor& t, const onnx::TensorProto& proto) {
    t.dtype = static_cast<ElementType>(proto.data_type());
    t.shape = shape_from_dims(proto.dims());
    t.shape_known = true;
    t.is_constant = true;
    if (auto values = read_integer_elements(proto, kMaxValueElements)) {
      t.value.emplace();
      for (auto v : *values) t.value->push_back(GiNaC::numeric(static_cast<long>(v)));
    }
  }

  void add_initializer(const onnx::TensorProto& proto, int index) {
    if (graph_.find_tensor(proto.name()) != kNone)
      throw std::runtime_error(source_ + ": initializer '" + proto.name() + "' is defined twice");
    Tensor t;
    t.name = proto.name();
    set_constant(t, proto);
    t.initializer.proto_index = index;
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
      t.initializer.storage = InitializerData::Storage::external;
      for (const auto& kv : proto.external_data()) {
        if (kv.key() == "location") t.initializer.external_location = kv.value();
        else if (kv.key() == "offset") t.initializer.external_offset = std::stoll(kv.value());
        else if (kv.key() == "length") t.initializer.external_length = std::stoll(kv.value());
      }
    } else {
      t.initializer.storage = InitializerData::Storage::inline_data;
    }
    graph_.add_tensor(std::move(t));
  }

  void add_node(const onnx::NodeProto& np, int index) {
    Node n;
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    auto op = opsets_.find(n.domain);
    n.opset = op == opsets_.end() ? 0 : op->second;
    const onnx::TensorProto* constant_value = nullptr;
    for (const auto& a : np.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) n.has_subgraph = true;
      if (a.type() == onnx::AttributeProto::TENSOR && a.name() == "value") constant_value = &a.t();
      n.attributes[a.name()] = convert_attribute(a);
    }
    for (const auto& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(kNone);
        continue;
      }
      const TensorId id = graph_.find_tensor(in);
      if (id == kNone && !n.has_subgraph)
        throw std::runtime_error(source_ + ": node '" + n.name + "' (" + n.op_type + ") reads tensor '" + in +
                                 "' that no node, input or initializer provides");
      n.inputs.push_back(id == kNone ? declare(in) : id);
    }
    for (const auto& out : np.output()) n.outputs.push_back(out.empty() ? kNone : declare(out));
    if (n.op_type == "Constant" && n.domain.empty() && !n.outputs.empty() && n.outputs[0] != kNone)
      evaluate_constant(graph_.tensor(n.outputs[0]), n, constant_value);
    try {
      graph_.add_node(std::move(n));
    } catch (const std::exception& e) {
      throw std::runtime_error(source_ + ": " + e.what());
    }
  }

  void evaluate_constant(Tensor& t, const Node& n, const onnx::TensorProto* value) {
    if (value) {
      set_constant(t, *value);
      return;
    }
    t.is_constant = true;
    t.shape_known = true;
    if (auto i = n.attribute("value_int")) {
      t.dtype = ElementType::i64;
      t.shape = {};
      t.value = std::vector<GiNaC::ex>{GiNaC::numeric(static_cast<long>(std::get<std::int64_t>(*i)))};
    } else if (auto ints = n.attr_ints("value_ints")) {
      t.dtype = ElementType::i64;
      t.shape = {GiNaC::numeric(static_cast<long>(ints->size()))};
      t.value.emplace();
      for (auto v : *ints) t.value->push_back(GiNaC::numeric(static_cast<long>(v)));
    } else if (n.attribute("value_float")) {
      t.dtype = ElementType::f32;
      t.shape = {};
    } else if (auto fl = n.attribute("value_floats")) {
      t.dtype = ElementType::f32;
      t.shape = {GiNaC::numeric(static_cast<long>(std::get<std::vector<double>>(*fl).size()))};
    }
  }

  const onnx::ModelProto& model_;
  std::string source_;
  const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& declared_outputs_;
  Graph graph_;
  std::map<std::string, int> opsets_;
  std::map<std::string, const onnx::TypeProto*> types_;
};

}  // namespace

namespace {

// A static model's data inputs with their leading dim made the symbol `batch` (and the
// outputs that lead with the same value), or nullopt when they do not share one leading dim.
std::optional<std::pair<onnx::ModelProto, std::int64_t>> with_symbolic_batch(const onnx::ModelProto& model) {
  const auto& g = model.graph();
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  std::int64_t batch = 0;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name()) || !in.type().has_tensor_type()) continue;
    const auto& shape = in.type().tensor_type().shape();
    if (shape.dim_size() == 0 || !shape.dim(0).has_dim_value()) return std::nullopt;
    if (batch && shape.dim(0).dim_value() != batch) return std::nullopt;
    batch = shape.dim(0).dim_value();
  }
  if (batch < 1) return std::nullopt;
  onnx::ModelProto copy = model;
  auto* graph = copy.mutable_graph();
  graph->clear_value_info();  // inferred again from the new inputs
  auto symbolize = [&](onnx::ValueInfoProto& vi) {
    if (initializers.count(vi.name()) || !vi.type().has_tensor_type()) return;
    auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() > 0 && shape->dim(0).has_dim_value() && shape->dim(0).dim_value() == batch)
      shape->mutable_dim(0)->set_dim_param("batch");
  };
  for (auto& in : *graph->mutable_input()) symbolize(in);
  for (auto& out : *graph->mutable_output()) symbolize(out);
  return std::pair{std::move(copy), batch};
}

Graph import_checked(onnx::ModelProto model, const std::string& source, const std::string& path,
                     const ImportOptions& options) {
  auto symbolic = options.batch_dim.empty() ? with_symbolic_batch(model) : std::nullopt;
  const auto declared = model.graph().output();
  if (!symbolic) {
    check_and_infer(model, source, path);
    return Importer(model, source, declared).run(options);
  }
  std::string baked;
  try {
    ImportOptions bound = options;
    bound.bindings.emplace("batch", static_cast<double>(symbolic->second));
    const auto symbolic_declared = symbolic->first.graph().output();
    check_and_infer(symbolic->first, source, path);
    return Importer(symbolic->first, source, symbolic_declared).run(bound);
  } catch (const std::exception& e) {
    baked = e.what();
  }
  check_and_infer(model, source, path);
  Graph graph = Importer(model, source, declared).run(options);
  graph.metadata[kStaticBatchMetadataKey] = "its shapes are static (batch " + std::to_string(symbolic->second) +
                                            ") and its graph bakes that batch in (" + baked + ")";
  return graph;
}

}  // namespace

Graph import_onnx_model(const onnx::ModelProto& model, const std::string& source_name, const ImportOptions& options) {
  return import_checked(model, source_name, "", options);
}

Graph import_onnx_file(const std::string& path, const ImportOptions& options) {
  return import_checked(read_model_file(path), path, path, options);
}

std::map<std::string, double> parse_bindings(const std::string& text) {
  std::map<std::string, double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw std::runtime_error("--bind: '" + item + "' is not NAME=VALUE");
    const std::string name = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size()) throw std::runtime_error("--bind " + name + ": '" + value + "' is not a number");
    if (!(v >= 1) || v != static_cast<double>(static_cast<long>(v)))
      throw std::runtime_error("--bind " + name + "=" + value + ": a dim must be a positive integer");
    out[name] = v;
  }
  return out;
}

}  // namespace symtensor::compiler
