#include "compiler/cost/plan_analysis.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/saved_activations.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/sharding/redistribution.h"

namespace symtensor::compiler {

double StageMemory::peak() const {
  return parameters + gradients + optimizer + activations_per_micro_batch * micro_batches_in_flight;
}

namespace {

// Bytes per parameter for mixed-precision Adam (ZeRO paper): 2 (16-bit weights) + 2
// (16-bit gradients) + 12 (fp32 master weights, momentum, variance), sharded over the
// data-parallel group N by ZeRO stage: 1 shards the 12, 2 also the gradients, 3 all.
struct StateBytes {
  double params, grads, optimizer;
};

StateBytes model_state_bytes(int zero_stage, double n, bool train) {
  if (!train) return {2, 0, 0};
  switch (zero_stage) {
    case 0: return {2, 2, 12};
    case 1: return {2, 2, 12 / n};
    case 2: return {2, 2 / n, 12 / n};
    default: return {2 / n, 2 / n, 12 / n};
  }
}

class Analyzer {
 public:
  Analyzer(Graph& graph, const hardware::Cluster& cluster, const Plan& plan, const NumericGraph& ng)
      : graph_(graph), cluster_(cluster), plan_(plan), mesh_(plan_mesh(plan, cluster)), ng_(ng),
        axis_sizes_(numeric_axis_sizes(mesh_)) {}

  PlanAnalysis run() {
    check_plan();
    const bool train = plan_.mode == ExecutionMode::train;
    const double global_batch = plan_.global_batch > 0 ? plan_.global_batch : ng_.batch_binding();
    if (ng_.batch_symbol() && global_batch <= 0)
      throw std::runtime_error("the batch size is not known: bind it (--bind batch=N)");
    if (plan_.micro_batches < 1) throw std::runtime_error("plan: micro_batches must be at least 1");
    batch_ = ng_.batch_symbol() ? global_batch / plan_.micro_batches : 0;
    activation_bytes_ = bytes_of(plan_.precision);

    const int stages = plan_.pipeline_stages();
    PlanAnalysis a;
    a.device_memory = cluster_.device.memory_bytes;
    a.stage_memory.resize(stages);
    a.p2p_bytes.assign(std::max(stages - 1, 0), 0.0);

    std::map<TensorId, std::set<std::string>> delivered;  // tensor -> shardings already made
    for (NodeId id : graph_.topological_order()) {
      OpWork w = op_work(id, train, delivered);
      a.ops.push_back(std::move(w));
    }
    if (train) add_parameters(a);
    add_activations(a, train);
    add_pipeline_transfers(a);
    for (int s = 0; s < stages; ++s) {
      const StageMemory& m = a.stage_memory[s];
      // Adam reads and writes weights, gradients and optimizer state once: bandwidth-bound.
      const double bytes = 2 * (m.parameters + m.gradients + m.optimizer);
      a.optimizer_seconds_per_stage = std::max(a.optimizer_seconds_per_stage, train ? bytes / cluster_.device.hbm_bandwidth : 0);
    }
    return a;
  }

 private:
  static double bytes_of(hardware::Precision p) {
    switch (p) {
      case hardware::Precision::fp32: case hardware::Precision::tf32: return 4;
      case hardware::Precision::fp8: return 1;
      default: return 2;
    }
  }

