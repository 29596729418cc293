#include "compiler/rewrite/kv_cache.h"

#include <map>
#include <set>
#include <stdexcept>

#include "compiler/analysis/model_stats.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/sharding/cut_sharding.h"

namespace symtensor::compiler {
namespace {

bool passes_through(const onnx::NodeProto& n) {
  return n.domain().empty() && (n.op_type() == "Identity" || n.op_type() == "Cast") && n.input_size() == 1;
}

}  // namespace

std::vector<KvCachePair> find_kv_cache(const onnx::ModelProto& model) {
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initializers, inputs;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  std::map<std::string, int> rank_of;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    inputs.insert(in.name());
    if (in.type().tensor_type().has_shape()) rank_of[in.name()] = in.type().tensor_type().shape().dim_size();
  }
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) producer[o] = &n;
  auto through = [&](std::string name) {
    for (auto it = producer.find(name); it != producer.end() && passes_through(*it->second); it = producer.find(name))
      name = it->second->input(0);
    return name;
  };
  std::vector<KvCachePair> pairs;
  std::set<std::string> used;
  for (const auto& out : g.output()) {
    const auto it = producer.find(through(out.name()));
    if (it == producer.end() || it->second->op_type() != "Concat" || !it->second->domain().empty()) continue;
    const onnx::NodeProto& concat = *it->second;
    long axis = 0;
    for (const auto& a : concat.attribute())
      if (a.name() == "axis") axis = static_cast<long>(a.i());
    for (const auto& in : concat.input()) {
      const std::string past = through(in);
      if (!inputs.count(past) || used.count(past)) continue;
      if (axis < 0 && rank_of.count(past)) axis += rank_of[past];
      pairs.push_back({past, out.name(), axis});
      used.insert(past);
      break;
    }
  }
  return pairs;
}

KeptOutputs kept_outputs_of(const std::vector<KvCachePair>& pairs) {
  KeptOutputs kept;
  for (const auto& p : pairs) kept[p.present] = p.past;
  return kept;
}

std::vector<long> cut_kv_cache_updates(Graph& graph, Plan& plan, const hardware::Cluster& cluster,
                                       const std::vector<KvCachePair>& pairs) {
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  std::vector<long> pieces;
  auto through = [&](TensorId t) {
    while (t != kNone && graph.tensor(t).producer != kNone) {
      const Node& n = graph.node(graph.tensor(t).producer);
      if (!n.domain.empty() || (n.op_type != "Identity" && n.op_type != "Cast") || n.inputs.size() != 1) break;
      t = n.inputs[0];
    }
    return t;
  };
  for (const KvCachePair& pair : pairs) {
    const TensorId present = through(graph.find_tensor(pair.present));
    const NodeId c = present == kNone ? kNone : graph.tensor(present).producer;
    if (c == kNone || graph.node(c).op_type != "Concat")
      throw std::runtime_error("serve --onnx: the cache update of '" + pair.present + "' is not a Concat in the imported graph");
    const Node& concat = graph.node(c);
    const IterationSpace space = iteration_space_of(graph, c);
    NodeCut cut = plan.node_cuts.at(c);
    cut.loop_axes.resize(space.loops.size());
    for (std::size_t i = 0; i < concat.inputs.size(); ++i) {
      const TensorId fresh = concat.inputs[i];
      if (fresh == kNone || graph.tensor(through(fresh)).is_graph_input) continue;
      const NodeId p = graph.tensor(fresh).producer;
      if (p == kNone) continue;
      const Node& producer = graph.node(p);
      int output = 0;
      while (output < static_cast<int>(producer.outputs.size()) && producer.outputs[output] != fresh) ++output;
      const TensorSharding arrives = output_sharding(iteration_space_of(graph, p), plan.node_cuts.at(p), output);
      const auto& dims = space.output_dims.at(0);
      for (std::size_t d = 0; d < dims.size() && d < arrives.dim_axes.size(); ++d)
        if (dims[d] >= 0) cut.loop_axes[dims[d]] = static_cast<long>(d) == pair.axis ? std::vector<int>{} : arrives.dim_axes[d];
      break;
    }
    plan.node_cuts[c] = cut;
    const Tensor& past = graph.tensor(graph.find_tensor(pair.past));
    const auto& dims = space.output_dims.at(0);
    pieces.push_back(1);
    for (std::size_t d = 0; d < dims.size() && d < past.shape.size(); ++d) {
      if (dims[d] < 0) continue;
      long ways = 1;
      for (int a : cut.loop_axes[dims[d]]) ways *= mesh.axes().at(a).size;
      const auto extent = graph.symbols.evaluate(past.shape[d]);
      if (ways > 1 && extent && static_cast<long>(*extent) % ways != 0)
        throw std::runtime_error("serve --onnx: dim " + std::to_string(d) + " of the KV cache '" + pair.past + "' (" +
                                 std::to_string(static_cast<long>(*extent)) + ", its heads under tensor parallelism) is cut " +
                                 std::to_string(ways) + " ways; the layout must divide it (tp dividing the KV heads)");
      pieces.back() *= ways;
    }
  }
  return pieces;
}

}  // namespace symtensor::compiler
