#include "hardware/cluster_loss.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "hardware/names.h"

namespace symtensor::hardware {

int node_count(const Cluster& cluster) {
  if (cluster.mixed()) {
    int nodes = 0;
    for (const DeviceGroup& g : cluster.groups) nodes += g.nodes;
    return nodes;
  }
  return cluster.levels.size() < 2 ? 1 : cluster.levels.back().size;
}

int group_losing_nodes(const Cluster& cluster) {
  int most = -1;
  for (int g = 0; g < static_cast<int>(cluster.groups.size()); ++g)
    if (most < 0 || cluster.groups[g].nodes > cluster.groups[most].nodes) most = g;
  return most;
}

Cluster without_nodes(const Cluster& cluster, int lost, const std::string& group) {
  if (lost < 0) throw std::runtime_error(fmt::format("{} nodes: cannot lose a negative number of nodes", lost));
  if (!cluster.mixed() && !group.empty())
    throw std::runtime_error(fmt::format("cluster '{}' is not a mixed fleet: lose 'node', not a node of '{}'", cluster.name, group));
  if (lost == 0) return cluster;
  if (!cluster.mixed()) {
    const int nodes = node_count(cluster);
    if (lost >= nodes)
      throw std::runtime_error(fmt::format("cluster '{}' has {} node{}; at most {} can be lost (one must remain)", cluster.name,
                                           nodes, nodes == 1 ? "" : "s", nodes - 1));
    return scale_cluster(cluster, nodes - lost, std::nullopt);
  }
  int from = group_losing_nodes(cluster);
  if (!group.empty()) {
    std::vector<std::string> profiles;
    for (const DeviceGroup& g : cluster.groups) profiles.push_back(g.profile);
    const std::string named = name_in_any_case(group, profiles);
    from = -1;
    for (int g = 0; g < static_cast<int>(profiles.size()); ++g)
      if (profiles[g] == named) from = g;
    if (from < 0) {
      std::string names;
      for (const std::string& p : profiles) names += (names.empty() ? "" : ", ") + p;
      throw std::runtime_error(fmt::format("fleet '{}' has no group '{}' (its groups: {})", cluster.name, group, names));
    }
  }
  const DeviceGroup& losing = cluster.groups[from];
  if (lost > losing.nodes || (lost == losing.nodes && cluster.groups.size() == 1))
    throw std::runtime_error(fmt::format("group '{}' of fleet '{}' has {} node{}; {} cannot be lost from it", losing.profile,
                                         cluster.name, losing.nodes, losing.nodes == 1 ? "" : "s", lost));
  // The groups kept (in their order), each with its nodes left.
  std::vector<int> kept;
  std::vector<Cluster> parts;
  std::string name;
  for (int g = 0; g < static_cast<int>(cluster.groups.size()); ++g) {
    const int nodes = cluster.groups[g].nodes - (g == from ? lost : 0);
    if (nodes == 0) continue;
    Cluster part = scale_cluster(group_cluster(cluster, g), nodes, std::nullopt);
    part.name = fmt::format("{}x{}", cluster.groups[g].profile, nodes);
    kept.push_back(g);
    parts.push_back(std::move(part));
  }
  if (parts.size() == 1) return parts.front();
  std::vector<GroupLink> links;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    name += (name.empty() ? "" : "+") + parts[i].name;
    for (std::size_t j = i + 1; j < kept.size(); ++j)
      if (const GroupLink* link = cluster.link_between(kept[i], kept[j]); link && link->stated) {
        GroupLink k = *link;
        k.a = static_cast<int>(i), k.b = static_cast<int>(j);
        links.push_back(k);
      }
  }
  for (std::size_t i = 0; i < kept.size(); ++i) parts[i].name = cluster.groups[kept[i]].profile;  // the group keeps its profile's name
  Cluster left = make_fleet(name, parts, links);
  left.source = cluster.source;
  left.stack = cluster.stack;
  return left;
}

}  // namespace symtensor::hardware
