#include "bench/quality/suite.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "compiler/report/compare.h"
#include "hardware/stack.h"

namespace symtensor::quality {
namespace {

const std::set<std::string> kWorkloadKeys = {"name", "note", "model", "overrides", "cluster", "nodes", "gpus", "bind",
                                             "strategies", "baseline", "stack"};
const std::set<std::string> kOverrideKeys = {"layers", "hidden", "heads", "kv_heads", "intermediate", "vocab", "seq",
                                             "experts", "top_k", "image_size", "patch_size", "classes", "image_tiles"};

std::int64_t positive(const YAML::Node& node, const std::string& where) {
  std::int64_t v = 0;
  try {
    v = node.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    throw std::runtime_error(where + ": not an integer");
  }
  if (v <= 0) throw std::runtime_error(where + ": must be positive");
  return v;
}

void set_override(models::Overrides& o, const std::string& key, std::int64_t v) {
  if (key == "layers") o.layers = v;
  else if (key == "hidden") o.hidden = v;
  else if (key == "heads") o.heads = v;
  else if (key == "kv_heads") o.kv_heads = v;
  else if (key == "intermediate") o.intermediate = v;
  else if (key == "vocab") o.vocab = v;
  else if (key == "seq") o.seq = v;
  else if (key == "experts") o.experts = v;
  else if (key == "top_k") o.top_k = v;
  else if (key == "image_size") o.image_size = v;
  else if (key == "patch_size") o.patch_size = v;
  else if (key == "classes") o.classes = v;
  else if (key == "image_tiles") o.image_tiles = v;
}

// Names are checked when the suite loads, not when a row reaches them minutes later: a stack
// as --stack reads it (any case of a bundled name, or a .yaml file it parses).
void check_stack(const std::string& name, const std::string& where) {
  try {
    hardware::load_stack(name);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": key 'stack': " + e.what());
  }
}

Workload parse_workload(const YAML::Node& n, const std::string& where) {
  if (!n.IsMap()) throw std::runtime_error(where + ": not a mapping");
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (!kWorkloadKeys.count(key)) throw std::runtime_error(where + ": unknown key '" + key + "'");
  }
  Workload w;
  for (const char* key : {"name", "model", "cluster"})
    if (!n[key] || !n[key].IsScalar()) throw std::runtime_error(where + ": key '" + key + "' missing");
  w.name = n["name"].as<std::string>();
  w.preset = n["model"].as<std::string>();
  w.cluster = n["cluster"].as<std::string>();
  if (n["note"]) w.note = n["note"].as<std::string>();
  if (n["stack"]) {
    if (!n["stack"].IsScalar()) throw std::runtime_error(where + ": key 'stack' must name a stack");
    w.stack = n["stack"].as<std::string>();
    check_stack(*w.stack, where);
  }
  if (n["nodes"]) w.nodes = static_cast<int>(positive(n["nodes"], where + ": key 'nodes'"));
  if (n["gpus"]) w.gpus = static_cast<int>(positive(n["gpus"], where + ": key 'gpus'"));
  if (n["overrides"]) {
    for (const auto& kv : n["overrides"]) {
      const std::string key = kv.first.as<std::string>();
      if (!kOverrideKeys.count(key)) throw std::runtime_error(where + ": overrides: unknown key '" + key + "'");
      set_override(w.overrides, key, positive(kv.second, where + ": overrides: key '" + key + "'"));
    }
  }
  if (!n["bind"] || !n["bind"].IsMap() || !n["bind"]["batch"])
    throw std::runtime_error(where + ": key 'bind' must give at least batch");
  for (const auto& kv : n["bind"]) {
    const std::string key = kv.first.as<std::string>();
    w.bind[key] = positive(kv.second, where + ": bind: key '" + key + "'");
  }
  if (n["strategies"]) {
    if (!n["strategies"].IsSequence() || n["strategies"].size() == 0)
      throw std::runtime_error(where + ": key 'strategies' must be a non-empty list of names");
    for (const auto& s : n["strategies"]) {
      if (!s.IsScalar()) throw std::runtime_error(where + ": key 'strategies': every item must be a strategy name");
      w.strategies.push_back(s.as<std::string>());
      compiler::check_compare_strategy(w.strategies.back(), where + ": key 'strategies'", true);
    }
  }
  if (n["baseline"]) {
    if (!n["baseline"].IsScalar()) throw std::runtime_error(where + ": key 'baseline' must name a strategy");
    w.baseline = n["baseline"].as<std::string>();
  }
  // A sequence longer than the preset's position table needs a longer table.
  if (auto seq = w.bind.find("seq"); seq != w.bind.end() && !w.overrides.seq) w.overrides.seq = seq->second;
  return w;
}

}  // namespace

Suite load_suite(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  Suite suite;
  if (!root["strategies"] || !root["strategies"].IsSequence())
    throw std::runtime_error(path + ": key 'strategies' must be a list");
  for (const auto& s : root["strategies"]) {
    suite.strategies.push_back(s.as<std::string>());
    compiler::check_compare_strategy(suite.strategies.back(), path + ": key 'strategies'", true);
  }
  if (!root["workloads"] || !root["workloads"].IsSequence())
    throw std::runtime_error(path + ": key 'workloads' must be a list");
  std::set<std::string> names;
  int index = 0;
  for (const auto& n : root["workloads"]) {
    ++index;
    const std::string where = path + ": workload " + std::to_string(index) +
                              (n.IsMap() && n["name"] ? " (" + n["name"].as<std::string>() + ")" : "");
    Workload w = parse_workload(n, where);
    if (w.strategies.empty()) w.strategies = suite.strategies;
    if (std::find(w.strategies.begin(), w.strategies.end(), w.baseline) == w.strategies.end())
      throw std::runtime_error(where + ": key 'baseline': '" + w.baseline + "' is not one of its strategies");
    if (!names.insert(w.name).second) throw std::runtime_error(where + ": name used twice");
    suite.workloads.push_back(std::move(w));
  }
  return suite;
}

std::string bind_text(const Workload& w) {
  std::string text;
  for (const auto& [k, v] : w.bind) text += (text.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return text;
}

}  // namespace symtensor::quality
