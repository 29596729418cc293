#pragma once
// Helpers for the report tests: a tiny GPT written to a temporary ONNX file, a CSV reader.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "onnx_models/model_zoo.h"

namespace symtensor::testing {

// A 2-layer GPT (hidden 64) without weights, saved once per test process in a folder of
// its own that is removed when the process exits (ctest runs each test in a process).
struct TinyGptFile {
  std::filesystem::path dir;
  std::string path;
  TinyGptFile() : dir(std::filesystem::temp_directory_path() / ("symtensor_report_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
    models::ModelConfig config = models::preset_config("gpt-1.7b-tiny");
    config.weights = models::Weights::none;
    path = (dir / "gpt_tiny.onnx").string();
    models::save_model(models::build_model(config), path);
  }
  ~TinyGptFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

inline std::string tiny_gpt_path() {
  static const TinyGptFile file;
  return file.path;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// RFC 4180 rows (quoted fields with "" escapes, no embedded newlines needed here).
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field), field.clear();
    } else if (c == '\n') {
      row.push_back(field), field.clear();
      rows.push_back(row), row.clear();
    } else {
      field += c;
    }
  }
  return rows;
}

}  // namespace symtensor::testing
