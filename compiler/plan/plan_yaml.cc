#include "compiler/plan/plan_yaml.h"

#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/sharding/tensor_sharding.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::compiler {
namespace {

constexpr const char* kFormat = "symtensor-plan/1";

constexpr const char* kHeader =
    "# SymTensor plan (hand-editable; `symtensor compile MODEL --plan THIS_FILE` reads it back).\n"
    "# strategy/model/cluster: for the record. stack: the software it was priced for (megatron,\n"
    "#   torchtitan, deepspeed, jax). mode: train|infer. precision: fp32|tf32|fp16|bf16|fp8|mxfp8|fp4.\n"
    "# inputs: what compile was given (the model with its SHA-256, the cluster, stack, --bind ...):\n"
    "#   `export THIS_FILE --to T` reads them back.\n"
    "# mesh.levels: per topology level, outermost first, the factors it is split into (their\n"
    "#   product is the level's size, or a multiple of it when the last factor reaches into the\n"
    "#   next level: [8] on 4 racks, then 32 of each rack's 64 GPUs); axes are named after the\n"
    "#   level (node, gpu; node0, node1\n"
    "#   when a level is split); mesh.axes is derived, for the reader. pipeline_axis: an axis\n"
    "#   name or none; its coordinate is the pipeline stage.\n"
    "# batch.global: samples per step; batch.micro_batches: per step, per pipeline.\n"
    "#   batch.group_micro_batches (optional, mixed fleets): per group, the micro-batches each of\n"
    "#   its replicas runs (sum of devices x count = devices x micro_batches).\n"
    "# schedule: gpipe|1f1b|interleaved-1f1b; recompute: none|selective|full; recompute_layers (with\n"
    "#   full, optional): per stage, how many of its first layers are recomputed (absent: all);\n"
    "#   zero_stage: 0..3; stage_zero_stages (optional): per pipeline stage, its own 0..3 (zero_stage\n"
    "#   then their least). replicate_axes (optional, HSDP): mesh axes of the data-parallel group\n"
    "#   over which the model states are replicated; ZeRO shards over the rest of the group.\n"
    "#   moe_dispatcher (optional): alltoall (absent), deepep or hybridep (one copy of a token\n"
    "#   per remote node, not per expert). moe_comm_overlap (optional): true runs the expert\n"
    "#   all-to-alls beside the adjacent micro-batch's compute (Megatron's combined 1F1B).\n"
    "#   moe_load_imbalance (optional): the busiest expert rank's routed tokens over the mean\n"
    "#   (absent: 1, balanced); predictions price that rank (compiler/cost/moe_load.h).\n"
    "# nodes: every operator by name, in topological order: its pipeline stage and its cut,\n"
    "#   loop name (of its iteration space; name#index when a name repeats) -> mesh axes,\n"
    "#   major to minor. Loops not listed are not cut. padded (optional): loop -> the extent it\n"
    "#   runs over instead of its own (Megatron-LM's padded vocabulary), priced as memory and FLOPs.\n"
    "# tensors: derived sharding of each tensor ([per-dim axes] partial{axes}), for the reader.\n"
    "# predicted: the estimate when the plan was written; ignored when read.\n";

std::string number(double v) { return fmt::format("{}", v); }

std::string axis_name(const hardware::DeviceMesh& mesh, int a) { return mesh.axes().at(a).name; }

}  // namespace

std::vector<std::string> plan_loop_keys(const IterationSpace& space) {
  std::vector<std::string> keys;
  for (std::size_t l = 0; l < space.loops.size(); ++l) {
    int same = 0;
    for (const LoopDim& d : space.loops) same += d.name == space.loops[l].name;
    keys.push_back(same > 1 ? space.loops[l].name + "#" + std::to_string(l) : space.loops[l].name);
  }
  return keys;
}

