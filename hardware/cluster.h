#pragma once
// A cluster: one kind of accelerator and a hierarchy of interconnect levels.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace symtensor::hardware {

enum class Precision { fp32, tf32, fp16, bf16, fp8 };
std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view text);

// Achieved/peak for operations of at least `min_flops` FLOPs (a step function).
struct EfficiencyPoint {
  double min_flops = 0;
  double efficiency = 1;
};

struct Device {
  std::string name;
  std::map<Precision, double> peak_flops;  // FLOP/s, dense
  double memory_bytes = 0;
  double hbm_bandwidth = 0;                // bytes/s
  std::vector<EfficiencyPoint> efficiency; // ascending min_flops
  double kernel_launch_s = 0;

  double peak(Precision p) const;               // throws if the profile lacks p
  double efficiency_for(double flops) const;    // step lookup in `efficiency`
};

enum class LinkKind { switch_fabric, ring, fat_tree };
std::string_view to_string(LinkKind k);

// One level of the interconnect, innermost first (NVSwitch inside a node, then the
// inter-node fabric, ...). `size` is the fan-out at this level: GPUs per node for
// level 0, nodes per pod (or in all) for level 1.
struct TopologyLevel {
  std::string name;
  int size = 1;
  double bandwidth = 0;  // bytes/s per GPU per direction
  double latency_s = 0;
  LinkKind kind = LinkKind::switch_fabric;
};

struct Cluster {
  std::string name;
  std::string source;  // file it was loaded from
  Device device;
  std::vector<TopologyLevel> levels;  // innermost first
  std::optional<double> price_per_gpu_hour;  // USD
  std::optional<double> power_w;             // per GPU

  int num_devices() const;
  int devices_per_node() const;  // size of level 0
};

}  // namespace symtensor::hardware
