// Loads and validates hardware profiles (schema: hardware/profiles/README.md). Every problem
// is reported as "FILE:LINE:COL: key 'path': problem"; nothing is defaulted silently.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hardware/cluster.h"
#include "hardware/names.h"
#include "hardware/yaml_reader.h"

namespace symtensor::hardware {
namespace {

constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;
constexpr double kMicro = 1e-6;

// fused_attention: {kernel: TEXT, efficiency: [{head_dim, min_seq, forward, backward}, ...]}
// sorted by head_dim then min_seq; each head dim's first entry starts at min_seq 0.
void read_attention_table(YamlReader& r, const YAML::Node& node, Device& device) {
  const std::string path = "device.fused_attention";
  r.expect_map(node, path, {"kernel", "efficiency"});
  device.attention_kernel = r.string(node, path, "kernel");
  YAML::Node table = r.required(node, path, "efficiency");
  if (!table.IsSequence() || table.size() == 0) r.fail(table, path + ".efficiency", "expected a non-empty list");
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::string at = fmt::format("{}.efficiency[{}]", path, i);
    YAML::Node entry = table[i];
    r.expect_map(entry, at, {"head_dim", "min_seq", "forward", "backward"});
    AttentionEfficiencyPoint p;
    p.head_dim = r.positive_int(entry, at, "head_dim");
    p.min_seq = r.number(r.required(entry, at, "min_seq"), at + ".min_seq", 0, false);
    for (auto [key, value] : {std::pair{"forward", &p.forward}, std::pair{"backward", &p.backward}}) {
      *value = r.number(r.required(entry, at, key), at + "." + key, 0, true);
      if (*value > 1) r.fail(entry[key], at + "." + key, "must be at most 1 (achieved/peak)");
    }
    const bool new_group = device.attention_efficiency.empty() || device.attention_efficiency.back().head_dim != p.head_dim;
    if (!new_group && p.min_seq <= device.attention_efficiency.back().min_seq)
      r.fail(entry["min_seq"], at + ".min_seq", "must be larger than the previous entry's");
    if (new_group && !device.attention_efficiency.empty() && p.head_dim < device.attention_efficiency.back().head_dim)
      r.fail(entry["head_dim"], at + ".head_dim", "entries must be sorted by head_dim");
    if (new_group && p.min_seq != 0) r.fail(entry["min_seq"], at + ".min_seq", "each head dim's first entry must start at 0");
    device.attention_efficiency.push_back(p);
  }
}

Device read_device(YamlReader& r, const YAML::Node& node) {
  const std::string path = "device";
  r.expect_map(node, path,
               {"name", "peak_tflops", "memory_gb", "memory_reserve_gb", "hbm_bandwidth_gb_per_s", "host_link_gb_per_s", "kernel_launch_us",
                "efficiency", "fused_attention"});
  Device device;
  device.name = r.string(node, path, "name");

  YAML::Node peaks = r.required(node, path, "peak_tflops");
  r.expect_map(peaks, "device.peak_tflops", {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"});
  if (peaks.size() == 0) r.fail(peaks, "device.peak_tflops", "needs at least one precision");
  for (auto it = peaks.begin(); it != peaks.end(); ++it) {
    std::string key = it->first.Scalar();
    device.peak_flops[*parse_precision(key)] = r.number(it->second, "device.peak_tflops." + key, 0, true) * kTera;
  }

  device.memory_bytes = r.positive(node, path, "memory_gb") * kGiga;
  if (node["memory_reserve_gb"].IsDefined()) {
    device.memory_reserve_bytes = r.non_negative(node, path, "memory_reserve_gb") * kGiga;
    if (device.memory_reserve_bytes >= device.memory_bytes)
      r.fail(node["memory_reserve_gb"], "device.memory_reserve_gb", "must be less than memory_gb");
  }
  device.hbm_bandwidth = r.positive(node, path, "hbm_bandwidth_gb_per_s") * kGiga;
  if (node["host_link_gb_per_s"].IsDefined()) device.host_link_bandwidth = r.positive(node, path, "host_link_gb_per_s") * kGiga;
  device.kernel_launch_s = r.non_negative(node, path, "kernel_launch_us") * kMicro;

  YAML::Node curve = r.required(node, path, "efficiency");
  if (!curve.IsSequence() || curve.size() == 0) r.fail(curve, "device.efficiency", "expected a non-empty list");
  for (std::size_t i = 0; i < curve.size(); ++i) {
    std::string at = fmt::format("device.efficiency[{}]", i);
    YAML::Node entry = curve[i];
    r.expect_map(entry, at, {"min_gflop", "efficiency"});
    EfficiencyPoint point;
    point.min_flops = r.number(r.required(entry, at, "min_gflop"), at + ".min_gflop", 0, false) * kGiga;
    point.efficiency = r.number(r.required(entry, at, "efficiency"), at + ".efficiency", 0, true);
    if (point.efficiency > 1) r.fail(entry["efficiency"], at + ".efficiency", "must be at most 1 (achieved/peak)");
    if (i == 0 && point.min_flops != 0) r.fail(entry["min_gflop"], at + ".min_gflop", "the first entry must start at 0");
    if (i > 0 && point.min_flops <= device.efficiency.back().min_flops) {
      r.fail(entry["min_gflop"], at + ".min_gflop", "must be larger than the previous entry's");
    }
    device.efficiency.push_back(point);
  }
  if (node["fused_attention"].IsDefined()) read_attention_table(r, node["fused_attention"], device);
  return device;
}

TopologyLevel read_level(YamlReader& r, const YAML::Node& node, std::size_t index) {
  std::string path = fmt::format("topology[{}]", index);
  r.expect_map(node, path, {"name", "link", "size", "bandwidth_gb_per_s", "latency_us", "kind"});
  TopologyLevel level;
  level.name = r.string(node, path, "name");
  static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
  if (!std::regex_match(level.name, identifier)) {
    r.fail(node["name"], path + ".name", fmt::format("'{}' is not an identifier (letters, digits, _)", level.name));
  }
  if (node["link"].IsDefined()) level.link = r.string(node, path, "link");
  level.size = r.positive_int(node, path, "size");
  level.bandwidth = r.positive(node, path, "bandwidth_gb_per_s") * kGiga;
  level.latency_s = r.non_negative(node, path, "latency_us") * kMicro;
  std::string kind = r.string(node, path, "kind");
  if (kind == "switch") level.kind = LinkKind::switch_fabric;
  else if (kind == "ring") level.kind = LinkKind::ring;
  else if (kind == "fat_tree") level.kind = LinkKind::fat_tree;
  else if (kind == "mesh") level.kind = LinkKind::mesh;
  else r.fail(node["kind"], path + ".kind", fmt::format("'{}' is not one of switch, ring, fat_tree, mesh", kind));
  return level;
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open hardware profile", file.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fleet file: name, description, groups [{profile, nodes}], links [{between: [A, B],
// bandwidth_gb_per_s, latency_us}] (README.md, "Mixed fleets"). Profiles given as relative
// paths are found beside the fleet file first.
Cluster parse_fleet(YamlReader& r, const YAML::Node& root, const std::string& source) {
  namespace fs = std::filesystem;
  r.expect_map(root, "", {"name", "description", "groups", "links"});
  const std::string name = r.string(root, "", "name");
  YAML::Node list = r.required(root, "", "groups");
  if (!list.IsSequence() || list.size() < 2) r.fail(list, "groups", "expected a list of at least two groups");
  std::vector<Cluster> parts;
  std::vector<std::string> written;  // each group's profile as written
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("groups[{}]", i);
    r.expect_map(list[i], at, {"profile", "nodes"});
    std::string profile = r.string(list[i], at, "profile");
    const fs::path beside = fs::path(source).parent_path() / profile;
    if (profile.find('/') != std::string::npos && !fs::path(profile).is_absolute() && fs::exists(beside)) profile = beside.string();
    Cluster part;
    try {
      part = load_cluster(profile);
      if (list[i]["nodes"].IsDefined()) part = scale_cluster(std::move(part), r.positive_int(list[i], at, "nodes"), std::nullopt);
    } catch (const std::runtime_error& e) {
      r.fail(list[i], at, e.what());
    }
    written.push_back(r.string(list[i], at, "profile"));
    parts.push_back(std::move(part));
  }
  std::vector<GroupLink> links;
  if (root["links"].IsDefined()) {
    YAML::Node stated = root["links"];
    if (!stated.IsSequence()) r.fail(stated, "links", "expected a list of links");
    for (std::size_t i = 0; i < stated.size(); ++i) {
      const std::string at = fmt::format("links[{}]", i);
      r.expect_map(stated[i], at, {"between", "bandwidth_gb_per_s", "latency_us"});
      YAML::Node between = r.required(stated[i], at, "between");
      if (!between.IsSequence() || between.size() != 2) r.fail(between, at + ".between", "expected two group names");
      int ends[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        const std::string group = between[k].IsScalar() ? between[k].Scalar() : "";
        for (std::size_t g = 0; g < parts.size(); ++g)
          if (group == parts[g].name || group == written[g]) ends[k] = static_cast<int>(g);
        if (ends[k] < 0) {
          std::string known;
          for (const Cluster& part : parts) known += (known.empty() ? "" : ", ") + part.name;
          r.fail(between[k], at + ".between", fmt::format("'{}' names no group (groups: {})", group, known));
        }
      }
      if (ends[0] == ends[1]) r.fail(between, at + ".between", "a link joins two different groups");
      for (const GroupLink& l : links)
        if ((l.a == ends[0] && l.b == ends[1]) || (l.a == ends[1] && l.b == ends[0]))
          r.fail(between, at + ".between", "this pair's link is already given");
      GroupLink link;
      link.a = ends[0], link.b = ends[1];
      link.bandwidth = r.positive(stated[i], at, "bandwidth_gb_per_s") * kGiga;
      link.latency_s = r.non_negative(stated[i], at, "latency_us") * kMicro;
      links.push_back(link);
    }
  }
  Cluster fleet;
  try {
    fleet = make_fleet(name, parts, links);
  } catch (const std::runtime_error& e) {
    r.fail(list, "groups", e.what());
  }
  fleet.source = source;
  if (root["description"].IsDefined()) fleet.description = r.string(root, "", "description");
  return fleet;
}

// "a+b+c": each part a profile name, NAMExNODES or a path; errors name the part.
Cluster load_fleet(const std::string& spec) {
  std::vector<Cluster> parts;
  std::size_t begin = 0;
  for (int index = 1;; ++index) {
    const std::size_t end = spec.find('+', begin);
    const std::string part = spec.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (part.empty())
      throw std::runtime_error(fmt::format("--cluster '{}': part {} is empty (profiles joined by '+', e.g. "
                                           "dgx-h100x2+dgx-a100x4)", spec, index));
    try {
      parts.push_back(load_cluster(part));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("--cluster '{}': part {} '{}': {}", spec, index, part, e.what()));
    }
    if (parts.back().mixed())
      throw std::runtime_error(fmt::format("--cluster '{}': part {} '{}' is itself a fleet", spec, index, part));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  // Each part named as written (dgx-h100x2 is 'dgx-h100', its nodes apart).
  try {
    return make_fleet(spec, parts);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("--cluster: {}", e.what()));
  }
}

}  // namespace

Cluster parse_cluster(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: YAML syntax: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  YamlReader r(source);
  if (!root.IsMap()) r.fail(root, "(top level)", "expected a mapping with name, device, topology");
  if (root["groups"].IsDefined()) return parse_fleet(r, root, source);
  r.expect_map(root, "", {"name", "description", "device", "topology", "price_per_gpu_hour_usd", "power_w"});

  Cluster cluster;
  cluster.source = source;
  cluster.name = r.string(root, "", "name");
  if (root["description"].IsDefined()) cluster.description = r.string(root, "", "description");
  cluster.device = read_device(r, r.required(root, "", "device"));

  YAML::Node topology = r.required(root, "", "topology");
  if (!topology.IsSequence() || topology.size() == 0) {
    r.fail(topology, "topology", "expected a non-empty list of levels, innermost first");
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < topology.size(); ++i) {
    TopologyLevel level = read_level(r, topology[i], i);
    if (!names.insert(level.name).second) {
      r.fail(topology[i]["name"], fmt::format("topology[{}].name", i), fmt::format("level name '{}' repeated", level.name));
    }
    cluster.levels.push_back(level);
  }
  long long devices = 1;
  for (const TopologyLevel& level : cluster.levels) {
    devices *= level.size;
    if (devices > 10'000'000) r.fail(topology, "topology", "more than 10 million devices in all");
  }

  cluster.price_per_gpu_hour = r.optional_positive(root, "", "price_per_gpu_hour_usd");
  cluster.power_w = r.optional_positive(root, "", "power_w");
  return cluster;
}

std::string profile_directory() {
  if (const char* env = std::getenv("SYMTENSOR_PROFILE_DIR")) return env;
  return SYMTENSOR_PROFILE_DIR;
}

std::vector<std::string> list_profiles() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(profile_directory(), error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  if (error) throw std::runtime_error(fmt::format("{}: cannot list hardware profiles: {}", profile_directory(), error.message()));
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> similar_profiles(const std::string& name) { return similar_names(name, list_profiles()); }

Cluster load_cluster(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  if (name_or_path.empty()) throw std::runtime_error("hardware profile: empty name");
  if (name_or_path.find('+') != std::string::npos) return load_fleet(name_or_path);
  bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                         fs::path(name_or_path).extension() == ".yaml" || fs::path(name_or_path).extension() == ".yml";
  if (looks_like_path) return parse_cluster(read_text(name_or_path), name_or_path);

  // Bundled names are matched whatever their case: DGX-H100 is dgx-h100.
  if (const std::string stem = name_in_any_case(name_or_path, list_profiles()); !stem.empty()) {
    const fs::path bundled = fs::path(profile_directory()) / (stem + ".yaml");
    return parse_cluster(read_text(bundled), bundled.string());
  }

  static const std::regex shorthand("(.+)[xX]([0-9]{1,7})");
  std::smatch match;
  std::string base_name = name_or_path, nodes;
  if (std::regex_match(name_or_path, match, shorthand)) {
    base_name = match[1].str(), nodes = match[2].str();
    if (const std::string stem = name_in_any_case(base_name, list_profiles()); !stem.empty()) {
      const fs::path base = fs::path(profile_directory()) / (stem + ".yaml");
      Cluster cluster = parse_cluster(read_text(base), base.string());
      return scale_cluster(std::move(cluster), std::stoi(nodes), std::nullopt);
    }
  }
  std::string known;
  for (const std::string& name : list_profiles()) known += (known.empty() ? "" : ", ") + name;
  std::vector<std::string> near;
  std::string suffix;  // "dgx-h10x4": did you mean dgx-h100x4
  if (!nodes.empty()) near = similar_profiles(base_name), suffix = "x" + nodes;
  if (near.empty()) near = similar_profiles(name_or_path), suffix.clear();
  throw std::runtime_error(fmt::format("unknown hardware profile '{}'{} (bundled: {}; or give a path to a .yaml file, or NAMExNODES)",
                                       name_or_path, did_you_mean(near, suffix), known));
}

}  // namespace symtensor::hardware