  void check_plan() const {
    const std::size_t n = graph_.nodes().size();
    if (plan_.node_cuts.size() != n || plan_.stage_of_node.size() != n)
      throw std::runtime_error("plan: it describes " + std::to_string(plan_.node_cuts.size()) + " operators, the model has " +
                               std::to_string(n));
    const int stages = plan_.pipeline_stages();
    for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
      const Node& node = graph_.node(id);
      if (plan_.stage_of_node[id] < 0 || plan_.stage_of_node[id] >= stages)
        throw std::runtime_error("plan: node '" + node.name + "' is on stage " + std::to_string(plan_.stage_of_node[id]) +
                                 " of " + std::to_string(stages));
      const NodeCut& cut = plan_.node_cuts[id];
      const NumericNode& nn = ng_.node(id);
      if (cut.loop_axes.size() > nn.loops.size())
        throw std::runtime_error("plan: node '" + node.name + "' cuts " + std::to_string(cut.loop_axes.size()) +
                                 " loops, it has " + std::to_string(nn.loops.size()));
      std::set<int> used;
      for (const auto& axes : cut.loop_axes)
        for (int axis : axes) {
          if (axis < 0 || axis >= static_cast<int>(mesh_.axes().size()))
            throw std::runtime_error("plan: node '" + node.name + "' uses mesh axis " + std::to_string(axis) + ", which does not exist");
          if (axis == plan_.pipeline_axis)
            throw std::runtime_error("plan: node '" + node.name + "' is cut over the pipeline axis");
          if (!used.insert(axis).second)
            throw std::runtime_error("plan: node '" + node.name + "' uses mesh axis '" + mesh_.axes()[axis].name + "' twice");
        }
    }
  }

  double ways(const std::vector<int>& axes) const {
    double w = 1;
    for (int a : axes) w *= mesh_.axes()[a].size;
    return w;
  }

  void check_divisible(NodeId id) const {
    const NodeCut& cut = plan_.node_cuts[id];
    const NumericNode& nn = ng_.node(id);
    for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
      if (cut.loop_axes[l].empty()) continue;
      const double extent = nn.loops[l].extent.at(batch_);
      const double w = ways(cut.loop_axes[l]);
      if (extent < w || std::fmod(extent, w) != 0)
        throw std::runtime_error("plan: node '" + graph_.node(id).name + "': loop '" + nn.space.loops[l].name + "' of extent " +
                                 std::to_string(static_cast<long long>(extent)) + " does not split " +
                                 std::to_string(static_cast<long long>(w)) + " ways");
    }
  }

  double element_bytes(TensorId t) const {
    const Tensor& tensor = graph_.tensor(t);
    return is_floating(tensor.dtype) ? activation_bytes_ : static_cast<double>(element_size(tensor.dtype));
  }

  double local_elements(TensorId t, const TensorSharding& s) const {
    double split = 1;
    for (const auto& axes : s.dim_axes) split *= ways(axes);
    return ng_.tensor_elements(t).at(batch_) / split;
  }

  std::vector<GiNaC::ex> numeric_shape(TensorId t) const {
    std::vector<GiNaC::ex> shape;
    for (const auto& d : graph_.tensor(t).shape) shape.push_back(GiNaC::numeric(static_cast<long>(ng_.compile(d).at(batch_))));
    return shape;
  }

  // Collectives turning `from` into `to` for tensor t, priced; cached by layout because
  // repeated layers ask the same question.
  std::vector<CommOp> redistribute(TensorId t, const TensorSharding& from, const TensorSharding& to) {
    if (from == to) return {};
    std::string key = std::to_string(element_bytes(t)) + "|" + to_string(from, mesh_) + ">" + to_string(to, mesh_) + "|";
    std::vector<GiNaC::ex> shape = shape_cache(t);
    for (const auto& d : shape) key += std::to_string(GiNaC::ex_to<GiNaC::numeric>(d).to_long()) + ",";
    auto it = redistribution_cache_.find(key);
    if (it == redistribution_cache_.end()) {
      std::vector<CommOp> ops;
      const Redistribution r = plan_redistribution(from, to, shape, GiNaC::numeric(static_cast<long>(element_bytes(t))), mesh_);
      for (const auto& step : r.steps) {
        const auto kind = step.collective();
        if (!kind) continue;
        CommOp op;
        op.kind = *kind;
        op.axes = step.axes;
        op.group = step.group;
        op.bytes = GiNaC::ex_to<GiNaC::numeric>(GiNaC::evalf(step.bytes)).to_double();
        op.seconds = hardware::collective_time(cluster_, op.kind, op.group, op.bytes).seconds;
        ops.push_back(std::move(op));
      }
      it = redistribution_cache_.emplace(key, std::move(ops)).first;
    }
    std::vector<CommOp> ops = it->second;
    for (auto& op : ops) op.tensor = graph_.tensor(t).name;
    return ops;
  }

