#include "compiler/onnx_import/symbolic_shapes.h"

#include <sstream>
#include <stdexcept>

#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {
namespace {

OpContext context_for(Graph& graph, const Node& node) {
  OpContext ctx{node, {}, {}, graph.symbols};
  for (TensorId in : node.inputs) ctx.inputs.push_back(in == kNone ? nullptr : &graph.tensor(in));
  for (TensorId out : node.outputs) ctx.outputs.push_back(out == kNone ? nullptr : &graph.tensor(out));
  return ctx;
}

bool all_outputs_known(const Graph& graph, const Node& node) {
  for (TensorId out : node.outputs)
    if (out != kNone && !graph.tensor(out).shape_known) return false;
  return true;
}

std::string where(const Node& node) { return "node '" + node.name + "' (" + node.op_type + ")"; }

std::string text(const GiNaC::ex& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

// Shapes are derived, not trusted: where the model declares an output's shape, a named
// dim that inference derives from others becomes an alias of what inference says, and a
// declared number that inference contradicts is an error naming both. Dims of the graph
// inputs are the model's free dims: inference can only agree with them.
void reconcile(Graph& graph, const Node& node, const Tensor& t, const Shape& inferred,
               const std::set<std::string>& input_dims) {
  if (!t.shape_known || t.shape.size() != inferred.size()) return;
  for (std::size_t d = 0; d < inferred.size(); ++d) {
    const GiNaC::ex& declared = t.shape[d];
    const GiNaC::ex derived = inferred[d].expand();
    if ((declared - derived).expand().is_zero()) continue;
    const bool declared_number = GiNaC::is_a<GiNaC::numeric>(declared);
    if (declared_number && GiNaC::is_a<GiNaC::numeric>(derived))
      throw std::runtime_error(where(node) + ": output '" + t.name + "' dim " + std::to_string(d) + " is declared " +
                               text(declared) + " but inference gives " + text(derived));
    if (!GiNaC::is_a<GiNaC::symbol>(declared)) continue;
    const std::string name = GiNaC::ex_to<GiNaC::symbol>(declared).get_name();
    if (input_dims.count(name))
      throw std::runtime_error(where(node) + ": output '" + t.name + "' dim " + std::to_string(d) + " is declared '" +
                               name + "' but inference gives " + text(derived));
    try {
      graph.symbols.alias(name, derived);
    } catch (const std::exception& e) {
      throw std::runtime_error(where(node) + ": output '" + t.name + "': " + e.what());
    }
  }
}

}  // namespace

std::set<std::string> infer_symbolic_shapes(Graph& graph) {
  std::set<std::string> opaque;
  std::set<std::string> input_dims;
  for (TensorId in : graph.inputs)
    for (const auto& d : graph.tensor(in).shape)
      for (auto it = d.preorder_begin(); it != d.preorder_end(); ++it)
        if (GiNaC::is_a<GiNaC::symbol>(*it)) input_dims.insert(GiNaC::ex_to<GiNaC::symbol>(*it).get_name());
  for (NodeId id : graph.topological_order()) {
    Node& node = graph.node(id);
    const OpRule* rule = node.has_subgraph ? nullptr : find_op_rule(node.domain, node.op_type);
    if (!rule) {
      node.opaque = true;
      opaque.insert(node.domain.empty() ? node.op_type : node.domain + "." + node.op_type);
    }
    // Constant nodes were evaluated by the importer.
    const bool evaluated = node.op_type == "Constant" && node.domain.empty();
    if (rule && rule->infer && !evaluated) {
      std::vector<OutputInfo> infos;
      std::string failure;
      try {
        infos = rule->infer(context_for(graph, node));
        if (infos.size() < node.outputs.size()) failure = "shape rule gave fewer outputs than the node has";
      } catch (const std::exception& e) {
        failure = e.what();
      }
      if (failure.empty()) {
        for (std::size_t i = 0; i < node.outputs.size(); ++i) {
          if (node.outputs[i] == kNone) continue;
          Tensor& t = graph.tensor(node.outputs[i]);
          if (infos[i].dtype != ElementType::undefined) t.dtype = infos[i].dtype;
          reconcile(graph, node, t, infos[i].shape, input_dims);
          t.shape = std::move(infos[i].shape);
          t.shape_known = true;
          t.value = std::move(infos[i].value);
        }
        continue;
      }
      if (!all_outputs_known(graph, node)) throw std::runtime_error(where(node) + ": " + failure);
    }
    if (!all_outputs_known(graph, node)) {
      // Neither ONNX nor a rule knows the shape (opaque op, control flow): the rank is
      // unknown, so the output is treated as a tensor of unknown size.
      for (TensorId out : node.outputs)
        if (out != kNone && !graph.tensor(out).shape_known) graph.tensor(out).shape = {graph.symbols.fresh()};
    }
  }
  return opaque;
}

}  // namespace symtensor::compiler
