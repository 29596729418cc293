#include "compiler/onnx_import/symbolic_shapes.h"

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

}  // namespace

std::set<std::string> infer_symbolic_shapes(Graph& graph) {
  std::set<std::string> opaque;
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
