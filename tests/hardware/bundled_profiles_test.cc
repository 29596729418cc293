// The 2026 profiles (Blackwell, MI325X, MI355X) and the corrected MI300X and H200 against the
// datasheet table and microbenchmarks of shared/reference/CALIBRATION.md ("Today's GPUs",
// sections 1 and 2). Expectations are written out by hand from that table.
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "hardware/cluster.h"

namespace symtensor::hardware {
// Named: the tests build as one unity file, where anonymous namespaces are shared.
namespace bundled_profiles_test {
namespace {

struct Expected {
  const char* profile;
  const char* device;
  double bf16, fp8, fp4;  // TFLOP/s dense; fp4 0: none
  // Memory as the driver exposes it, in GB: vendors' "180 GB", "141 GB", "192 GB" are GiB
  // (nvidia-smi's 183,359 MiB on B200; CALIBRATION.md's "H200 (141 GiB)"; ROCm's VRAM in GiB).
  double memory_gb, hbm_gb_per_s;
  int gpus_per_domain;    // level 0's size
  double scale_up_gb_per_s, scale_out_gb_per_s;
  LinkKind scale_up_kind;
  double power_w;
  double efficiency_top;
};

const Expected kTable[] = {
    {"dgx-b200", "B200-SXM-180GB", 2250, 4500, 9000, 192.3, 7700, 8, 900, 50, LinkKind::switch_fabric, 1000, 0.58},
    {"gb200-nvl72", "GB200-186GB", 2500, 5000, 10000, 198.6, 8000, 72, 900, 50, LinkKind::switch_fabric, 1200, 0.58},
    {"dgx-b300", "B300-SXM-288GB", 2250, 4500, 13500, 289.9, 8000, 8, 900, 100, LinkKind::switch_fabric, 1100, 0.58},
    {"gb300-nvl72", "GB300-288GB", 2500, 5000, 15000, 289.9, 8000, 72, 900, 100, LinkKind::switch_fabric, 1400, 0.58},
    {"mi300x", "MI300X-192GB", 1307.4, 2614.9, 0, 206.2, 5300, 8, 448, 50, LinkKind::mesh, 750, 0.44},
    {"mi325x", "MI325X-256GiB", 1307, 2614, 0, 274.9, 6000, 8, 448, 50, LinkKind::mesh, 1000, 0.44},
    {"mi355x", "MI355X-288GiB", 2500, 5000, 10000, 309.2, 8000, 8, 537.6, 50, LinkKind::mesh, 1400, 0.55},
    {"hgx-h200", "H200-SXM-141GB", 989.5, 1979, 0, 151.4, 4800, 8, 450, 50, LinkKind::switch_fabric, 700, 0.69},
};

TEST(BundledProfiles, NewAndCorrectedProfilesCarryTheDatasheetNumbers) {
  for (const Expected& e : kTable) {
    SCOPED_TRACE(e.profile);
    const Cluster c = load_cluster(e.profile);
    EXPECT_EQ(c.name, e.profile);
    EXPECT_EQ(c.device.name, e.device);
    EXPECT_DOUBLE_EQ(c.device.peak(Precision::bf16), e.bf16 * 1e12);
    EXPECT_DOUBLE_EQ(c.device.peak(Precision::fp8), e.fp8 * 1e12);
    if (e.fp4 > 0) EXPECT_DOUBLE_EQ(c.device.peak(Precision::fp4), e.fp4 * 1e12);
    else EXPECT_THROW(c.device.peak(Precision::fp4), std::runtime_error);
    EXPECT_DOUBLE_EQ(c.device.memory_bytes, e.memory_gb * 1e9);
    EXPECT_DOUBLE_EQ(c.device.memory_reserve_bytes, 2e9);
    EXPECT_DOUBLE_EQ(c.device.hbm_bandwidth, e.hbm_gb_per_s * 1e9);
    ASSERT_EQ(c.levels.size(), 2u);
    EXPECT_EQ(c.levels[0].size, e.gpus_per_domain);
    EXPECT_DOUBLE_EQ(c.levels[0].bandwidth, e.scale_up_gb_per_s * 1e9);
    EXPECT_EQ(c.levels[0].kind, e.scale_up_kind);
    EXPECT_DOUBLE_EQ(c.levels[1].bandwidth, e.scale_out_gb_per_s * 1e9);
    EXPECT_EQ(c.levels[1].kind, LinkKind::fat_tree);
    ASSERT_TRUE(c.power_w.has_value());
    EXPECT_DOUBLE_EQ(*c.power_w, e.power_w);
    ASSERT_TRUE(c.price_per_gpu_hour.has_value());
    EXPECT_DOUBLE_EQ(c.device.efficiency.back().efficiency, e.efficiency_top);
    EXPECT_FALSE(c.device.attention_efficiency.empty()) << "every profile here has a fused attention table";
  }
}

TEST(BundledProfiles, GibibyteMemoriesAreWrittenInGigabytes) {
  // 256 GiB and 288 GiB (ROCm gpu-specs) in 10^9 bytes, to the 0.1 GB the profiles state.
  EXPECT_NEAR(load_cluster("mi325x").device.memory_bytes, 256 * 1073741824.0, 0.05e9);
  EXPECT_NEAR(load_cluster("mi355x").device.memory_bytes, 288 * 1073741824.0, 0.05e9);
}

TEST(BundledProfiles, Nvl72IsOneNvlinkDomainOf72PerRack) {
  for (const char* name : {"gb200-nvl72", "gb300-nvl72"}) {
    const Cluster c = load_cluster(name);
    EXPECT_EQ(c.devices_per_node(), 72) << name;
    EXPECT_EQ(c.levels[1].name, "rack") << name;
    EXPECT_EQ(load_cluster(std::string(name) + "x2").num_devices(), 144) << name;
  }
}

TEST(BundledProfiles, EfficiencyTopsFollowTheMeasuredGemmFractions) {
  // CALIBRATION.md section 2: best FP8 GEMM 1366/1979 = 69% on H200 (hgx-h200 tops at 0.69),
  // 2907/5000 = 58% on GB200, 1159/2615 = 44% on MI300X.
  const double h200 = 1366.0 / 1979;
  EXPECT_NEAR(load_cluster("hgx-h200").device.efficiency_for(1e15), 0.69, 0.005);
  EXPECT_NEAR(load_cluster("gb200-nvl72").device.efficiency_for(1e15), 0.69 * (2907.0 / 5000) / h200, 0.006);
  EXPECT_NEAR(load_cluster("mi300x").device.efficiency_for(1e15), 0.69 * (1159.0 / 2615) / h200, 0.006);

  // The correction's point: a large BF16 GEMM on MI300X is slower than on H100, and its fused
  // attention too (before, MI300X's 0.70 x 1307 TFLOP/s beat H100's 0.67 x 989.5).
  const Device mi = load_cluster("mi300x").device;
  const Device h100 = load_cluster("dgx-h100").device;
  const double flops = 1e13;  // a 10 TFLOP GEMM: math bound on both
  EXPECT_GT(mi.kernel_seconds(Precision::bf16, flops, 0), h100.kernel_seconds(Precision::bf16, flops, 0));
  EXPECT_GT(mi.attention_seconds(Precision::bf16, flops, 0, 128, 8192, false),
            h100.attention_seconds(Precision::bf16, flops, 0, 128, 8192, false));

  // Every new curve is dgx-h100's shape scaled to its top: each step within 0.01 of
  // H100's step x top / 0.67, at the same thresholds.
  for (const char* name : {"dgx-b200", "dgx-b300", "gb200-nvl72", "gb300-nvl72", "mi300x", "mi325x", "mi355x"}) {
    const Device d = load_cluster(name).device;
    ASSERT_EQ(d.efficiency.size(), h100.efficiency.size()) << name;
    const double scale = d.efficiency.back().efficiency / h100.efficiency.back().efficiency;
    for (std::size_t i = 0; i < d.efficiency.size(); ++i) {
      EXPECT_EQ(d.efficiency[i].min_flops, h100.efficiency[i].min_flops) << name << " step " << i;
      EXPECT_NEAR(d.efficiency[i].efficiency, h100.efficiency[i].efficiency * scale, 0.0101) << name << " step " << i;
    }
  }
  // Blackwell attention: H100's FlashAttention-3 table x 0.58/0.67 (an estimate).
  const Device b200 = load_cluster("dgx-b200").device;
  ASSERT_EQ(b200.attention_efficiency.size(), h100.attention_efficiency.size());
  for (std::size_t i = 0; i < b200.attention_efficiency.size(); ++i) {
    EXPECT_NEAR(b200.attention_efficiency[i].forward, h100.attention_efficiency[i].forward * 0.58 / 0.67, 0.0051) << i;
    EXPECT_NEAR(b200.attention_efficiency[i].backward, h100.attention_efficiency[i].backward * 0.58 / 0.67, 0.0051) << i;
  }
  EXPECT_NE(b200.attention_kernel.find("estimate"), std::string::npos) << b200.attention_kernel;
}

TEST(BundledProfiles, Fp4IsAPrecisionOfItsOwn) {
  EXPECT_EQ(to_string(Precision::fp4), "fp4");
  EXPECT_EQ(parse_precision("fp4"), Precision::fp4);
  EXPECT_EQ(parse_precision("fp6"), std::nullopt);
  const Cluster b300 = load_cluster("dgx-b300");
  EXPECT_DOUBLE_EQ(b300.device.peak(Precision::fp4) / b300.device.peak(Precision::fp8), 3.0);  // 13500 / 4500
  EXPECT_THROW(load_cluster("dgx-h100").device.peak(Precision::fp4), std::runtime_error);
}

}  // namespace
}  // namespace bundled_profiles_test
}  // namespace symtensor::hardware
