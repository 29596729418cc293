#pragma once
// A plan of a fused graph as a plan of the graph it was fused from (Graph::unfused), for
// the ONNX rewrite, which writes the model's own nodes: each member of a fused node takes
// the fused node's stage, and each of its loops the axes of the fused loop it is linked to
// through the tensor dims they share. Nodes the fusion removed as unused (a causal mask)
// run replicated on the stage of their first reader.
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"

namespace symtensor::compiler {

// `plan` is a plan of `fused` (fused.unfused must be set).
Plan unfuse_plan(Graph& fused, const Plan& plan);

}  // namespace symtensor::compiler
