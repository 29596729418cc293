#include "compiler/cost/estimate_order.h"

namespace symtensor::compiler {

bool better_estimate(const StepEstimate& a, const StepEstimate& b) {
  if (a.fits != b.fits) return a.fits;
  if (!a.fits) return a.peak_memory < b.peak_memory;
  return a.step_time_s < b.step_time_s;
}

}  // namespace symtensor::compiler
