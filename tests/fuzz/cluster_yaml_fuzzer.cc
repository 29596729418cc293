// libFuzzer target: arbitrary text as a cluster profile (hardware::parse_cluster). A
// rejection must be a std::runtime_error; a profile that loads must describe a usable
// cluster (at least one device).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "hardware/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const symtensor::hardware::Cluster cluster = symtensor::hardware::parse_cluster(text, "fuzz.yaml");
    if (cluster.num_devices() < 1 || cluster.levels.empty()) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
