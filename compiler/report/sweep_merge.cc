#include "compiler/report/sweep_merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/report/report_files.h"

namespace symtensor::compiler {
namespace {

double number_or_zero(const nlohmann::json& row, const char* key) {
  const auto it = row.find(key);
  return it == row.end() || it->is_null() ? 0.0 : it->get<double>();
}

}  // namespace

SweepResults sweep_from_json(const nlohmann::json& j, const std::string& source) {
  const char* key = "model";
  try {
    SweepResults r;
    r.model = j.at(key).get<std::string>();
    key = "bindings";
    r.bindings = j.at(key).get<std::map<std::string, double>>();
    key = "tokens_per_sample";
    r.tokens_per_sample = number_or_zero(j, key);
    key = "tokens";
    r.tokens = number_or_zero(j, key);
    key = "clusters";
    r.clusters = j.at(key).get<std::vector<std::string>>();
    key = "gpus";
    r.gpus = j.at(key).get<std::vector<int>>();
    key = "elapsed_s";
    r.elapsed_s = number_or_zero(j, key);
    key = "palm_flops";
    if (j.contains(key)) r.palm = palm_flops_from_json(j.at(key));
    key = "shard";
    if (j.contains(key)) r.shard_index = j.at(key).at("index"), r.shard_count = j.at(key).at("count");
    key = "prices_given";
    if (j.contains(key)) r.prices_given = j.at(key).get<std::map<std::string, double>>();
    key = "points";
    for (const auto& row : j.at(key)) {
      SweepPoint p;
      p.cluster = row.at("cluster");
      p.gpus = row.at("gpus");
      p.ok = row.at("ok");
      p.rejected = row.at("rejected").get<std::vector<std::string>>();
      if (!p.ok) {
        p.error = row.at("error");
      } else {
        p.strategy = row.at("strategy");
        p.evaluator = row.at("evaluator");
        p.step_time_s = number_or_zero(row, "step_time_s");
        p.samples_per_s = number_or_zero(row, "samples_per_s");
        p.tokens_per_s = number_or_zero(row, "tokens_per_s");
        p.mfu = number_or_zero(row, "mfu");
        if (row.contains("mfu_6n") && !row.at("mfu_6n").is_null()) p.mfu_6n = row.at("mfu_6n").get<double>();
        p.peak_memory_bytes = number_or_zero(row, "peak_memory_bytes");
        p.memory_capacity_bytes = number_or_zero(row, "memory_capacity_bytes");
        p.price_per_gpu_hour = number_or_zero(row, "price_per_gpu_hour");
        p.time_to_train_s = number_or_zero(row, "time_to_train_s");
        p.cost_usd = number_or_zero(row, "cost_usd");
        p.cost_per_million_tokens = number_or_zero(row, "cost_per_million_tokens");
        if (row.contains("memory_breakdown")) p.memory = memory_breakdown_from_json(row.at("memory_breakdown"));
      }
      r.points.push_back(std::move(p));
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": key '" + key + "': " + e.what());
  }
}

SweepResults merge_sweeps(const std::vector<SweepResults>& parts, const std::vector<std::string>& sources) {
  if (parts.empty()) throw std::runtime_error("merge: no sweep results given");
  SweepResults out = parts.front();
  out.points.clear();
  out.elapsed_s = 0;
  std::set<int> shards;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const SweepResults& p = parts[i];
    const auto differs = [&](const char* what) {
      return std::runtime_error("merge: " + sources[i] + ": " + what + " differs from " + sources[0] + "'s");
    };
    if (p.model != out.model) throw differs("the model");
    if (p.bindings != out.bindings) throw differs("the bindings");
    if (p.tokens != out.tokens) throw differs("tokens");
    if (p.clusters != out.clusters) throw differs("the clusters");
    if (p.gpus != out.gpus) throw differs("the GPU counts");
    if (p.prices_given != out.prices_given) throw differs("--price");
    if (p.shard_count != out.shard_count) throw differs("the shard count");
    if (!shards.insert(p.shard_index).second)
      throw std::runtime_error("merge: " + sources[i] + ": shard " + std::to_string(p.shard_index) + "/" +
                               std::to_string(p.shard_count) + " given twice");
    out.elapsed_s = std::max(out.elapsed_s, p.elapsed_s);  // the shards ran side by side
    out.points.insert(out.points.end(), p.points.begin(), p.points.end());
  }
  for (int k = 1; k <= out.shard_count; ++k)
    if (!shards.count(k))
      throw std::runtime_error("merge: shard " + std::to_string(k) + "/" + std::to_string(out.shard_count) + " is missing");
  const auto rank = [&](const SweepPoint& p) {
    const auto c = std::find(out.clusters.begin(), out.clusters.end(), p.cluster) - out.clusters.begin();
    const auto g = std::find(out.gpus.begin(), out.gpus.end(), p.gpus) - out.gpus.begin();
    return std::pair(c, g);
  };
  std::stable_sort(out.points.begin(), out.points.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  out.shard_index = 1, out.shard_count = 1;
  return out;
}

SweepResults merge_sweep_dirs(const std::vector<std::string>& dirs) {
  std::vector<SweepResults> parts;
  std::vector<std::string> sources;
  for (const auto& dir : dirs) {
    const std::string path = (std::filesystem::path(dir) / "results.json").string();
    std::ifstream in(path);
    if (!in) throw std::runtime_error("merge: " + path + ": cannot be read");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error("merge: " + path + ": not JSON: " + e.what());
    }
    parts.push_back(sweep_from_json(j, path));
    sources.push_back(path);
  }
  return merge_sweeps(parts, sources);
}

}  // namespace symtensor::compiler
