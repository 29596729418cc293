#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "hardware/cluster.h"
#include "tests/temp_path.h"

namespace symtensor::hardware {
namespace {

// Line numbers matter: the bad cases below check FILE:LINE:COL.
const std::string kValid =
    "name: test\n"                                                                         // 1
    "device:\n"                                                                            // 2
    "  name: X\n"                                                                          // 3
    "  peak_tflops: {bf16: 100, fp32: 25}\n"                                               // 4
    "  memory_gb: 10\n"                                                                    // 5
    "  hbm_bandwidth_gb_per_s: 1000\n"                                                     // 6
    "  kernel_launch_us: 3\n"                                                              // 7
    "  efficiency:\n"                                                                      // 8
    "    - {min_gflop: 0, efficiency: 0.5}\n"                                              // 9
    "    - {min_gflop: 10, efficiency: 0.9}\n"                                             // 10
    "topology:\n"                                                                          // 11
    "  - {name: gpu, size: 4, bandwidth_gb_per_s: 100, latency_us: 1, kind: switch}\n"     // 12
    "  - {name: node, size: 2, bandwidth_gb_per_s: 10, latency_us: 5, kind: fat_tree}\n";  // 13

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string error_of(const std::string& text) {
  try {
    parse_cluster(text, "t.yaml");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProfileLoader, ValidTextConvertsUnitsToSi) {
  Cluster c = parse_cluster(kValid, "t.yaml");
  EXPECT_EQ(c.name, "test");
  EXPECT_EQ(c.device.peak(Precision::bf16), 100e12);
  EXPECT_EQ(c.device.peak(Precision::fp32), 25e12);
  EXPECT_THROW(c.device.peak(Precision::fp8), std::runtime_error);
  EXPECT_EQ(c.device.memory_bytes, 10e9);
  EXPECT_EQ(c.device.hbm_bandwidth, 1000e9);
  EXPECT_DOUBLE_EQ(c.device.kernel_launch_s, 3e-6);
  ASSERT_EQ(c.levels.size(), 2u);
  EXPECT_EQ(c.levels[1].name, "node");
  EXPECT_EQ(c.levels[1].bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(c.levels[1].latency_s, 5e-6);
  EXPECT_EQ(c.levels[1].kind, LinkKind::fat_tree);
  EXPECT_EQ(c.num_devices(), 8);
  EXPECT_EQ(c.devices_per_node(), 4);
  EXPECT_FALSE(c.price_per_gpu_hour.has_value());
  EXPECT_EQ(c.device.memory_reserve_bytes, 0);  // none stated
  // Step lookup: below 10 GFLOP 0.5, from 10 GFLOP on 0.9.
  EXPECT_EQ(c.device.efficiency_for(1e9), 0.5);
  EXPECT_EQ(c.device.efficiency_for(10e9), 0.9);
  EXPECT_EQ(c.device.efficiency_for(1e15), 0.9);
}

TEST(ProfileLoader, MemoryReserveIsOptionalAndBelowTheMemory) {
  const Cluster c = parse_cluster(replaced(kValid, "  memory_gb: 10\n", "  memory_gb: 10\n  memory_reserve_gb: 1.5\n"), "t.yaml");
  EXPECT_EQ(c.device.memory_reserve_bytes, 1.5e9);
  EXPECT_EQ(error_of(replaced(kValid, "  memory_gb: 10\n", "  memory_gb: 10\n  memory_reserve_gb: 10\n")),
            "t.yaml:6:22: key 'device.memory_reserve_gb': must be less than memory_gb");
  EXPECT_EQ(error_of(replaced(kValid, "  memory_gb: 10\n", "  memory_gb: 10\n  memory_reserve_gb: -1\n")),
            "t.yaml:6:22: key 'device.memory_reserve_gb': must be >= 0, got -1");
}

TEST(ProfileLoader, MeshKindAndFp4Peak) {
  const Cluster c = parse_cluster(replaced(replaced(kValid, "kind: switch", "kind: mesh"), "fp32: 25", "fp4: 400"), "t.yaml");
  EXPECT_EQ(c.levels[0].kind, LinkKind::mesh);
  EXPECT_EQ(c.levels[0].bandwidth, 100e9);  // the GPU's egress over its 3 links
  EXPECT_EQ(c.levels[0].mesh_links(), 3);
  EXPECT_EQ(c.device.peak(Precision::fp4), 400e12);
  EXPECT_EQ(error_of(replaced(kValid, "fp32: 25", "fp2: 25")).find("key 'device.peak_tflops.fp2': unknown key (allowed: "
                                                                   "fp32, tf32, fp16, bf16, fp8, fp4)"),
            std::string("t.yaml:4:28: ").size());
}

TEST(ProfileLoader, ErrorsCarryFileLineColumnAndKey) {
  EXPECT_EQ(error_of(replaced(kValid, "memory_gb: 10", "memory_gb: lots")),
            "t.yaml:5:14: key 'device.memory_gb': expected a number, got 'lots'");
  EXPECT_EQ(error_of(kValid + "colour: red\n"),
            "t.yaml:14:1: key 'colour': unknown key (allowed: name, description, device, topology, "
            "price_per_gpu_hour_usd, power_w)");
  EXPECT_EQ(error_of(replaced(kValid, "  memory_gb: 10\n", "")),
            "t.yaml:3:3: key 'device.memory_gb': missing required field");
  EXPECT_EQ(error_of(replaced(kValid, "size: 4", "size: 0")), "t.yaml:12:23: key 'topology[0].size': must be >= 1, got 0");
}

struct BadCase {
  const char* what;
  std::string text;
  std::string expected;  // substring of the message
};

TEST(ProfileLoader, EveryBadCaseIsRejectedWithAClearMessage) {
  const std::vector<BadCase> cases = {
      {"unknown device key", replaced(kValid, "memory_gb: 10", "memory_gib: 10"), "key 'device.memory_gib': unknown key"},
      {"unknown level key", replaced(kValid, "kind: switch", "kind: switch, speed: 3"), "key 'topology[0].speed': unknown key"},
      {"unknown precision", replaced(kValid, "bf16: 100", "bf17: 100"), "key 'device.peak_tflops.bf17': unknown key"},
      {"duplicate key", replaced(kValid, "  memory_gb: 10\n", "  memory_gb: 10\n  memory_gb: 20\n"),
       "t.yaml:6:3: key 'device.memory_gb': duplicate key"},
      {"missing name", replaced(kValid, "name: test\n", ""), "key 'name': missing required field"},
      {"missing device", replaced(kValid, "device:", "devic:"), "key 'devic': unknown key"},
      {"missing topology", kValid.substr(0, kValid.find("topology:")), "key 'topology': missing required field"},
      {"missing bandwidth", replaced(kValid, "bandwidth_gb_per_s: 100, ", ""),
       "key 'topology[0].bandwidth_gb_per_s': missing required field"},
      {"missing efficiency", replaced(replaced(kValid, "  efficiency:\n", ""), "    - {min_gflop: 0, efficiency: 0.5}\n    - {min_gflop: 10, efficiency: 0.9}\n", ""),
       "key 'device.efficiency': missing required field"},
      {"wrong type: string for number", replaced(kValid, "latency_us: 5", "latency_us: slow"),
       "t.yaml:13:63: key 'topology[1].latency_us': expected a number, got 'slow'"},
      {"wrong type: list for number", replaced(kValid, "memory_gb: 10", "memory_gb: [10]"), "key 'device.memory_gb': expected a number"},
      {"wrong type: map for string", replaced(kValid, "name: test", "name: {a: 1}"), "key 'name': expected a string"},
      {"wrong type: scalar device", "name: test\ndevice: 3\ntopology: []\n", "key 'device': expected a mapping"},
      {"wrong type: topology map", kValid.substr(0, kValid.find("topology:")) + "topology: {a: 1}\n", "key 'topology': expected a non-empty list"},
      {"wrong type: efficiency entry scalar", replaced(kValid, "- {min_gflop: 10, efficiency: 0.9}", "- 0.9"),
       "key 'device.efficiency[1]': expected a mapping"},
      {"non-integer size", replaced(kValid, "size: 2", "size: 2.5"), "key 'topology[1].size': expected an integer, got '2.5'"},
      {"negative size", replaced(kValid, "size: 2", "size: -2"), "key 'topology[1].size': must be >= 1, got -2"},
      {"huge size", replaced(kValid, "size: 2", "size: 5000000"), "implausibly large"},
      {"too many devices", replaced(replaced(kValid, "size: 2", "size: 100000"), "size: 4", "size: 1000"), "more than 10 million"},
      {"zero memory", replaced(kValid, "memory_gb: 10", "memory_gb: 0"), "key 'device.memory_gb': must be > 0, got 0"},
      {"negative bandwidth", replaced(kValid, "bandwidth_gb_per_s: 10,", "bandwidth_gb_per_s: -10,"),
       "key 'topology[1].bandwidth_gb_per_s': must be > 0"},
      {"negative latency", replaced(kValid, "latency_us: 1", "latency_us: -1"), "key 'topology[0].latency_us': must be >= 0"},
      {"negative launch", replaced(kValid, "kernel_launch_us: 3", "kernel_launch_us: -3"), "key 'device.kernel_launch_us': must be >= 0"},
      {"zero peak", replaced(kValid, "bf16: 100", "bf16: 0"), "key 'device.peak_tflops.bf16': must be > 0"},
      {"infinite peak", replaced(kValid, "bf16: 100", "bf16: .inf"), "key 'device.peak_tflops.bf16': expected a finite number"},
      {"empty peaks", replaced(kValid, "{bf16: 100, fp32: 25}", "{}"), "key 'device.peak_tflops': needs at least one precision"},
      {"efficiency above 1", replaced(kValid, "efficiency: 0.9", "efficiency: 1.2"), "key 'device.efficiency[1].efficiency': must be at most 1"},
      {"efficiency zero", replaced(kValid, "efficiency: 0.5", "efficiency: 0"), "key 'device.efficiency[0].efficiency': must be > 0"},
      {"efficiency not from 0", replaced(kValid, "min_gflop: 0,", "min_gflop: 1,"), "key 'device.efficiency[0].min_gflop': the first entry must start at 0"},
      {"efficiency not ascending", replaced(kValid, "min_gflop: 10", "min_gflop: 0"),
       "key 'device.efficiency[1].min_gflop': must be larger than the previous entry's"},
      {"efficiency empty", replaced(replaced(kValid, "  efficiency:\n", "  efficiency: []\n"), "    - {min_gflop: 0, efficiency: 0.5}\n    - {min_gflop: 10, efficiency: 0.9}\n", ""),
       "key 'device.efficiency': expected a non-empty list"},
      {"unknown link kind", replaced(kValid, "kind: switch", "kind: crossbar"), "key 'topology[0].kind': 'crossbar' is not one of switch, ring, fat_tree, mesh"},
      {"empty topology", kValid.substr(0, kValid.find("topology:")) + "topology: []\n", "key 'topology': expected a non-empty list"},
      {"repeated level name", replaced(kValid, "name: node", "name: gpu"), "key 'topology[1].name': level name 'gpu' repeated"},
      {"level name not identifier", replaced(kValid, "name: node", "name: in-band"), "key 'topology[1].name': 'in-band' is not an identifier"},
      {"zero price", kValid + "price_per_gpu_hour_usd: 0\n", "key 'price_per_gpu_hour_usd': must be > 0"},
      {"empty power", kValid + "power_w:\n", "key 'power_w': present but empty"},
      {"syntax error", replaced(kValid, "{bf16: 100, fp32: 25}", "{bf16: 100, fp32: 25"), "t.yaml:5:"},
      {"empty document", "", "t.yaml:1:1: key '(top level)': expected a mapping"},
      {"top level list", "- a\n- b\n", "t.yaml:1:1: key '(top level)': expected a mapping"},
  };
  for (const BadCase& bad : cases) {
    std::string message = error_of(bad.text);
    EXPECT_NE(message.find(bad.expected), std::string::npos) << bad.what << "\n  got: " << message;
    EXPECT_EQ(message.rfind("t.yaml:", 0), 0u) << bad.what << ": message must start with the file\n  got: " << message;
  }
}

TEST(ProfileLoader, EveryBundledProfileLoadsWithItsPublishedNumbers) {
  std::vector<std::string> names = list_profiles();
  EXPECT_GE(names.size(), 5u);
  for (const std::string& name : names) {
    Cluster c = load_cluster(name);
    EXPECT_EQ(c.name, name) << "the profile's name should match its file stem";
    EXPECT_FALSE(c.description.empty()) << name;
    EXPECT_GE(c.levels.size(), 2u) << name;
    EXPECT_TRUE(c.price_per_gpu_hour && c.power_w) << name;
    EXPECT_GT(c.device.peak(Precision::bf16), 0) << name;
    // A GPU's inter-node share must be slower than its intra-node link in every bundled profile.
    EXPECT_LT(c.levels[1].bandwidth, c.levels[0].bandwidth) << name;
    for (std::size_t i = 1; i < c.device.efficiency.size(); ++i) {
      EXPECT_GE(c.device.efficiency[i].efficiency, c.device.efficiency[i - 1].efficiency) << name << " efficiency should grow with size";
    }
  }
  Cluster a100 = load_cluster("dgx-a100");
  EXPECT_EQ(a100.device.peak(Precision::bf16), 312e12);  // A100 datasheet
  EXPECT_EQ(a100.device.memory_bytes, 85.9e9);
  EXPECT_EQ(a100.device.hbm_bandwidth, 2039e9);
  EXPECT_EQ(a100.levels[0].bandwidth, 300e9);  // NVLink 600 GB/s total = 300 per direction
  EXPECT_EQ(a100.levels[1].bandwidth, 25e9);   // HDR 200 Gb/s per GPU
  EXPECT_EQ(a100.num_devices(), 32);
  Cluster h100 = load_cluster("dgx-h100");
  EXPECT_EQ(h100.device.peak(Precision::fp8), 1979e12);
  EXPECT_EQ(h100.levels[1].bandwidth, 50e9);  // NDR 400 Gb/s per GPU
  Cluster h200 = load_cluster("hgx-h200");
  EXPECT_EQ(h200.device.memory_bytes, 151.4e9);
  EXPECT_EQ(h200.device.hbm_bandwidth, 4800e9);
  Cluster l4 = load_cluster("pcie-l4");
  EXPECT_EQ(l4.device.memory_bytes, 24.15e9);  // nvidia-smi's 23,034 MiB
  EXPECT_DOUBLE_EQ(l4.levels[1].bandwidth * l4.devices_per_node(), 12.5e9);  // one 100 GbE NIC per node
  Cluster mi = load_cluster("mi300x");
  EXPECT_EQ(mi.device.memory_bytes, 206.2e9);  // 192 GiB
}

TEST(ProfileLoader, NamesPathsShorthandAndErrors) {
  std::string path = std::string(SYMTENSOR_SOURCE_ROOT) + "/hardware/profiles/dgx-h100.yaml";
  EXPECT_EQ(load_cluster(path).name, "dgx-h100");
  EXPECT_EQ(load_cluster(path).source, path);
  Cluster big = load_cluster("dgx-a100x16");
  EXPECT_EQ(big.levels.back().size, 16);
  EXPECT_EQ(big.num_devices(), 128);
  try {
    load_cluster("dgx-z900");
    ADD_FAILURE() << "unknown profile accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown hardware profile 'dgx-z900'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dgx-a100"), std::string::npos) << "should list the bundled profiles";
  }
  EXPECT_THROW(load_cluster("/nonexistent/dir/x.yaml"), std::runtime_error);
  EXPECT_THROW(load_cluster(""), std::runtime_error);

  // A file on disk reports its own path in errors.
  std::filesystem::path bad = symtensor::testing::temp_path("symtensor_bad_profile_test.yaml");
  {
    std::ofstream out(bad);
    out << replaced(kValid, "size: 2", "size: zero");
  }
  try {
    load_cluster(bad.string());
    ADD_FAILURE() << "bad file accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), bad.string() + ":13:24: key 'topology[1].size': expected an integer, got 'zero'");
  }
  std::filesystem::remove(bad);
}

TEST(ScaleCluster, NodesAndPartialNodes) {
  Cluster a100 = load_cluster("dgx-a100");
  Cluster n64 = scale_cluster(a100, 64, std::nullopt);
  EXPECT_EQ(n64.num_devices(), 512);
  Cluster g6 = scale_cluster(a100, std::nullopt, 6);
  EXPECT_EQ(g6.num_devices(), 6);  // a single node, 6 of its 8 GPUs
  EXPECT_EQ(g6.levels[1].size, 1);
  Cluster n3g5 = scale_cluster(a100, 3, 5);
  EXPECT_EQ(n3g5.num_devices(), 15);
  EXPECT_THROW(scale_cluster(a100, 0, std::nullopt), std::runtime_error);
  EXPECT_THROW(scale_cluster(a100, std::nullopt, 9), std::runtime_error);
  EXPECT_THROW(scale_cluster(a100, std::nullopt, 0), std::runtime_error);
  Cluster single = a100;
  single.levels.pop_back();
  EXPECT_THROW(scale_cluster(single, 4, std::nullopt), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::hardware
