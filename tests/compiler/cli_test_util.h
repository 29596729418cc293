#pragma once
// A test that runs the symtensor binary (SYMTENSOR_BINARY) as a user would: each test gets a
// scratch folder of its own under temp_path, and run() keeps the exit status, stdout and
// stderr.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/temp_path.h"

namespace symtensor::testing {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = temp_path(std::string("cli_") + test->test_suite_name() + "_" + test->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // `symtensor ARGS`: its exit status; what it printed in out_ and err_.
  int run(const std::string& args) {
    const std::string out = path("out"), err = path("err");
    const int status = std::system((std::string(SYMTENSOR_BINARY) + " " + args + " >" + out + " 2>" + err).c_str());
    out_ = text_of(out), err_ = text_of(err);
    return status;
  }
  // A file in this test's folder.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string text_of(const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
  std::string out_, err_;
};

}  // namespace symtensor::testing
