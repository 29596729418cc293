#pragma once
// plan.yaml: a Plan as a documented, hand-editable file that round-trips exactly.
//
//   # comments at the top explain every key
//   format: symtensor-plan/1
//   strategy: megatron            # who made it (kept when read back)
//   model: gpt.onnx               # for the record
//   cluster: dgx-a100             # profile name, for the record (the caller's cluster is used)
//   mode: train                   # train | infer
//   precision: bf16               # fp32 | tf32 | fp16 | bf16 | fp8
//   mesh:
//     levels:                     # outermost first; factors multiply to the level's size
//       - {level: node, factors: [2, 2]}
//       - {level: gpu, factors: [2, 4]}
//     axes: [{name: node0, size: 2}, ...]   # derived from levels, for the reader
//     pipeline_axis: node0        # an axis name, or none
//   batch: {global: 512, micro_batches: 16}
//   schedule: 1f1b                # gpipe | 1f1b | interleaved-1f1b
//   virtual_stages: 1
//   recompute: selective          # none | selective | full
//   zero_stage: 0                 # 0..3
//   distributed_optimizer: false
//   sequence_parallel: true
//   nodes:                        # every node of the graph, in topological order
//     - {name: /h.0/attn/MatMul_14, op: MatMul, stage: 0, cut: {b: [node1, gpu0], n: [gpu1]}}
//   tensors:                      # derived (the producer's output sharding), for the reader
//     /h.0/attn/MatMul_output_14: "[{node1,gpu0},{},{gpu1}] partial{}"
//   predicted: {...}              # the caller's estimate; ignored when read
//
// A cut maps a loop name of the node's iteration space (`name#index` when the name repeats)
// to mesh axis names, major to minor; loops not listed are not cut. Output is deterministic
// (byte-identical for the same inputs). Errors: "FILE:LINE: key 'K': problem".
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// The `predicted` section (written for the reader, ignored when read).
struct PlanPrediction {
  double step_time_s = 0;
  double samples_per_s = 0;
  double mfu = 0;
  std::vector<double> stage_peak_memory;  // bytes per device, per stage
  double memory_capacity = 0;
  bool fits = true;
  std::map<std::string, double> breakdown_s;    // compute, exposed communication, bubble ...
  std::map<std::string, std::string> formulas;  // name -> formula text
};

// The keys plan.yaml uses for the loops of `space`: the loop name, or name#index when the
// name repeats within the space.
std::vector<std::string> plan_loop_keys(const IterationSpace& space);

std::string plan_to_yaml(const Plan& plan, Graph& graph, const hardware::Cluster& cluster,
                         const PlanPrediction* prediction = nullptr);
// Writes plan_to_yaml atomically (sim::write_file_atomically); throws naming the path.
void write_plan_yaml(const std::string& path, const Plan& plan, Graph& graph, const hardware::Cluster& cluster,
                     const PlanPrediction* prediction = nullptr);

// `source` names the text in errors. The mesh must fit `cluster` (on a mixed fleet, the part
// of it the plan's `cluster:` names, when it names one: hardware::fleet_part_named); every node
// of `graph` must appear once by name.
Plan plan_from_yaml(const std::string& text, const std::string& source, Graph& graph, const hardware::Cluster& cluster);
Plan read_plan_yaml(const std::string& path, Graph& graph, const hardware::Cluster& cluster);

}  // namespace symtensor::compiler
