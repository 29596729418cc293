#include "simulator/stats/summary_text.h"

#include <fmt/format.h>

namespace symtensor::sim {

std::string summary_text(const SimResult& r) {
  std::string out = fmt::format("step time {:.6f} s ({} mode, {} simulated ranks, {} events)\n", r.step_time_s,
                                r.full_mode ? "full" : "symmetric", r.simulated_ranks, r.events);
  out += fmt::format("{:<16} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11}  {}\n", "rank class", "ranks", "compute s",
                     "exposed s", "bubble s", "optim s", "peak GB", "memory");
  for (const auto& c : r.classes) {
    std::string memory = c.out_of_memory
                             ? fmt::format("OUT OF MEMORY by {:.3f} GB", c.memory_overage_bytes / 1e9)
                             : fmt::format("ok ({:.1f}% of {:.1f} GB)", 100 * c.peak_memory_bytes / r.device_memory_bytes,
                                           r.device_memory_bytes / 1e9);
    out += fmt::format("{:<16} {:>6} {:>11.6f} {:>11.6f} {:>11.6f} {:>11.6f} {:>11.3f}  {}\n", c.name, c.num_ranks,
                       c.compute_busy_s, c.exposed_comm_s, c.bubble_s, c.optimizer_s, c.peak_memory_bytes / 1e9, memory);
  }
  return out;
}

}  // namespace symtensor::sim
