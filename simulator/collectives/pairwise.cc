// Pairwise all-to-all: in step k every member sends its S/p block for member i+k.
#include "simulator/collectives/phases.h"

namespace symtensor::sim {

Phases pairwise_all_to_all(int p, double bytes) {
  Phases phases;
  for (int k = 1; k < p; ++k) {
    Phase phase;
    phase.reserve(p);
    for (int i = 0; i < p; ++i) phase.push_back({i, (i + k) % p, bytes / p});
    phases.push_back(std::move(phase));
  }
  return phases;
}

}  // namespace symtensor::sim
