// Profile and stack names as a newcomer types them (#34): any case, and a "did you mean"
// for a typo.
#include <gtest/gtest.h>

#include "hardware/cluster.h"
#include "hardware/names.h"
#include "hardware/stack.h"

namespace symtensor::hardware {
namespace {

std::string profile_error_of(const std::string& name) {
  try {
    load_cluster(name);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

std::string bundled_profile_names() {
  std::string known;
  for (const std::string& name : list_profiles()) known += (known.empty() ? "" : ", ") + name;
  return known;
}

TEST(ProfileNames, AnyCaseIsTheBundledProfile) {
  const Cluster upper = load_cluster("DGX-H100");
  EXPECT_EQ(upper.name, "dgx-h100");
  EXPECT_EQ(upper.num_devices(), load_cluster("dgx-h100").num_devices());
  const Cluster scaled = load_cluster("DGX-A100x4");
  EXPECT_EQ(scaled.name, "dgx-a100");
  EXPECT_EQ(scaled.levels.back().size, 4);
  EXPECT_EQ(load_cluster("Mi300X").name, "mi300x");
}

TEST(ProfileNames, ATypoGetsDidYouMean) {
  EXPECT_EQ(profile_error_of("dgx-h10"), "unknown hardware profile 'dgx-h10': did you mean 'dgx-h100'? (bundled: " + bundled_profile_names() +
                                     "; or give a path to a .yaml file, or NAMExNODES)");
  EXPECT_EQ(profile_error_of("dgx-h10x4"), "unknown hardware profile 'dgx-h10x4': did you mean 'dgx-h100x4'? (bundled: " +
                                       bundled_profile_names() + "; or give a path to a .yaml file, or NAMExNODES)");
  EXPECT_EQ(profile_error_of("hgx-h2000"), "unknown hardware profile 'hgx-h2000': did you mean 'hgx-h200'? (bundled: " +
                                       bundled_profile_names() + "; or give a path to a .yaml file, or NAMExNODES)");
  // Nothing near: no guess.
  EXPECT_EQ(profile_error_of("tpu-v5p"), "unknown hardware profile 'tpu-v5p' (bundled: " + bundled_profile_names() +
                                     "; or give a path to a .yaml file, or NAMExNODES)");
  EXPECT_EQ(similar_profiles("dgx-h10"), std::vector<std::string>{"dgx-h100"});
  EXPECT_EQ(similar_profiles("DGX-B300"), std::vector<std::string>{"dgx-b300"});
}

// Stacks as profiles: any case, and a "did you mean" for a typo.
TEST(StackNames, AnyCaseAndDidYouMean) {
  EXPECT_EQ(load_stack("Megatron").name, "megatron");
  EXPECT_EQ(load_stack("TORCHTITAN").name, "torchtitan");
  std::string known;
  for (const std::string& name : list_stacks()) known += (known.empty() ? "" : ", ") + name;
  const auto error_of = [](const std::string& name) {
    try {
      load_stack(name);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("megatrn"), "--stack: unknown stack 'megatrn': did you mean 'megatron'? (bundled: " + known +
                                     "; or a path to a .yaml file)");
  EXPECT_EQ(error_of("pytorch"), "--stack: unknown stack 'pytorch' (bundled: " + known + "; or a path to a .yaml file)");
}

TEST(Names, NearestInAnyCase) {
  EXPECT_EQ(name_in_any_case("H100-sxm5-80gb", {"A100-SXM4-80GB", "H100-SXM5-80GB"}), "H100-SXM5-80GB");
  EXPECT_EQ(name_in_any_case("h100", {"H100-SXM5-80GB"}), "");
  EXPECT_EQ(similar_names("jaxx", {"jax", "nemo"}), std::vector<std::string>{"jax"});
  EXPECT_EQ(did_you_mean({"a", "b", "c"}, "x2"), ": did you mean 'ax2', 'bx2' or 'cx2'?");
  EXPECT_EQ(did_you_mean({}), "");
}

}  // namespace
}  // namespace symtensor::hardware
