#pragma once
// Human-readable summaries of clusters for `symtensor hardware list|show`.
#include <string>

#include "hardware/cluster.h"

namespace symtensor::hardware {

// Every number with its unit: device, topology levels, totals and sample collective costs.
std::string describe_cluster(const Cluster& cluster);
// One line per bundled profile: name, device count, device, description.
std::string describe_profiles();

}  // namespace symtensor::hardware
