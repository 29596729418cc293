#pragma once
// What a simulation reports.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace symtensor::sim {

struct MemoryPoint {
  double time_s = 0;
  double bytes = 0;  // static + live allocations right after the event
  std::string tag;   // the alloc/free that changed it ("static" for the first point)
};

// One simulated rank's task times, for the trace.
struct TraceSlice {
  int stream = 0;
  int task = 0;  // index into the rank class's tasks
  double start_s = 0;
  double end_s = 0;
};

struct TraceProcess {
  std::string name;  // rank class name, plus " rank N" in full mode
  int rank_class = 0;
  std::vector<std::string> streams;
  std::vector<TraceSlice> slices;
  std::vector<MemoryPoint> memory;
};

// Per rank class. In full mode every quantity is the maximum over the class's ranks and
// the memory timeline is the one of the rank with the highest peak.
struct ClassResult {
  std::string name;
  int num_ranks = 0;
  std::vector<int> device_groups;  // the mixed fleet's groups its ranks lie in; empty for one device type
  double finish_s = 0;          // when its last task ended
  double compute_busy_s = 0;    // compute and optimizer tasks
  double optimizer_s = 0;
  double comm_busy_s = 0;       // union of collective intervals
  // Per collective kind ("all_reduce", "all_to_all", ...): union of its tasks' intervals,
  // overlapped with compute or not (the MoE token exchange is the all-to-all).
  std::map<std::string, double> collective_busy_s;
  double exposed_comm_s = 0;    // collective time not overlapped by compute
  double bubble_s = 0;          // step time - compute busy - exposed comm: idle, not explained by collectives
  double static_memory_bytes = 0;
  double peak_memory_bytes = 0;
  double memory_capacity_bytes = 0;  // what its devices leave a plan (the least of its groups')
  bool out_of_memory = false;
  double memory_overage_bytes = 0;  // peak - device memory when out of memory
  std::vector<MemoryPoint> memory_timeline;
};

struct SimResult {
  bool full_mode = false;
  double step_time_s = 0;
  double device_memory_bytes = 0;
  std::vector<ClassResult> classes;
  std::vector<TraceProcess> trace;  // empty unless SimOptions::record_trace
  std::uint64_t events = 0;
  int simulated_ranks = 0;
};

}  // namespace symtensor::sim
