#pragma once
#include "hardware/cluster.h"

namespace symtensor::compiler {

// Roofline time of one kernel: the larger of FLOPs at the achieved rate for its size
// (the profile's efficiency curve) and bytes at HBM bandwidth, plus the launch overhead.
double compute_seconds(const hardware::Device& device, hardware::Precision precision, double flops, double bytes);

}  // namespace symtensor::compiler