  const std::vector<GiNaC::ex>& shape_cache(TensorId t) {
    auto it = shapes_.find(t);
    if (it == shapes_.end()) it = shapes_.emplace(t, numeric_shape(t)).first;
    return it->second;
  }

  // The sharding a tensor has where it is produced (graph inputs and parameters are
  // supplied in whatever layout their consumer wants).
  std::optional<TensorSharding> produced_sharding(TensorId t) const {
    const Tensor& tensor = graph_.tensor(t);
    if (tensor.producer == kNone || tensor.is_constant) return std::nullopt;
    const Node& p = graph_.node(tensor.producer);
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (p.outputs[o] == t) return output_sharding(ng_.node(tensor.producer).space, plan_.node_cuts[tensor.producer], static_cast<int>(o));
    return std::nullopt;
  }

  static TensorSharding without_partial(TensorSharding s) {
    s.partial_axes.clear();
    return s;
  }

  bool needs_gradient(TensorId t) const {
    if (t == kNone) return false;
    const Tensor& tensor = graph_.tensor(t);
    return is_floating(tensor.dtype) && (tensor.is_parameter || !tensor.is_constant) && !tensor.is_graph_input;
  }

  OpWork op_work(NodeId id, bool train, std::map<TensorId, std::set<std::string>>& delivered) {
    check_divisible(id);
    const Node& node = graph_.node(id);
    const NumericNode& nn = ng_.node(id);
    const NodeCut& cut = plan_.node_cuts[id];
    OpWork w;
    w.node = id;
    w.stage = plan_.stage_of_node[id];
    const double split = cut_ways(cut, mesh_);
    w.fwd_flops = nn.flops.at(batch_) / split;
    double local_bytes = 0;
    int gradient_inputs = 0;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNone || i >= nn.space.input_dims.size()) continue;
      const TensorSharding want = input_sharding(nn.space, cut, static_cast<int>(i));
      local_bytes += local_elements(t, want) * element_bytes(t);
      if (const auto have = produced_sharding(t)) {
        if (delivered[t].insert(to_string(want, mesh_)).second) {
          for (auto& op : redistribute(t, *have, want)) w.fwd_comm.push_back(std::move(op));
        }
        // Gradients arriving in the same layout from several consumers are summed
        // locally first (Q, K and V share their input): one redistribution.
        if (train && needs_gradient(t)) {
          const TensorSharding grad = input_gradient_sharding(nn.space, cut, static_cast<int>(i));
          if (delivered[t].insert("grad:" + to_string(grad, mesh_)).second)
            for (auto& op : redistribute(t, grad, without_partial(*have))) w.bwd_comm.push_back(std::move(op));
        }
      }
      if (train && needs_gradient(t)) ++gradient_inputs;
    }
    for (std::size_t o = 0; o < node.outputs.size() && o < nn.space.output_dims.size(); ++o) {
      const TensorId t = node.outputs[o];
      if (t == kNone) continue;
      const TensorSharding out = output_sharding(nn.space, cut, static_cast<int>(o));
      local_bytes += local_elements(t, out) * element_bytes(t);
      // A partial graph output is summed where it is produced.
      if (graph_.tensor(t).is_graph_output && !out.partial_axes.empty())
        for (auto& op : redistribute(t, out, without_partial(out))) w.fwd_comm.push_back(std::move(op));
    }
    w.fwd_bytes = local_bytes;
    w.fwd_seconds = cluster_.device.kernel_seconds(plan_.precision, w.fwd_flops, w.fwd_bytes);
    if (train) {
      // One gradient per operand that needs one, each as costly as the forward.
      w.bwd_flops = w.fwd_flops * gradient_inputs;
      w.bwd_bytes = gradient_inputs > 0 ? w.fwd_bytes * (1 + gradient_inputs) : 0;
      w.bwd_seconds = gradient_inputs > 0 ? cluster_.device.kernel_seconds(plan_.precision, w.bwd_flops, w.bwd_bytes) : 0;
    }
    return w;
  }

  void add_parameters(PlanAnalysis& a) {
    // Each parameter: its layout at its first consumer, and the union of the axes over
    // which its gradient is partial (the data-parallel group of that parameter).
    for (TensorId t = 0; t < static_cast<TensorId>(graph_.tensors().size()); ++t) {
      const Tensor& tensor = graph_.tensor(t);
      if (!tensor.is_parameter || tensor.consumers.empty()) continue;
      std::optional<TensorSharding> layout;
      std::set<int> partial;
      int stage = 0;
      for (NodeId c : tensor.consumers) {
        const Node& node = graph_.node(c);
        const NumericNode& nn = ng_.node(c);
        for (std::size_t i = 0; i < node.inputs.size() && i < nn.space.input_dims.size(); ++i) {
          if (node.inputs[i] != t) continue;
          if (!layout) {
            layout = input_sharding(nn.space, plan_.node_cuts[c], static_cast<int>(i));
            stage = plan_.stage_of_node[c];
          }
          const TensorSharding g = input_gradient_sharding(nn.space, plan_.node_cuts[c], static_cast<int>(i));
          partial.insert(g.partial_axes.begin(), g.partial_axes.end());
        }
      }
      if (!layout) continue;
      ParamWork p;
      p.tensor = t;
      p.stage = stage;
      p.local_elements = local_elements(t, *layout);
      const std::vector<int> axes(partial.begin(), partial.end());
      const double n = ways(axes);
      const int zero = plan_.distributed_optimizer ? std::max(plan_.zero_stage, 1) : plan_.zero_stage;
      if (!axes.empty()) {
        const hardware::GroupShape group = mesh_.group_shape(axes);
        const double grad_bytes = p.local_elements * 2;  // 16-bit gradients
        auto make = [&](hardware::Collective kind, double bytes) {
          CommOp op;
          op.kind = kind;
          op.axes = axes;
          op.group = group;
          op.bytes = bytes;
          op.seconds = hardware::collective_time(cluster_, kind, group, bytes).seconds;
          op.tensor = tensor.name;
          return op;
        };
        if (zero >= 2) p.grad_sync.push_back(make(hardware::Collective::reduce_scatter, grad_bytes));
        else p.grad_sync.push_back(make(hardware::Collective::all_reduce, grad_bytes));
        // ZeRO-1/2 and the distributed optimizer gather the updated weights once per step.
        if (zero == 1 || zero == 2) p.grad_sync.push_back(make(hardware::Collective::all_gather, p.local_elements * 2));
        if (zero >= 3) p.gather.push_back(make(hardware::Collective::all_gather, p.local_elements * 2));
      }
      const StateBytes b = model_state_bytes(zero, n, true);
      StageMemory& m = a.stage_memory[stage];
      m.parameters += p.local_elements * b.params;
      m.gradients += p.local_elements * b.grads;
      m.optimizer += p.local_elements * b.optimizer;
      a.params.push_back(std::move(p));
    }
  }

  void add_activations(PlanAnalysis& a, bool train) {
    const int stages = plan_.pipeline_stages();
    const int m = plan_.micro_batches;
    if (!train) {
      // Inference keeps no activations; weights only (16-bit).
      for (TensorId t = 0; t < static_cast<TensorId>(graph_.tensors().size()); ++t) {
        const Tensor& tensor = graph_.tensor(t);
        if (!tensor.is_parameter || tensor.consumers.empty()) continue;
        const NodeId c = tensor.consumers[0];
        const Node& node = graph_.node(c);
        for (std::size_t i = 0; i < node.inputs.size() && i < ng_.node(c).space.input_dims.size(); ++i)
          if (node.inputs[i] == t) {
            a.stage_memory[plan_.stage_of_node[c]].parameters +=
                local_elements(t, input_sharding(ng_.node(c).space, plan_.node_cuts[c], static_cast<int>(i))) * activation_bytes_;
            break;
          }
      }
      return;
    }
    std::vector<SavedTensor> saved = plan_.recompute == RecomputePolicy::full ? layer_checkpoints(ng_, activation_bytes_)
                                                                             : saved_tensors(ng_, activation_bytes_);
    std::vector<OpWork*> by_node(graph_.nodes().size(), nullptr);
    for (auto& w : a.ops) by_node[w.node] = &w;
    for (const SavedTensor& s : saved) {
      if (plan_.recompute == RecomputePolicy::selective && s.quadratic_in_sequence) continue;
      const Tensor& t = graph_.tensor(s.tensor);
      NodeId holder = s.saved_by != kNone ? s.saved_by : (t.consumers.empty() ? kNone : t.consumers[0]);
      if (holder == kNone) continue;
      const auto layout = produced_sharding(s.tensor);
      const double elements = layout ? local_elements(s.tensor, *layout)
                                     : ng_.tensor_elements(s.tensor).at(batch_) / cut_ways(plan_.node_cuts[holder], mesh_);
      const int stage = plan_.stage_of_node[holder];
      a.stage_memory[stage].activations_per_micro_batch += elements * s.bytes_per_element;
      by_node[holder]->saved_bytes += elements * s.bytes_per_element;
    }
    // What is not kept is recomputed in the backward pass.
    for (auto& w : a.ops) {
      const bool quadratic = [&] {
        for (TensorId out : graph_.node(w.node).outputs)
          if (out != kNone && graph_.tensor(out).shape.size() >= 2) {
            const auto seq = graph_.symbols.all().find("seq");
            if (seq == graph_.symbols.all().end()) return false;
            int n = 0;
            for (const auto& d : graph_.tensor(out).shape) n += d.has(seq->second) ? 1 : 0;
            if (n >= 2) return true;
          }
        return false;
      }();
      w.recomputed = plan_.recompute == RecomputePolicy::full ||
                     (plan_.recompute == RecomputePolicy::selective && quadratic);
    }
    for (int s = 0; s < stages; ++s) {
      StageMemory& mem = a.stage_memory[s];
      switch (plan_.schedule) {
        case Schedule::gpipe: mem.micro_batches_in_flight = m; break;
        case Schedule::one_f_one_b: mem.micro_batches_in_flight = std::min(m, stages - s); break;
        case Schedule::interleaved_1f1b: {
          // Korthikanti et al.: interleaving keeps (1 + (p-1)/(p·m)) times 1F1B's p.
          const double factor = 1 + static_cast<double>(stages - 1) / (static_cast<double>(stages) * m);
          mem.micro_batches_in_flight = std::min(m, stages - s);
          mem.activations_per_micro_batch *= factor;
          break;
        }
      }
    }
  }

  void add_pipeline_transfers(PlanAnalysis& a) {
    if (a.p2p_bytes.empty()) return;
    for (TensorId t = 0; t < static_cast<TensorId>(graph_.tensors().size()); ++t) {
      const Tensor& tensor = graph_.tensor(t);
      if (tensor.producer == kNone) continue;
      const int from = plan_.stage_of_node[tensor.producer];
      int to = from;
      for (NodeId c : tensor.consumers) to = std::max(to, plan_.stage_of_node[c]);
      if (to == from) continue;
      // A value its producer's iteration space does not describe (an opaque operator's, a
      // secondary output) crosses whole.
      const auto layout = produced_sharding(t);
      const double elements = layout ? local_elements(t, *layout) : ng_.tensor_elements(t).at(batch_);
      const double bytes = elements * element_bytes(t);
      for (int s = from; s < to; ++s) a.p2p_bytes[s] += bytes;
    }
  }

  Graph& graph_;
  const hardware::Cluster& cluster_;
  const Plan& plan_;
  hardware::DeviceMesh mesh_;
  const NumericGraph& ng_;
  AxisSizes axis_sizes_;
  double batch_ = 0;
  double activation_bytes_ = 2;
  std::map<std::string, std::vector<CommOp>> redistribution_cache_;
  std::map<TensorId, std::vector<GiNaC::ex>> shapes_;
};

}  // namespace

PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  const NumericGraph ng(graph);
  return analyze_plan(graph, cluster, plan, ng);
}

PlanAnalysis analyze_plan(Graph& graph, const hardware::Cluster& cluster, const Plan& plan, const NumericGraph& ng) {
  return Analyzer(graph, cluster, plan, ng).run();
}

}  // namespace symtensor::compiler
