#pragma once
// The per-stage SPMD files: one graph per pipeline stage with local shapes, collectives as
// explicit nodes, stage boundaries as graph inputs/outputs. Layout and conventions are in
// compiler/rewrite/README.md.
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/rewrite/sharded_program.h"

namespace symtensor::compiler {

struct StageFile {
  std::string file;          // "stage_0.onnx" or "stage_0_rank_1.onnx"
  int stage = 0;
  std::vector<int> ranks;    // global ranks that load it
  onnx::ModelProto model;
};

// One file per stage, or one per (stage, coordinate on the mesh axes that split the
// stage's weights) when ranks hold different weight shards.
std::vector<StageFile> build_stage_files(const onnx::ModelProto& original, const ShardedProgram& program);

inline constexpr const char* kCollectiveDomain = "ai.symtensor";

}  // namespace symtensor::compiler
