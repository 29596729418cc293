#include <string>

#include <gtest/gtest.h>

#include "hardware/describe.h"

namespace symtensor::hardware {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Describe, ShowsEveryNumberWithItsUnit) {
  std::string text = describe_cluster(load_cluster("dgx-a100"));
  for (const char* expected :
       {"devices: 32 (4 node x 8 gpu)", "bf16 312 TFLOP/s", "tf32 156 TFLOP/s", "memory 85.9 GB", "memory bandwidth 2039 GB/s",
        "kernel launch 4 us", ">=128 GFLOP 0.82", "300 GB/s", "25 GB/s", "latency 5 us", "fat_tree",
        "peak bf16: 9.984 PFLOP/s",  // 32 x 312 TFLOP/s
        "memory: 2748.8 GB" /* 32 x 85.9 */, "power: 12.8 kW", "price: 64.00 USD/hour", "all-reduce"}) {
    EXPECT_TRUE(contains(text, expected)) << "missing '" << expected << "' in\n" << text;
  }
}

TEST(Describe, ScaledClusterAndProfileList) {
  std::string text = describe_cluster(scale_cluster(load_cluster("dgx-h100"), std::nullopt, 6));
  EXPECT_TRUE(contains(text, "devices: 6 (1 node x 6 gpu)")) << text;
  EXPECT_FALSE(contains(text, "over all")) << "a single node has no cross-node line\n" << text;
  std::string list = describe_profiles();
  for (const std::string& name : list_profiles()) EXPECT_TRUE(contains(list, name)) << list;
  EXPECT_TRUE(contains(list, "A100-SXM4-80GB")) << list;
}

}  // namespace
}  // namespace symtensor::hardware
