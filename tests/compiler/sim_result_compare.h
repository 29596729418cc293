#pragma once
// Two simulations' results compared field by field, exact doubles (memory timelines and trace
// slices included): what the simulation paths that must agree (trusted and validated, lean
// and text programs) are checked with.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "simulator/engine/simulator.h"

namespace symtensor::testing {

inline void expect_same_memory(const std::vector<sim::MemoryPoint>& a, const std::vector<sim::MemoryPoint>& b,
                               const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_s, b[i].time_s) << what << " point " << i;
    EXPECT_EQ(a[i].bytes, b[i].bytes) << what << " point " << i;
    EXPECT_EQ(a[i].tag, b[i].tag) << what << " point " << i;
  }
}

inline void expect_identical_results(const sim::SimResult& a, const sim::SimResult& b, const std::string& what) {
  EXPECT_EQ(a.full_mode, b.full_mode) << what;
  EXPECT_EQ(a.step_time_s, b.step_time_s) << what;
  EXPECT_EQ(a.device_memory_bytes, b.device_memory_bytes) << what;
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.simulated_ranks, b.simulated_ranks) << what;
  ASSERT_EQ(a.classes.size(), b.classes.size()) << what;
  for (std::size_t c = 0; c < a.classes.size(); ++c) {
    const sim::ClassResult& x = a.classes[c];
    const sim::ClassResult& y = b.classes[c];
    const std::string at = what + " " + x.name;
    EXPECT_EQ(x.name, y.name) << at;
    EXPECT_EQ(x.num_ranks, y.num_ranks) << at;
    EXPECT_EQ(x.finish_s, y.finish_s) << at;
    EXPECT_EQ(x.compute_busy_s, y.compute_busy_s) << at;
    EXPECT_EQ(x.optimizer_s, y.optimizer_s) << at;
    EXPECT_EQ(x.comm_busy_s, y.comm_busy_s) << at;
    EXPECT_EQ(x.collective_busy_s, y.collective_busy_s) << at;
    EXPECT_EQ(x.exposed_comm_s, y.exposed_comm_s) << at;
    EXPECT_EQ(x.bubble_s, y.bubble_s) << at;
    EXPECT_EQ(x.static_memory_bytes, y.static_memory_bytes) << at;
    EXPECT_EQ(x.peak_memory_bytes, y.peak_memory_bytes) << at;
    EXPECT_EQ(x.memory_capacity_bytes, y.memory_capacity_bytes) << at;
    EXPECT_EQ(x.out_of_memory, y.out_of_memory) << at;
    EXPECT_EQ(x.memory_overage_bytes, y.memory_overage_bytes) << at;
    expect_same_memory(x.memory_timeline, y.memory_timeline, at);
  }
  ASSERT_EQ(a.trace.size(), b.trace.size()) << what;
  for (std::size_t p = 0; p < a.trace.size(); ++p) {
    const sim::TraceProcess& x = a.trace[p];
    const sim::TraceProcess& y = b.trace[p];
    EXPECT_EQ(x.name, y.name) << what;
    EXPECT_EQ(x.rank_class, y.rank_class) << what;
    EXPECT_EQ(x.streams, y.streams) << what;
    ASSERT_EQ(x.slices.size(), y.slices.size()) << what << " " << x.name;
    for (std::size_t i = 0; i < x.slices.size(); ++i) {
      EXPECT_EQ(x.slices[i].stream, y.slices[i].stream) << what << " " << x.name << " slice " << i;
      EXPECT_EQ(x.slices[i].task, y.slices[i].task) << what << " " << x.name << " slice " << i;
      EXPECT_EQ(x.slices[i].start_s, y.slices[i].start_s) << what << " " << x.name << " slice " << i;
      EXPECT_EQ(x.slices[i].end_s, y.slices[i].end_s) << what << " " << x.name << " slice " << i;
    }
    expect_same_memory(x.memory, y.memory, what + " trace " + x.name);
  }
}

}  // namespace symtensor::testing
