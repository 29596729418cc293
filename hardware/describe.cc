#include "hardware/describe.h"

#include <fmt/format.h>

#include "hardware/collectives.h"
#include "hardware/device_mesh.h"

namespace symtensor::hardware {
namespace {

std::string seconds_text(double s) {
  if (s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:g} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:g} MB", b / 1e6);
  return fmt::format("{:g} KB", b / 1e3);
}

std::string collective_line(const Cluster& cluster, const GroupShape& group, const std::string& where, double bytes) {
  CollectiveCost cost = collective_time(cluster, Collective::all_reduce, group, bytes);
  double busbw = bytes / cost.seconds * bus_bandwidth_factor(Collective::all_reduce, group.size());
  return fmt::format("  all-reduce {:>6} over {:<22} {:>9} ({}), bus bandwidth {:.4g} GB/s\n", bytes_text(bytes),
                     where, seconds_text(cost.seconds), to_string(cost.algorithm), busbw / 1e9);
}

}  // namespace

std::string describe_cluster(const Cluster& cluster) {
  const Device& d = cluster.device;
  std::string out = fmt::format("{}: {}\n  profile: {}\n", cluster.name, cluster.description, cluster.source);
  std::string shape;
  for (auto it = cluster.levels.rbegin(); it != cluster.levels.rend(); ++it) {
    shape += fmt::format("{}{} {}", shape.empty() ? "" : " x ", it->size, it->name);
  }
  out += fmt::format("  devices: {} ({})\n", cluster.num_devices(), shape);

  out += fmt::format("device {}\n  dense peak:", d.name);
  std::string separator = " ";
  for (const auto& [precision, flops] : d.peak_flops) {
    out += fmt::format("{}{} {:g} TFLOP/s", separator, to_string(precision), flops / 1e12);
    separator = ", ";
  }
  out += fmt::format("\n  memory {:g} GB ({:g} GB reserved for the CUDA context, NCCL and the allocator), memory bandwidth "
                     "{:g} GB/s, kernel launch {:g} us\n",
                     d.memory_bytes / 1e9, d.memory_reserve_bytes / 1e9, d.hbm_bandwidth / 1e9, d.kernel_launch_s * 1e6);
  out += "  efficiency (achieved/peak) by op size:";
  separator = " ";
  for (const EfficiencyPoint& p : d.efficiency) {
    out += fmt::format("{}>={:g} GFLOP {:g}", separator, p.min_flops / 1e9, p.efficiency);
    separator = ", ";
  }
  out += "\n";
  if (!d.attention_efficiency.empty()) {
    out += fmt::format("  fused attention ({}), forward/backward by head dim and sequence:", d.attention_kernel);
    separator = " ";
    for (const AttentionEfficiencyPoint& p : d.attention_efficiency) {
      out += fmt::format("{}d{} s>={:g} {:g}/{:g}", separator, p.head_dim, p.min_seq, p.forward, p.backward);
      separator = ", ";
    }
    out += "\n";
  }

  out += "topology (innermost first; bandwidth per GPU per direction)\n";
  for (const TopologyLevel& level : cluster.levels) {
    out += fmt::format("  {:<8} size {:<5} {:>8g} GB/s  latency {:g} us  {:<8}  {}\n", level.name, level.size,
                       level.bandwidth / 1e9, level.latency_s * 1e6, to_string(level.kind), level.link);
  }

  const double n = cluster.num_devices();
  out += "totals\n";
  for (const auto& [precision, flops] : d.peak_flops) {
    out += fmt::format("  peak {}: {:.4g} PFLOP/s\n", to_string(precision), flops * n / 1e15);
  }
  out += fmt::format("  memory: {:g} GB\n", d.memory_bytes * n / 1e9);
  if (cluster.power_w) out += fmt::format("  power: {:g} kW ({:g} W per GPU)\n", *cluster.power_w * n / 1e3, *cluster.power_w);
  if (cluster.price_per_gpu_hour) {
    out += fmt::format("  price: {:.2f} USD/hour ({:.2f} USD per GPU-hour)\n", *cluster.price_per_gpu_hour * n,
                       *cluster.price_per_gpu_hour);
  }

  out += "collectives (alpha-beta model, cheapest algorithm)\n";
  GroupShape node_group{std::vector<int>(cluster.levels.size(), 1)};
  node_group.ranks_per_level[0] = cluster.levels[0].size;
  GroupShape all_group;
  for (const TopologyLevel& level : cluster.levels) all_group.ranks_per_level.push_back(level.size);
  const std::string node_text = fmt::format("one node ({} GPUs)", cluster.levels[0].size);
  const std::string all_text = fmt::format("all {} GPUs", cluster.num_devices());
  for (double bytes : {1e6, 1e9}) {
    if (node_group.size() > 1) out += collective_line(cluster, node_group, node_text, bytes);
    if (all_group.size() > node_group.size()) out += collective_line(cluster, all_group, all_text, bytes);
  }
  return out;
}

std::string describe_profiles() {
  std::string out;
  for (const std::string& name : list_profiles()) {
    Cluster c = load_cluster(name);
    out += fmt::format("{:<12} {:>5} x {:<16} {}\n", name, c.num_devices(), c.device.name, c.description);
  }
  return out;
}

}  // namespace symtensor::hardware