std::string plan_to_yaml(const Plan& plan, Graph& graph, const hardware::Cluster& cluster, const PlanPrediction* prediction) {
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  const std::size_t n = graph.nodes().size();
  if (plan.node_cuts.size() != n || plan.stage_of_node.size() != n)
    throw std::runtime_error(fmt::format("plan.yaml: the plan covers {} nodes but the graph has {}", plan.node_cuts.size(), n));
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormat;
  out << YAML::Key << "strategy" << YAML::Value << plan.strategy;
  out << YAML::Key << "model" << YAML::Value << plan.model;
  out << YAML::Key << "cluster" << YAML::Value << plan.cluster;
  out << YAML::Key << "stack" << YAML::Value << plan.stack;
  out << YAML::Key << "mode" << YAML::Value << std::string(to_string(plan.mode));
  out << YAML::Key << "precision" << YAML::Value << std::string(hardware::to_string(plan.precision));
  if (!plan.inputs.empty()) emit_plan_inputs(out, plan.inputs);

  std::vector<std::vector<int>> factors = plan.mesh_factors;
  if (factors.empty())
    for (auto it = cluster.levels.rbegin(); it != cluster.levels.rend(); ++it) factors.push_back({it->size});
  out << YAML::Key << "mesh" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "levels" << YAML::Value << YAML::BeginSeq;
  for (std::size_t i = 0; i < factors.size(); ++i) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "level" << YAML::Value
        << cluster.levels.at(cluster.levels.size() - 1 - i).name << YAML::Key << "factors" << YAML::Value << YAML::Flow
        << factors[i] << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "axes" << YAML::Value << YAML::BeginSeq;
  for (const auto& axis : mesh.axes())
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << axis.name << YAML::Key << "size"
        << YAML::Value << axis.size << YAML::EndMap;
  out << YAML::EndSeq;
  out << YAML::Key << "pipeline_axis" << YAML::Value
      << (plan.pipeline_axis < 0 ? std::string("none") : axis_name(mesh, plan.pipeline_axis));
  out << YAML::EndMap;

  out << YAML::Key << "batch" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "global" << YAML::Value
      << number(plan.global_batch) << YAML::Key << "micro_batches" << YAML::Value << plan.micro_batches;
  if (!plan.group_micro_batches.empty())
    out << YAML::Key << "group_micro_batches" << YAML::Value << YAML::Flow << plan.group_micro_batches;
  out << YAML::EndMap;
  out << YAML::Key << "schedule" << YAML::Value << std::string(to_string(plan.schedule));
  out << YAML::Key << "virtual_stages" << YAML::Value << plan.virtual_stages;
  out << YAML::Key << "recompute" << YAML::Value << std::string(to_string(plan.recompute));
  if (!plan.recompute_layers.empty())
    out << YAML::Key << "recompute_layers" << YAML::Value << YAML::Flow << plan.recompute_layers;
  if (plan.offload_layers > 0) out << YAML::Key << "offload_layers" << YAML::Value << plan.offload_layers;
  out << YAML::Key << "zero_stage" << YAML::Value << plan.zero_stage;
  if (!plan.stage_zero_stages.empty())
    out << YAML::Key << "stage_zero_stages" << YAML::Value << YAML::Flow << plan.stage_zero_stages;
  out << YAML::Key << "distributed_optimizer" << YAML::Value << plan.distributed_optimizer;
  if (!plan.replicate_axes.empty()) {
    out << YAML::Key << "replicate_axes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int a : plan.replicate_axes) out << axis_name(mesh, a);
    out << YAML::EndSeq;
  }
  out << YAML::Key << "sequence_parallel" << YAML::Value << plan.sequence_parallel;
  out << YAML::Key << "context_parallel_comm" << YAML::Value << std::string(to_string(plan.context_parallel_comm));
  if (plan.moe_dispatcher != MoeDispatcher::alltoall)
    out << YAML::Key << "moe_dispatcher" << YAML::Value << std::string(to_string(plan.moe_dispatcher));
  if (plan.moe_comm_overlap) out << YAML::Key << "moe_comm_overlap" << YAML::Value << true;
  if (plan.moe_load_imbalance != 1) out << YAML::Key << "moe_load_imbalance" << YAML::Value << plan.moe_load_imbalance;

  std::vector<IterationSpace> spaces;
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) spaces.push_back(iteration_space_of(graph, id));
  const std::vector<NodeId> order = graph.topological_order();
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (NodeId id : order) {
    const std::vector<std::string> keys = plan_loop_keys(spaces[id]);
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << graph.node(id).name << YAML::Key << "op"
        << YAML::Value << graph.node(id).op_type << YAML::Key << "stage" << YAML::Value << plan.stage_of_node[id];
    out << YAML::Key << "cut" << YAML::Value << YAML::Flow << YAML::BeginMap;
    const auto& cut = plan.node_cuts[id].loop_axes;
    for (std::size_t l = 0; l < cut.size(); ++l) {
      if (cut[l].empty()) continue;
      if (l >= keys.size())
        throw std::runtime_error(fmt::format("plan.yaml: node '{}' cuts loop {} of {}", graph.node(id).name, l, keys.size()));
      out << YAML::Key << keys[l] << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (int a : cut[l]) out << axis_name(mesh, a);
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
    if (const auto& padded = plan.node_cuts[id].padded_extents; !padded.empty()) {
      out << YAML::Key << "padded" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [l, extent] : padded) {
        if (l < 0 || l >= static_cast<int>(keys.size()))
          throw std::runtime_error(fmt::format("plan.yaml: node '{}' pads loop {} of {}", graph.node(id).name, l, keys.size()));
        out << YAML::Key << keys[l] << YAML::Value << extent;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;

  out << YAML::Key << "tensors" << YAML::Value << YAML::BeginMap;
  std::set<TensorId> written;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    for (std::size_t i = 0; i < node.inputs.size() && i < spaces[id].input_dims.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNone || graph.tensor(t).producer != kNone || graph.tensor(t).shape.empty() || !written.insert(t).second) continue;
      if (spaces[id].input_dims[i].size() != graph.tensor(t).shape.size()) continue;
      out << YAML::Key << graph.tensor(t).name << YAML::Value
          << to_string(input_sharding(spaces[id], plan.node_cuts[id], static_cast<int>(i)), mesh);
    }
    for (std::size_t o = 0; o < node.outputs.size() && o < spaces[id].output_dims.size(); ++o) {
      const TensorId t = node.outputs[o];
      if (graph.tensor(t).shape.empty() || spaces[id].output_dims[o].size() != graph.tensor(t).shape.size()) continue;
      if (!written.insert(t).second) continue;
      out << YAML::Key << graph.tensor(t).name << YAML::Value
          << to_string(output_sharding(spaces[id], plan.node_cuts[id], static_cast<int>(o)), mesh);
    }
  }
  out << YAML::EndMap;

  if (prediction) {
    out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "step_time_s" << YAML::Value << number(prediction->step_time_s);
    out << YAML::Key << "samples_per_s" << YAML::Value << number(prediction->samples_per_s);
    out << YAML::Key << "mfu" << YAML::Value << number(prediction->mfu);
    out << YAML::Key << "memory_capacity_bytes" << YAML::Value << number(prediction->memory_capacity);
    out << YAML::Key << "fits" << YAML::Value << prediction->fits;
    out << YAML::Key << "stage_peak_memory_bytes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double m : prediction->stage_peak_memory) out << number(m);
    out << YAML::EndSeq;
    if (!prediction->breakdown_s.empty()) {
      out << YAML::Key << "breakdown_s" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, seconds] : prediction->breakdown_s) out << YAML::Key << name << YAML::Value << number(seconds);
      out << YAML::EndMap;
    }
    if (!prediction->formulas.empty()) {
      out << YAML::Key << "formulas" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, formula] : prediction->formulas) out << YAML::Key << name << YAML::Value << formula;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!out.good()) throw std::runtime_error(std::string("plan.yaml: emitter error: ") + out.GetLastError());
  return std::string(kHeader) + out.c_str() + "\n";
}

void write_plan_yaml(const std::string& path, const Plan& plan, Graph& graph, const hardware::Cluster& cluster,
                     const PlanPrediction* prediction) {
  sim::write_file_atomically(path, plan_to_yaml(plan, graph, cluster, prediction));
}

}  // namespace symtensor::compiler
