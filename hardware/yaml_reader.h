#pragma once
// Reads validated YAML for the loaders of hardware/ (profiles, stacks): every problem is
// "FILE:LINE:COL: key 'path': problem"; nothing is defaulted silently.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace symtensor::hardware {

class YamlReader {
 public:
  explicit YamlReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& problem) const {
    YAML::Mark mark = at.IsDefined() ? at.Mark() : YAML::Mark::null_mark();
    int line = mark.line < 0 ? 1 : mark.line + 1;
    int column = mark.column < 0 ? 1 : mark.column + 1;
    throw std::runtime_error(fmt::format("{}:{}:{}: key '{}': {}", source_, line, column, key, problem));
  }

  // A mapping whose keys are all in `allowed`, each once.
  void expect_map(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> allowed) {
    if (!node.IsMap()) fail(node, path, "expected a mapping");
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
      std::string full = path.empty() ? key : path + "." + key;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string names;
        for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
        fail(it->first, full, fmt::format("unknown key (allowed: {})", names));
      }
      if (!seen.insert(key).second) fail(it->first, full, "duplicate key");
    }
  }

  YAML::Node required(const YAML::Node& map, const std::string& path, const std::string& key) {
    YAML::Node value = map[key];
    if (!value.IsDefined() || value.IsNull()) fail(map, join(path, key), "missing required field");
    return value;
  }

  std::string string(const YAML::Node& map, const std::string& path, const std::string& key) {
    YAML::Node value = required(map, path, key);
    if (!value.IsScalar()) fail(value, join(path, key), "expected a string");
    return value.Scalar();
  }

  // A finite number; `minimum_exclusive` says whether the bound itself is rejected.
  double number(const YAML::Node& value, const std::string& full, double minimum, bool minimum_exclusive) {
    if (!value.IsScalar()) fail(value, full, "expected a number");
    double result = 0;
    try {
      result = value.as<double>();
    } catch (const YAML::Exception&) {
      fail(value, full, fmt::format("expected a number, got '{}'", value.Scalar()));
    }
    if (!std::isfinite(result)) fail(value, full, "expected a finite number");
    if (minimum_exclusive ? result <= minimum : result < minimum) {
      fail(value, full, fmt::format("must be {} {}, got {}", minimum_exclusive ? ">" : ">=", minimum, value.Scalar()));
    }
    return result;
  }

  double positive(const YAML::Node& map, const std::string& path, const std::string& key) {
    return number(required(map, path, key), join(path, key), 0, true);
  }
  double non_negative(const YAML::Node& map, const std::string& path, const std::string& key) {
    return number(required(map, path, key), join(path, key), 0, false);
  }
  std::optional<double> optional_positive(const YAML::Node& map, const std::string& path, const std::string& key) {
    YAML::Node value = map[key];
    if (!value.IsDefined()) return std::nullopt;
    if (value.IsNull()) fail(map, join(path, key), "present but empty");
    return number(value, join(path, key), 0, true);
  }

  int positive_int(const YAML::Node& map, const std::string& path, const std::string& key) {
    YAML::Node value = required(map, path, key);
    std::string full = join(path, key);
    if (!value.IsScalar()) fail(value, full, "expected an integer");
    long long result = 0;
    try {
      result = value.as<long long>();
    } catch (const YAML::Exception&) {
      fail(value, full, fmt::format("expected an integer, got '{}'", value.Scalar()));
    }
    if (result < 1) fail(value, full, fmt::format("must be >= 1, got {}", result));
    if (result > 1'000'000) fail(value, full, fmt::format("{} is implausibly large (limit 1000000)", result));
    return static_cast<int>(result);
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string source_;
};

}  // namespace symtensor::hardware
