#include "compiler/cost/roofline.h"

#include <algorithm>

namespace symtensor::compiler {

double compute_seconds(const hardware::Device& device, hardware::Precision precision, double flops, double bytes) {
  if (flops <= 0 && bytes <= 0) return 0;
  const double math = flops > 0 ? flops / (device.peak(precision) * device.efficiency_for(flops)) : 0;
  const double memory = bytes / device.hbm_bandwidth;
  return std::max(math, memory) + device.kernel_launch_s;
}

}  // namespace symtensor::compiler
