#pragma once
// The emulation graph: every rank's piece of a sharded program, and every collective
// lowered to standard ONNX (Slice for local slices, Concat for all-gather, Sum for
// all-reduce, Sum+Slice for reduce-scatter, Slice+Concat for all-to-all), all stages
// chained. It has the original model's inputs and outputs (dims bound to the program's
// bindings), so ONNX Runtime can compare it with the original.
//
// Names: a rank's copy of value V is "V@<i>" (i = the rank's index inside its stage, so a
// value sent between stages keeps its name); a weight shard is "W@<offsets>", one per
// distinct box; a sliced graph input "X@<offsets>".
#include <onnx/onnx_pb.h>

#include "compiler/rewrite/sharded_program.h"

namespace symtensor::compiler {

onnx::ModelProto build_emulation_model(const onnx::ModelProto& original, const ShardedProgram& program);

}  // namespace symtensor::compiler
