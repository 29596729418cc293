#pragma once
// Sharded ONNX out: DIR/stage_<k>.onnx (or stage_<k>_rank_<c>.onnx), DIR/emulation.onnx and
// DIR/manifest.json for a plan. Every file is checked with onnx::checker and strict shape
// inference before it is written. Conventions: compiler/rewrite/README.md.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/rewrite/sharded_program.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct ShardedOnnxSummary {
  std::vector<std::string> files;  // written, relative to the directory
  int collectives = 0;             // collective steps (all stages)
  int stages = 1;
  // Per kept output (KeptOutputs): its input's global shape and the shape a rank holds.
  struct Kept {
    std::string output, input;
    std::vector<std::int64_t> global, local;
  };
  std::vector<Kept> kept;
};

// Every dim of `graph` must be bound (ImportOptions::bindings): local shapes are concrete.
// Throws (one line) on a plan the rewrite cannot express or a file that fails the checks.
void write_sharded_onnx(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                        const hardware::Cluster& cluster, const std::string& dir);
// `kept`: outputs returned in an input's sharding (KeptOutputs; manifest.json lists them under
// "kept_outputs", output -> input).
ShardedOnnxSummary write_sharded_onnx(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                                      const hardware::Cluster& cluster, const std::string& dir, Mutation mutation,
                                      const KeptOutputs& kept = {});

}  // namespace symtensor::compiler
