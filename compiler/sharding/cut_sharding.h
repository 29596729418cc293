#pragma once
// The shardings an operator's cut implies for its operands: a dim that maps to a cut loop
// is split by that loop's axes; a cut reduction loop absent from an output leaves that
// output partial over its axes; every other axis replicates. The gradient of an operand
// is partial over the axes of every cut loop that does not index it.
#include "compiler/ops/op_semantics.h"
#include "compiler/plan/plan.h"
#include "compiler/sharding/tensor_sharding.h"

namespace symtensor::compiler {

TensorSharding input_sharding(const IterationSpace& space, const NodeCut& cut, int input);
TensorSharding output_sharding(const IterationSpace& space, const NodeCut& cut, int output);
// The sharding in which the gradient of input `input` is produced by the backward pass.
TensorSharding input_gradient_sharding(const IterationSpace& space, const NodeCut& cut, int input);

// Number of devices the node's work is divided over (product of all cut axes' sizes).
double cut_ways(const NodeCut& cut, const hardware::DeviceMesh& mesh);

}  // namespace symtensor::compiler
