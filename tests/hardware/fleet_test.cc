// Mixed fleets (#32): profiles joined by '+', a fleet YAML with its links, the uniform view.
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "hardware/cluster.h"
#include "hardware/stack.h"
#include "tests/temp_path.h"

namespace symtensor::hardware {
namespace {

std::string fleet_error_of(const std::string& spec) {
  try {
    load_cluster(spec);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Fleet, TwoProfilesJoinedByPlus) {
  const Cluster f = load_cluster("dgx-h100x2+dgx-a100x4");
  ASSERT_TRUE(f.mixed());
  ASSERT_EQ(f.groups.size(), 2u);
  EXPECT_EQ(f.groups[0].profile, "dgx-h100");
  EXPECT_EQ(f.groups[0].nodes, 2);
  EXPECT_EQ(f.groups[0].devices, 16);
  EXPECT_EQ(f.groups[1].first_rank, 16);
  EXPECT_EQ(f.groups[1].devices, 32);
  EXPECT_EQ(f.num_devices(), 48);
  EXPECT_EQ(f.levels.back().size, 6);
  EXPECT_EQ(f.devices_per_node(), 8);
  // The uniform view: the slowest device (A100: 312 x 0.82 < 989.5 x 0.67 TFLOP/s), the
  // slower NIC (200 Gb/s per GPU: 25 GB/s), the slower NVSwitch (300 GB/s).
  EXPECT_EQ(f.device.name, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(f.levels.back().bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(f.levels.front().bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(device_pace(f.groups[0].device), 989.5e12 * 0.67);
  EXPECT_DOUBLE_EQ(device_pace(f.groups[1].device), 312e12 * 0.82);
  // Each rank knows its device and its own links.
  EXPECT_EQ(f.group_of_rank(15), 0);
  EXPECT_EQ(f.group_of_rank(16), 1);
  EXPECT_EQ(f.device_of_rank(3).name, "H100-SXM5-80GB");
  EXPECT_EQ(f.device_of_rank(47).name, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(f.level_bandwidth(0, 1), 50e9);
  EXPECT_DOUBLE_EQ(f.level_bandwidth(20, 1), 25e9);
  // The link between the groups: the slower NIC of the pair, the larger latency.
  const GroupLink* link = f.link_between(1, 0);
  ASSERT_NE(link, nullptr);
  EXPECT_DOUBLE_EQ(link->bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(link->latency_s, 5e-6);
  EXPECT_FALSE(link->stated);
  EXPECT_DOUBLE_EQ(total_peak(f, Precision::bf16), 16 * 989.5e12 + 32 * 312e12);
  // Mean price per GPU: (16 x 4 + 32 x 2) / 48.
  ASSERT_TRUE(f.price_per_gpu_hour);
  EXPECT_DOUBLE_EQ(*f.price_per_gpu_hour, (16 * 4.0 + 32 * 2.0) / 48);
  const Cluster h100 = group_cluster(f, 0);
  EXPECT_EQ(h100.name, "dgx-h100x2");
  EXPECT_EQ(h100.num_devices(), 16);
  EXPECT_FALSE(h100.mixed());
}

TEST(Fleet, SomeOfItsGroupsMakeAFleetOfTheirOwn) {
  const Cluster f = load_cluster("dgx-h100x2+dgx-a100x2+pcie-l4x1");
  const Cluster sub = sub_fleet(f, {0, 2});
  EXPECT_EQ(sub.name, "dgx-h100x2+pcie-l4x1");
  ASSERT_EQ(sub.groups.size(), 2u);
  EXPECT_EQ(sub.groups[1].profile, "pcie-l4");
  EXPECT_EQ(sub.groups[1].first_rank, 16);
  EXPECT_EQ(sub.num_devices(), 24);
  // L4's 100 GbE shared by 8 GPUs: 12.5 / 8 GB/s per GPU, the slower NIC of the pair.
  EXPECT_DOUBLE_EQ(sub.link_between(0, 1)->bandwidth, 1.5625e9);
  EXPECT_EQ(sub_fleet(f, {1}).name, "dgx-a100x2");
  EXPECT_EQ(load_cluster(sub.name).num_devices(), 24);
  // Its proper parts: the six of three groups, or the three of two or more.
  using Parts = std::vector<std::vector<int>>;
  EXPECT_EQ(fleet_parts(f, 1), (Parts{{0}, {1}, {0, 1}, {2}, {0, 2}, {1, 2}}));
  EXPECT_EQ(fleet_parts(f, 2), (Parts{{0, 1}, {0, 2}, {1, 2}}));
  EXPECT_TRUE(fleet_parts(load_cluster("dgx-h100x2+dgx-a100x2"), 2).empty());
  EXPECT_TRUE(fleet_parts(load_cluster("dgx-h100x2"), 1).empty());
  EXPECT_EQ(fleet_part_named(f, "dgx-a100x2+pcie-l4x1")->num_devices(), 16 + 8);
  // The fleet on one group's device: the fleet's mesh and links, the L4.
  const Cluster on_l4 = fleet_on_group_device(f, 2);
  EXPECT_EQ(on_l4.device.name, f.groups[2].device.name);
  EXPECT_EQ(on_l4.num_devices(), f.num_devices());
  EXPECT_EQ(on_l4.groups.size(), 3u);
  EXPECT_THROW(fleet_on_group_device(f, 3), std::runtime_error);
}

TEST(Fleet, StackAndHeadroomReachEveryGroup) {
  Software software;
  software.memory_headroom = 0.1;
  const Cluster f = with_software(load_cluster("dgx-h100x1+dgx-a100x1"), software);
  for (const DeviceGroup& g : f.groups) EXPECT_DOUBLE_EQ(g.device.memory_headroom, 0.1);
  EXPECT_DOUBLE_EQ(f.device.memory_headroom, 0.1);
}

TEST(Fleet, BadSpecsNameTheirPart) {
  EXPECT_NE(fleet_error_of("dgx-h100x2+").find("part 2 is empty"), std::string::npos) << fleet_error_of("dgx-h100x2+");
  const std::string unknown = fleet_error_of("dgx-h100x2+dgx-a10x4");
  EXPECT_NE(unknown.find("part 2 'dgx-a10x4'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("did you mean 'dgx-a100x4'"), std::string::npos) << unknown;
  const std::string per_node = fleet_error_of("dgx-h100x2+gb200-nvl72x1");
  EXPECT_NE(per_node.find("group 2 'gb200-nvl72' has 72 GPUs per node"), std::string::npos) << per_node;
  const std::string twice = fleet_error_of("dgx-h100x2+dgx-h100x1");
  EXPECT_NE(twice.find("'dgx-h100' is given twice"), std::string::npos) << twice;
  try {
    scale_cluster(load_cluster("dgx-h100x1+dgx-a100x1"), 3, std::nullopt);
    ADD_FAILURE() << "a fleet resized by --nodes";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--nodes: cluster 'dgx-h100x1+dgx-a100x1' is a mixed fleet"), std::string::npos)
        << e.what();
  }
}

TEST(Fleet, YamlStatesTheLinkBetweenGroups) {
  const std::string path = symtensor::testing::temp_path("fleet_link.yaml");
  {
    std::ofstream out(path);
    out << "name: lab\n"
           "groups:\n"
           "  - {profile: dgx-h100, nodes: 1}\n"
           "  - {profile: dgx-a100, nodes: 3}\n"
           "links:\n"
           "  - {between: [dgx-a100, dgx-h100], bandwidth_gb_per_s: 10, latency_us: 20}\n";
  }
  const Cluster f = load_cluster(path);
  ASSERT_TRUE(f.mixed());
  EXPECT_EQ(f.name, "lab");
  EXPECT_EQ(f.num_devices(), 32);
  const GroupLink* link = f.link_between(0, 1);
  ASSERT_NE(link, nullptr);
  EXPECT_TRUE(link->stated);
  EXPECT_DOUBLE_EQ(link->bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(link->latency_s, 20e-6);
  // The uniform view takes the slowest link of all.
  EXPECT_DOUBLE_EQ(f.levels.back().bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(f.levels.back().latency_s, 20e-6);

  std::ofstream(path) << "name: lab\n"
                         "groups:\n"
                         "  - {profile: dgx-h100, nodes: 1}\n"
                         "  - {profile: dgx-a100, nodes: 3}\n"
                         "links:\n"
                         "  - {between: [dgx-b200, dgx-h100], bandwidth_gb_per_s: 10, latency_us: 20}\n";
  try {
    load_cluster(path);
    ADD_FAILURE() << "a link naming no group";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'dgx-b200' names no group (groups: dgx-h100, dgx-a100)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(":6:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace symtensor::hardware
