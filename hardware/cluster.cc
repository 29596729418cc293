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

double Device::kernel_seconds(Precision p, double flops, double bytes, double kernel_factor) const {
  const double low_precision =
      is_low_precision(p) ? low_precision_gemm_factor * (p == Precision::fp4 ? fp4_gemm_factor : 1) : 1;
  return roofline_seconds(p, flops, bytes,
                          flops > 0 ? std::min(1.0, efficiency_for(flops) * low_precision * kernel_factor) : 1);
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

double device_pace(const Device& device) {
  auto peak = device.peak_flops.find(Precision::bf16);
  if (peak == device.peak_flops.end()) peak = device.peak_flops.find(Precision::fp16);
  if (peak == device.peak_flops.end()) throw std::runtime_error(fmt::format("device '{}' has no 16-bit peak", device.name));
  return peak->second * (device.efficiency.empty() ? 1.0 : device.efficiency.back().efficiency);
}

int Cluster::group_of_rank(int rank) const {
  if (rank < 0 || rank >= num_devices())
    throw std::runtime_error(fmt::format("rank {} out of range (cluster '{}' has {} devices)", rank, name, num_devices()));
  for (std::size_t g = groups.size(); g-- > 0;)
    if (rank >= groups[g].first_rank) return static_cast<int>(g);
  return 0;
}

const Device& Cluster::device_of_rank(int rank) const {
  return groups.empty() ? device : groups[group_of_rank(rank)].device;
}

double Cluster::level_bandwidth(int rank, int level) const {
  if (groups.empty()) return levels.at(level).bandwidth;
  return groups[group_of_rank(rank)].levels.at(level).bandwidth;
}

const GroupLink* Cluster::link_between(int a, int b) const {
  for (const GroupLink& link : group_links)
    if ((link.a == a && link.b == b) || (link.a == b && link.b == a)) return &link;
  return nullptr;
}

double total_peak(const Cluster& cluster, Precision p) {
  if (!cluster.mixed()) return cluster.num_devices() * cluster.device.peak(p);
  double sum = 0;
  for (const DeviceGroup& g : cluster.groups) sum += g.devices * g.device.peak(p);
  return sum;
}

Cluster group_cluster(const Cluster& fleet, int g) {
  if (!fleet.mixed()) throw std::runtime_error(fmt::format("cluster '{}' is not a mixed fleet", fleet.name));
  if (g < 0 || g >= static_cast<int>(fleet.groups.size()))
    throw std::runtime_error(fmt::format("cluster '{}' has no group {}", fleet.name, g));
  const DeviceGroup& group = fleet.groups[g];
  Cluster c;
  c.name = fmt::format("{}x{}", group.profile, group.nodes);
  c.source = fleet.source;
  c.description = fmt::format("group {} of {}", group.profile, fleet.name);
  c.device = group.device;
  c.levels = group.levels;
  c.price_per_gpu_hour = group.price_per_gpu_hour;
  c.power_w = group.power_w;
  c.stack = fleet.stack;
  return c;
}

Cluster fleet_on_group_device(const Cluster& fleet, int g) {
  if (g < 0 || g >= static_cast<int>(fleet.groups.size()))
    throw std::runtime_error(fmt::format("cluster '{}' has no group {}", fleet.name, g));
  Cluster view = fleet;
  view.device = fleet.groups[g].device;
  return view;
}

Cluster sub_fleet(const Cluster& fleet, const std::vector<int>& groups) {
  if (groups.empty()) throw std::runtime_error(fmt::format("fleet '{}': a part of it with no group", fleet.name));
  if (groups.size() == 1) return group_cluster(fleet, groups.front());
  std::vector<Cluster> parts;
  std::string name;
  for (int g : groups) {
    parts.push_back(group_cluster(fleet, g));
    name += (name.empty() ? "" : "+") + parts.back().name;
    parts.back().name = fleet.groups[g].profile;  // the group keeps its profile's name
  }
  std::vector<GroupLink> links;
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (std::size_t j = i + 1; j < groups.size(); ++j)
      if (const GroupLink* link = fleet.link_between(groups[i], groups[j]); link && link->stated) {
        GroupLink kept = *link;
        kept.a = static_cast<int>(i), kept.b = static_cast<int>(j);
        links.push_back(kept);
      }
  Cluster sub = make_fleet(name, parts, links);
  sub.source = fleet.source;
  sub.stack = fleet.stack;
  return sub;
}

std::vector<std::vector<int>> fleet_parts(const Cluster& fleet, int fewest) {
  std::vector<std::vector<int>> parts;
  const int n = static_cast<int>(fleet.groups.size());
  for (int mask = 1; n > 1 && mask < (1 << n) - 1; ++mask) {
    std::vector<int> some;
    for (int g = 0; g < n; ++g)
      if (mask & (1 << g)) some.push_back(g);
    if (static_cast<int>(some.size()) >= fewest) parts.push_back(std::move(some));
  }
  return parts;
}

std::optional<Cluster> fleet_part_named(const Cluster& fleet, const std::string& name) {
  if (!fleet.mixed() || name == fleet.name) return std::nullopt;
  for (const std::vector<int>& some : fleet_parts(fleet, 1)) {
    Cluster part = sub_fleet(fleet, some);
    if (part.name == name) return part;
  }
  return std::nullopt;
}

Cluster make_fleet(const std::string& name, const std::vector<Cluster>& parts, const std::vector<GroupLink>& links) {
  if (parts.size() < 2) throw std::runtime_error(fmt::format("fleet '{}': needs at least two groups", name));
  Cluster fleet;
  fleet.name = name;
  int rank = 0;
  for (std::size_t g = 0; g < parts.size(); ++g) {
    const Cluster& part = parts[g];
    if (part.mixed()) throw std::runtime_error(fmt::format("fleet '{}': group {} '{}' is itself a fleet", name, g + 1, part.name));
    if (part.levels.size() != 2)
      throw std::runtime_error(fmt::format("fleet '{}': group {} '{}' has {} topology levels; a fleet joins profiles of two "
                                           "(GPUs of a node, nodes)", name, g + 1, part.name, part.levels.size()));
    if (part.devices_per_node() != parts.front().devices_per_node())
      throw std::runtime_error(fmt::format("fleet '{}': group {} '{}' has {} GPUs per node, group 1 '{}' has {}; a fleet's "
                                           "nodes must hold as many GPUs", name, g + 1, part.name, part.devices_per_node(),
                                           parts.front().name, parts.front().devices_per_node()));
    for (std::size_t h = 0; h < g; ++h)
      if (parts[h].name == part.name)
        throw std::runtime_error(fmt::format("fleet '{}': profile '{}' is given twice (groups {} and {}); give it once with "
                                             "all its nodes", name, part.name, h + 1, g + 1));
    DeviceGroup group;
    group.profile = part.name;
    group.device = part.device;
    group.levels = part.levels;
    group.nodes = part.levels.back().size;
    group.first_rank = rank;
    group.devices = part.num_devices();
    group.price_per_gpu_hour = part.price_per_gpu_hour;
    group.power_w = part.power_w;
    rank += group.devices;
    fleet.groups.push_back(group);
  }
  const int n = static_cast<int>(parts.size());
  for (const GroupLink& link : links) {
    if (link.a < 0 || link.b < 0 || link.a >= n || link.b >= n || link.a == link.b)
      throw std::runtime_error(fmt::format("fleet '{}': a link joins groups {} and {}", name, link.a + 1, link.b + 1));
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      GroupLink link;
      auto stated = std::find_if(links.begin(), links.end(), [&](const GroupLink& l) {
        return (l.a == a && l.b == b) || (l.a == b && l.b == a);
      });
      if (stated != links.end()) {
        link = *stated;
        link.stated = true;
      } else {
        const TopologyLevel& x = fleet.groups[a].levels.back();
        const TopologyLevel& y = fleet.groups[b].levels.back();
        link.bandwidth = std::min(x.bandwidth, y.bandwidth);
        link.latency_s = std::max(x.latency_s, y.latency_s);
      }
      link.a = a, link.b = b;
      fleet.group_links.push_back(link);
    }
  }
  // The uniform view: the slowest device, the least memory, the slowest links.
  std::size_t slowest = 0;
  for (std::size_t g = 1; g < parts.size(); ++g)
    if (device_pace(parts[g].device) < device_pace(parts[slowest].device)) slowest = g;
  fleet.device = parts[slowest].device;
  for (const Cluster& part : parts) {
    if (part.device.usable_memory() - part.device.memory_reserve_bytes <
        fleet.device.usable_memory() - fleet.device.memory_reserve_bytes) {
      fleet.device.memory_bytes = part.device.memory_bytes;
      fleet.device.memory_reserve_bytes = part.device.memory_reserve_bytes;
    }
  }
  fleet.levels = parts[slowest].levels;
  fleet.levels.back().size = rank / fleet.devices_per_node();
  for (const Cluster& part : parts) {
    for (std::size_t l = 0; l < 2; ++l) {
      fleet.levels[l].bandwidth = std::min(fleet.levels[l].bandwidth, part.levels[l].bandwidth);
      fleet.levels[l].latency_s = std::max(fleet.levels[l].latency_s, part.levels[l].latency_s);
    }
  }
  for (const GroupLink& link : fleet.group_links) {
    fleet.levels.back().bandwidth = std::min(fleet.levels.back().bandwidth, link.bandwidth);
    fleet.levels.back().latency_s = std::max(fleet.levels.back().latency_s, link.latency_s);
  }
  std::string kinds;
  double price = 0;
  bool priced = true;
  for (const DeviceGroup& g : fleet.groups) {
    kinds += fmt::format("{}{} x{}", kinds.empty() ? "" : " + ", g.device.name, g.devices);
    if (g.price_per_gpu_hour) price += *g.price_per_gpu_hour * g.devices;
    else priced = false;
  }
  fleet.description = "mixed fleet: " + kinds;
  if (priced) fleet.price_per_gpu_hour = price / rank;  // the fleet's mean per GPU
  return fleet;
}

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
  if (cluster.mixed() && (nodes || gpus))
    throw std::runtime_error(fmt::format("--{}: cluster '{}' is a mixed fleet; give each group's nodes in its name "
                                         "(dgx-h100x2+dgx-a100x4)", nodes ? "nodes" : "gpus", cluster.name));
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
