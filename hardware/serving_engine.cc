// Loads and validates serving engines (schema: hardware/engines/README.md).
#include "hardware/serving_engine.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "hardware/names.h"
#include "hardware/yaml_reader.h"

namespace symtensor::hardware {
namespace {

bool read_bool(YamlReader& r, const YAML::Node& map, const std::string& path, const std::string& key) {
  const YAML::Node value = r.required(map, path, key);
  if (!value.IsScalar() || (value.Scalar() != "true" && value.Scalar() != "false"))
    r.fail(value, YamlReader::join(path, key), "expected true or false");
  return value.Scalar() == "true";
}

double fraction(YamlReader& r, const YAML::Node& map, const std::string& path, const std::string& key) {
  const double v = r.positive(map, path, key);
  if (v > 1) r.fail(map[key], YamlReader::join(path, key), fmt::format("must be a fraction in (0, 1], got {}", v));
  return v;
}

void read_kernels(YamlReader& r, const YAML::Node& node, const std::string& path, EngineKernels& k, bool with_gpus) {
  if (with_gpus) r.expect_map(node, path, {"gpu", "prefill", "decode_compute", "hbm", "source"});
  else r.expect_map(node, path, {"prefill", "decode_compute", "hbm", "source"});
  k.prefill = fraction(r, node, path, "prefill");
  k.decode_compute = fraction(r, node, path, "decode_compute");
  k.hbm = fraction(r, node, path, "hbm");
  k.source = r.string(node, path, "source");
  if (!with_gpus) return;
  const YAML::Node gpus = r.required(node, path, "gpu");
  if (gpus.IsScalar()) k.gpus.push_back(gpus.Scalar());
  else if (gpus.IsSequence())
    for (const YAML::Node& g : gpus) k.gpus.push_back(g.IsScalar() ? g.Scalar() : "");
  if (k.gpus.empty() || std::count(k.gpus.begin(), k.gpus.end(), "") > 0)
    r.fail(gpus, path + ".gpu", "must name GPUs (prefixes of profiles' device.name), one or a list");
}

}  // namespace

const EngineKernels& ServingEngine::kernels_for(const std::string& device_name) const {
  const EngineKernels* best = &kernels;
  std::size_t best_length = 0;
  for (const EngineKernels& k : gpu_kernels)
    for (const std::string& prefix : k.gpus)
      if (device_name.rfind(prefix, 0) == 0 && prefix.size() > best_length) {
        best = &k;
        best_length = prefix.size();
      }
  return *best;
}

ServingEngine parse_serving_engine(const std::string& yaml_text, const std::string& source) {
  YamlReader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(fmt::format("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  r.expect_map(root, "", {"name", "description", "memory", "scheduler", "overhead", "kernels", "gpu_kernels"});
  ServingEngine e;
  e.source = source;
  e.name = r.string(root, "", "name");
  if (root["description"].IsDefined()) e.description = r.string(root, "", "description");

  const YAML::Node memory = r.required(root, "", "memory");
  r.expect_map(memory, "memory", {"fraction", "fraction_of", "other_gb"});
  e.memory_fraction = fraction(r, memory, "memory", "fraction");
  const std::string of = r.string(memory, "memory", "fraction_of");
  if (of != "free" && of != "total") r.fail(memory["fraction_of"], "memory.fraction_of", "expected free or total");
  e.fraction_of_free = of == "free";
  e.other_bytes = r.non_negative(memory, "memory", "other_gb") * (1ull << 30);

  const YAML::Node s = r.required(root, "", "scheduler");
  r.expect_map(s, "scheduler", {"block_size", "max_batch", "max_num_tokens", "chunked_prefill", "reserve_whole_request"});
  e.block_size = r.positive_int(s, "scheduler", "block_size");
  e.max_batch = r.positive_int(s, "scheduler", "max_batch");
  e.max_num_tokens = r.positive_int(s, "scheduler", "max_num_tokens");
  e.chunked_prefill = read_bool(r, s, "scheduler", "chunked_prefill");
  e.reserve_whole_request = read_bool(r, s, "scheduler", "reserve_whole_request");

  const YAML::Node o = r.required(root, "", "overhead");
  r.expect_map(o, "overhead", {"step_ms", "layer_us"});
  e.step_overhead_s = r.non_negative(o, "overhead", "step_ms") * 1e-3;
  e.layer_overhead_s = r.non_negative(o, "overhead", "layer_us") * 1e-6;

  read_kernels(r, r.required(root, "", "kernels"), "kernels", e.kernels, false);
  if (const YAML::Node list = root["gpu_kernels"]; list.IsDefined()) {
    if (!list.IsSequence()) r.fail(list, "gpu_kernels", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      EngineKernels k;
      read_kernels(r, list[i], fmt::format("gpu_kernels[{}]", i), k, true);
      e.gpu_kernels.push_back(k);
    }
  }
  return e;
}

std::string serving_engine_directory() { return SYMTENSOR_ENGINE_DIR; }

std::vector<std::string> list_serving_engines() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(serving_engine_directory()))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ServingEngine load_serving_engine(const std::string& name_or_path) {
  std::filesystem::path path = name_or_path;
  if (path.extension() != ".yaml") {
    const std::vector<std::string> bundled = list_serving_engines();
    const std::string name = name_in_any_case(name_or_path, bundled);
    if (name.empty()) {
      std::string known;
      for (const std::string& n : bundled) known += (known.empty() ? "" : ", ") + n;
      throw std::runtime_error(fmt::format("--stack: unknown serving engine '{}'{} (bundled: {}; or a path to a .yaml file)",
                                           name_or_path, did_you_mean(similar_names(name_or_path, bundled)), known));
    }
    path = std::filesystem::path(serving_engine_directory()) / (name + ".yaml");
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read the serving engine file", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return parse_serving_engine(text.str(), path.string());
}

}  // namespace symtensor::hardware
