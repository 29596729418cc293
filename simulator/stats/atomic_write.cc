#include "simulator/stats/atomic_write.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::sim {

void write_file_atomically(const std::string& path, const std::string& content) {
  std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", tmp));
    out << content;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write '{}'", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot rename '{}' to '{}'", tmp, path));
  }
}

}  // namespace symtensor::sim
