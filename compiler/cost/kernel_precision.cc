#include "compiler/cost/kernel_precision.h"

namespace symtensor::compiler {

bool runs_low_precision_gemm(const NumericGraph& ng, NodeId id, hardware::Precision plan_precision) {
  if (!hardware::is_low_precision(plan_precision) || ng.node(id).kind != OpKind::gemm) return false;
  if (ng.num_layers() > 0 && ng.node_layers()[id] < 0) return false;
  for (TensorId t : ng.graph().node(id).inputs)
    if (t != kNone && (ng.facts(t).parameter || ng.facts(t).weight_derived)) return true;
  return false;
}

hardware::Precision kernel_precision(const NumericGraph& ng, NodeId id, hardware::Precision plan_precision) {
  if (!hardware::is_low_precision(plan_precision)) return plan_precision;
  return runs_low_precision_gemm(ng, id, plan_precision) ? plan_precision : hardware::Precision::bf16;
}

double activation_bytes(hardware::Precision plan_precision) {
  return plan_precision == hardware::Precision::fp32 || plan_precision == hardware::Precision::tf32 ? 4 : 2;
}

}  // namespace symtensor::compiler
