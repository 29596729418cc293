#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace symtensor::testing {

// ctest runs every test in its own process, two at a time: a scratch file named
// only by its content would be written by one test while another reads it. The
// file keeps its name (a model's name is its file's stem) in a folder of its own.
inline std::string temp_path(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("symtensor_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace symtensor::testing
