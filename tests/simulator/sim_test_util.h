#pragma once
// Hand-made clusters with round numbers, so expected times are easy arithmetic.
#include "hardware/cluster.h"
#include "simulator/program/program.h"

namespace symtensor::sim::testing {

// 8 GPUs per node, `nodes` nodes. bf16 peak 100 TFLOP/s, efficiency 0.5 below 1 GFLOP and
// 0.8 from 1 GFLOP, HBM 2 TB/s, launch 5 µs, 80 GB. NVSwitch 100 GB/s, 2 µs; NIC 25 GB/s, 10 µs.
inline hardware::Cluster test_cluster(int nodes = 1, double nvswitch_latency = 2e-6, double nic_latency = 10e-6) {
  hardware::Cluster c;
  c.name = "test";
  c.device.name = "testgpu";
  c.device.peak_flops[hardware::Precision::bf16] = 100e12;
  c.device.memory_bytes = 80e9;
  c.device.hbm_bandwidth = 2e12;
  c.device.efficiency = {{0, 0.5}, {1e9, 0.8}};
  c.device.kernel_launch_s = 5e-6;
  auto level = [](const char* name, int size, double bandwidth, double latency) {
    hardware::TopologyLevel l;
    l.name = name;
    l.size = size;
    l.bandwidth = bandwidth;
    l.latency_s = latency;
    return l;
  };
  c.levels.push_back(level("nvswitch", 8, 100e9, nvswitch_latency));
  c.levels.push_back(level("ib", nodes, 25e9, nic_latency));
  return c;
}

inline RankClass make_class(std::string name, std::vector<int> ranks, std::vector<Task> tasks) {
  RankClass rc;
  rc.name = std::move(name);
  rc.ranks = std::move(ranks);
  rc.tasks = std::move(tasks);
  return rc;
}

inline std::vector<int> iota_ranks(int n, int first = 0) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(first + i);
  return r;
}

}  // namespace symtensor::sim::testing
