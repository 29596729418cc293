#include "compiler/rewrite/hand_plans.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/analysis/model_stats.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/rewrite/sharded_program.h"

namespace symtensor::compiler {
namespace {

bool mentions(const Graph& g, const GiNaC::ex& e, const std::string& symbol) {
  return g.symbols.contains(symbol) && e.has(g.symbols.all().at(symbol));
}

bool divisible(const Graph& g, const GiNaC::ex& e, int ways) {
  auto v = g.symbols.evaluate(e);
  return v && static_cast<long>(*v) % ways == 0;
}

// The loop that dim `dim` of output 0 maps to, or -1.
int output_loop(const IterationSpace& s, int dim) {
  if (s.output_dims.empty() || s.output_dims[0].empty()) return -1;
  const int rank = static_cast<int>(s.output_dims[0].size());
  if (dim < 0) dim += rank;
  return dim >= 0 && dim < rank ? s.output_dims[0][dim] : -1;
}

int loop_named_by(const Graph& g, const IterationSpace& s, const std::string& symbol) {
  if (s.output_dims.empty()) return -1;
  for (int l : s.output_dims[0])
    if (l >= 0 && mentions(g, s.loops[l].extent, symbol)) return l;
  return -1;
}

bool is_weight(const Graph& g, TensorId t) {
  if (t == kNone) return false;
  const Tensor& x = g.tensor(t);
  return x.is_parameter || (x.is_constant && !x.value);
}

}  // namespace

Plan make_hand_plan(Graph& graph, const hardware::Cluster& cluster, const HandPlanSpec& spec) {
  const int devices = spec.pipeline * spec.data * spec.tensor;
  if (cluster.levels.empty() || cluster.levels[0].size != devices || cluster.num_devices() != devices)
    throw std::runtime_error("hand plan: cluster '" + cluster.name + "' has " + std::to_string(cluster.num_devices()) +
                             " devices, the plan needs " + std::to_string(devices) + " on one node");
  Plan plan;
  plan.strategy = "hand";
  plan.model = graph.source;
  plan.cluster = cluster.name;
  plan.stack = cluster.stack.name;
  plan.mode = ExecutionMode::infer;
  const int levels = static_cast<int>(cluster.levels.size());
  std::vector<int> inner;
  int axis = levels - 1, pipeline_axis = -1, data_axis = -1, tensor_axis = -1;
  if (spec.pipeline > 1) { inner.push_back(spec.pipeline); pipeline_axis = axis++; }
  if (spec.data > 1) { inner.push_back(spec.data); data_axis = axis++; }
  if (spec.tensor > 1) { inner.push_back(spec.tensor); tensor_axis = axis++; }
  if (inner.empty()) inner.push_back(1);
  for (int l = 0; l < levels - 1; ++l) plan.mesh_factors.push_back({1});
  plan.mesh_factors.push_back(inner);
  plan.pipeline_axis = pipeline_axis;

  const std::vector<NodeId> order = graph.topological_order();
  const std::size_t n = graph.nodes().size();
  if (static_cast<std::size_t>(spec.pipeline) > order.size())
    throw std::runtime_error("hand plan: " + std::to_string(spec.pipeline) + " pipeline stages for the " +
                             std::to_string(order.size()) + " operators of '" + graph.source + "'");
  int data_cuts = 0, tensor_cuts = 0;
  plan.stage_of_node.assign(n, 0);
  plan.node_cuts.assign(n, NodeCut{});
  int weight_gemms = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const NodeId id = order[i];
    plan.stage_of_node[id] = static_cast<int>(i * spec.pipeline / order.size());
    const Node& node = graph.node(id);
    const IterationSpace space = iteration_space_of(graph, id);
    NodeCut cut;
    cut.loop_axes.assign(space.loops.size(), {});
    auto try_cut = [&](int loop, int mesh_axis, int ways) {
      if (loop < 0 || mesh_axis < 0 || !cut.loop_axes[loop].empty() || !divisible(graph, space.loops[loop].extent, ways)) return;
      cut.loop_axes[loop] = {mesh_axis};
      if (cut_rewrite_problem(graph, id, space, cut)) cut.loop_axes[loop].clear();
    };
    try_cut(loop_named_by(graph, space, graph.batch_dim), data_axis, spec.data);
    const bool weight_gemm = (space.kind == OpKind::gemm && node.inputs.size() > 1 && is_weight(graph, node.inputs[1]));
    if (weight_gemm && tensor_axis >= 0) {
      if (node.op_type == "Conv") {
        try_cut(output_loop(space, 1), tensor_axis, spec.tensor);
      } else if (weight_gemms++ % 2 == 0) {
        try_cut(output_loop(space, -1), tensor_axis, spec.tensor);
      } else {
        int k = -1;
        for (int l : space.input_dims.at(1))
          if (l >= 0 && space.loops[l].reduction) k = l;
        try_cut(k, tensor_axis, spec.tensor);
      }
    } else if (spec.sequence_parallel && tensor_axis >= 0 && space.kind != OpKind::gemm) {
      try_cut(loop_named_by(graph, space, graph.sequence_dim), tensor_axis, spec.tensor);
    }
    for (const auto& axes : cut.loop_axes) {
      data_cuts += std::count(axes.begin(), axes.end(), data_axis);
      tensor_cuts += std::count(axes.begin(), axes.end(), tensor_axis);
    }
    plan.node_cuts[id] = cut;
  }
  // An axis that cuts nothing would only replicate the work: refuse it rather than call
  // a replicated program data or tensor parallel.
  if (data_axis >= 0 && data_cuts == 0)
    throw std::runtime_error("hand plan: data parallelism " + std::to_string(spec.data) +
                             " ways cuts no operator of '" + graph.source + "' (the batch does not divide)");
  if (tensor_axis >= 0 && tensor_cuts == 0)
    throw std::runtime_error("hand plan: tensor parallelism " + std::to_string(spec.tensor) +
                             " ways cuts no weight operator of '" + graph.source + "' (no weight dim divides)");
  return plan;
}

}  // namespace symtensor::compiler
