#include "hardware/cluster.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::hardware {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
    case Precision::fp4: return "fp4";
    case Precision::mxfp8: return "mxfp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view text) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8, Precision::fp4,
                      Precision::mxfp8}) {
    if (text == to_string(p)) return p;
  }
  return std::nullopt;
}

bool is_low_precision(Precision p) { return p == Precision::fp8 || p == Precision::mxfp8 || p == Precision::fp4; }

Precision peak_precision(Precision p) { return p == Precision::mxfp8 ? Precision::fp8 : p; }

std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::switch_fabric: return "switch";
    case LinkKind::ring: return "ring";
    case LinkKind::fat_tree: return "fat_tree";
    case LinkKind::mesh: return "mesh";
  }
  return "?";
}

int TopologyLevel::mesh_links() const { return kind == LinkKind::mesh && size > 1 ? size - 1 : 0; }

double TopologyLevel::group_bandwidth(int ranks) const {
  const int links = mesh_links();
  if (links == 0) return bandwidth;
  return bandwidth * std::clamp(ranks - 1, 1, links) / links;
}

double TopologyLevel::peer_bandwidth() const { return group_bandwidth(2); }

double Device::peak(Precision p) const {
  auto it = peak_flops.find(peak_precision(p));
  if (it == peak_flops.end()) {
    throw std::runtime_error(fmt::format("device '{}' has no {} peak in its profile", name, to_string(p)));
  }
  return it->second;
}

double Device::roofline_seconds(Precision p, double flops, double bytes, double efficiency) const {
  if (flops <= 0 && bytes <= 0) return 0;
  const double math = flops > 0 ? flops / (peak(p) * efficiency) : 0;
  const double memory = bytes > 0 ? bytes / hbm_bandwidth : 0;
  return std::max(math, memory) + kernel_launch_s;
}

double Device::kernel_seconds(Precision p, double flops, double bytes) const {
  const double low_precision =
      is_low_precision(p) ? low_precision_gemm_factor * (p == Precision::fp4 ? fp4_gemm_factor : 1) : 1;
  return roofline_seconds(p, flops, bytes, flops > 0 ? std::min(1.0, efficiency_for(flops) * low_precision) : 1);
}

std::optional<double> Device::attention_efficiency_for(double head_dim, double seq, bool backward) const {
  if (attention_efficiency.empty()) return std::nullopt;
  int group = attention_efficiency.front().head_dim;
  for (const AttentionEfficiencyPoint& p : attention_efficiency)
    if (p.head_dim <= head_dim) group = p.head_dim;
  std::optional<double> result;
  for (const AttentionEfficiencyPoint& p : attention_efficiency) {
    if (p.head_dim != group) continue;
    if (!result || p.min_seq <= seq) result = backward ? p.backward : p.forward;
  }
  return result;
}

double Device::attention_seconds(Precision p, double flops, double bytes, double head_dim, double seq,
                                 bool backward) const {
  const std::optional<double> e = attention_efficiency_for(head_dim, seq, backward);
  return e ? roofline_seconds(p, flops, bytes, *e) : kernel_seconds(p, flops, bytes);
}

double Device::efficiency_for(double flops) const {
  if (efficiency.empty()) {
    throw std::runtime_error(fmt::format("device '{}' has no efficiency curve", name));
  }
  double result = efficiency.front().efficiency;
  for (const EfficiencyPoint& point : efficiency) {
    if (flops < point.min_flops) break;
    result = point.efficiency;
  }
  return result;
}

int Cluster::num_devices() const {
  int n = 1;
  for (const TopologyLevel& level : levels) n *= level.size;
  return n;
}

int Cluster::devices_per_node() const { return levels.empty() ? 1 : levels.front().size; }

namespace {

// A mesh level resized keeps the speed of its links (one per pair of GPUs), so a GPU's egress
// toward the other members scales with their count. A mesh of one keeps one link's
// bandwidth, so that it can grow back.
void resize_level(TopologyLevel& level, int size) {
  if (level.kind == LinkKind::mesh) {
    const double link = level.size > 1 ? level.bandwidth / (level.size - 1) : level.bandwidth;
    level.bandwidth = size > 1 ? link * (size - 1) : link;
  }
  level.size = size;
}

}  // namespace

Cluster scale_cluster(Cluster cluster, std::optional<int> nodes, std::optional<int> gpus) {
  if (cluster.levels.empty()) throw std::runtime_error(fmt::format("cluster '{}' has no topology levels", cluster.name));
  if (nodes) {
    if (*nodes < 1) throw std::runtime_error(fmt::format("--nodes {}: must be at least 1", *nodes));
    if (cluster.levels.size() < 2) {
      throw std::runtime_error(fmt::format("--nodes: cluster '{}' has a single topology level (no inter-node level)",
                                           cluster.name));
    }
    resize_level(cluster.levels.back(), *nodes);
  }
  if (gpus) {
    int per_node = cluster.levels.front().size;
    if (*gpus < 1 || *gpus > per_node) {
      throw std::runtime_error(fmt::format("--gpus {}: must be between 1 and the {} GPUs of a '{}' node", *gpus,
                                           per_node, cluster.name));
    }
    resize_level(cluster.levels.front(), *gpus);
    if (!nodes) {
      for (std::size_t l = 1; l < cluster.levels.size(); ++l) resize_level(cluster.levels[l], 1);
    }
  }
  return cluster;
}

}  // namespace symtensor::hardware
