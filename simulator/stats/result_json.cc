#include "simulator/stats/result_json.h"

namespace symtensor::sim {

using nlohmann::json;

json result_to_json(const SimResult& r) {
  json classes = json::array();
  for (const auto& c : r.classes) {
    json timeline = json::array();
    for (const auto& m : c.memory_timeline) timeline.push_back({{"time_s", m.time_s}, {"bytes", m.bytes}, {"tag", m.tag}});
    classes.push_back({{"name", c.name},
                       {"ranks", c.num_ranks},
                       {"finish_s", c.finish_s},
                       {"compute_busy_s", c.compute_busy_s},
                       {"optimizer_s", c.optimizer_s},
                       {"comm_busy_s", c.comm_busy_s},
                       {"exposed_comm_s", c.exposed_comm_s},
                       {"bubble_s", c.bubble_s},
                       {"static_memory_bytes", c.static_memory_bytes},
                       {"peak_memory_bytes", c.peak_memory_bytes},
                       {"memory_capacity_bytes", c.memory_capacity_bytes},
                       {"out_of_memory", c.out_of_memory},
                       {"memory_overage_bytes", c.memory_overage_bytes},
                       {"memory_timeline", timeline}});
  }
  return json{{"mode", r.full_mode ? "full" : "symmetric"},
              {"step_time_s", r.step_time_s},
              {"device_memory_bytes", r.device_memory_bytes},
              {"simulated_ranks", r.simulated_ranks},
              {"events", r.events},
              {"rank_classes", classes}};
}

}  // namespace symtensor::sim
