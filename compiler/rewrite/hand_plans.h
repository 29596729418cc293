#pragma once
// Hand-built plans for checking the ONNX rewrite before the plan generators exist:
// pipeline x data x tensor parallel on one node's GPUs.
//   data:     every node's batch loop cut over the data axis (where the rewrite allows);
//   tensor:   weight MatMul/Gemm cut alternately on n (column parallel) and k (row
//             parallel, partial sums), Conv on its output channels;
//   sequence: (with tensor) other nodes cut on their seq loop over the tensor axis, which
//             brings reduce-scatters, all-gathers and all-to-alls;
//   pipeline: nodes split into equal runs of the topological order.
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct HandPlanSpec {
  int pipeline = 1, data = 1, tensor = 1;
  bool sequence_parallel = false;
};

// The cluster's innermost level must hold pipeline*data*tensor devices and every other
// level one (scale_cluster(cluster, 1, n)); throws otherwise.
Plan make_hand_plan(Graph& graph, const hardware::Cluster& cluster, const HandPlanSpec& spec);

}  // namespace symtensor::compiler
