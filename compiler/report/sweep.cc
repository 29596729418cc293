#include "compiler/report/sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "compiler/onnx_import/import.h"
#include "compiler/report/evaluate.h"
#include "compiler/report/process_pool.h"
#include "compiler/base/units.h"
#include "hardware/names.h"

namespace symtensor::compiler {
namespace {

int parse_count(const std::string& text) {
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < 1)
    throw std::runtime_error("--gpus: '" + text + "' is not a positive integer");
  return v;
}

}  // namespace

std::vector<int> parse_gpu_counts(const std::string& text) {
  std::vector<int> out;
  if (const auto dots = text.find(".."); dots != std::string::npos) {
    const int lo = parse_count(text.substr(0, dots)), hi = parse_count(text.substr(dots + 2));
    if (lo > hi) throw std::runtime_error("--gpus " + text + ": the range is empty");
    for (long long g = lo; g <= hi; g *= 2) out.push_back(static_cast<int>(g));
    return out;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.push_back(parse_count(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

hardware::Cluster scaled_to(const hardware::Cluster& base, const std::string& name, int gpus) {
  const int per_node = base.devices_per_node();
  if (gpus <= per_node) return hardware::scale_cluster(base, std::nullopt, gpus);
  if (gpus % per_node != 0)
    throw std::runtime_error(name + ": " + std::to_string(gpus) + " GPUs is not a whole number of " +
                             std::to_string(per_node) + "-GPU nodes");
  return hardware::scale_cluster(base, gpus / per_node, std::nullopt);
}

// The best plan of one cluster and size.
SweepPoint sweep_point(Graph& graph, const SweepOptions& options, const std::string& name, int gpus,
                       double tokens_per_sample, const PalmFlops& palm) {
  SweepPoint p;
  p.cluster = name;
  p.gpus = gpus;
  std::optional<EvaluatedPlan> best;
  try {
    const hardware::Cluster cluster = cluster_of_size(name, gpus, options.software);
    p.memory_capacity_bytes = cluster.device.memory_bytes;
    const auto given = options.prices.find(name);
    p.price_per_gpu_hour = given != options.prices.end() ? given->second : cluster.price_per_gpu_hour.value_or(0);
    for (const std::string& strategy : options.strategies) {
      try {
        EvaluatedPlan e = evaluate_strategy(strategy, graph, cluster, options.strategy);
        if (!e.estimate.fits) {
          p.rejected.push_back(e.label + ": needs " + format_bytes(e.estimate.peak_memory) + " of " +
                               format_bytes(e.estimate.memory_capacity));
          continue;
        }
        if (!best || e.estimate.step_time_s < best->estimate.step_time_s) {
          if (best) p.rejected.push_back(best->label + ": slower");
          best = std::move(e);
        } else {
          p.rejected.push_back(e.label + ": slower");
        }
      } catch (const std::exception& ex) {
        p.rejected.push_back(ex.what());
      }
    }
    if (best) p.mfu_6n = palm_mfu(palm, best->plan.mode == ExecutionMode::train, best->plan.precision, cluster, best->estimate.samples_per_s);
  } catch (const std::exception& ex) {
    p.error = ex.what();
  }
  if (best) {
    const StepEstimate& e = best->estimate;
    p.ok = true;
    p.strategy = best->label;
    p.step_time_s = e.step_time_s;
    p.samples_per_s = e.samples_per_s;
    p.tokens_per_s = e.samples_per_s * tokens_per_sample;
    p.mfu = e.mfu;
    p.peak_memory_bytes = e.peak_memory;
    p.memory = memory_breakdown(graph, best->plan, best->analysis);
    if (p.tokens_per_s > 0) {
      p.time_to_train_s = options.tokens / p.tokens_per_s;
      p.cost_usd = gpus * p.time_to_train_s / 3600.0 * p.price_per_gpu_hour;
      p.cost_per_million_tokens = p.cost_usd / options.tokens * 1e6;
    }
  } else if (p.error.empty()) {
    p.error = "no strategy gives a plan that fits";
  }
  return p;
}

// A point as one line of JSON between worker processes; numbers round-trip exactly.
std::string point_text(const SweepPoint& p) {
  return nlohmann::json{{"cluster", p.cluster},
                        {"gpus", p.gpus},
                        {"ok", p.ok},
                        {"error", p.error},
                        {"strategy", p.strategy},
                        {"evaluator", p.evaluator},
                        {"numbers",
                         {p.step_time_s, p.samples_per_s, p.tokens_per_s, p.mfu, p.peak_memory_bytes,
                          p.memory_capacity_bytes, p.price_per_gpu_hour, p.time_to_train_s, p.cost_usd,
                          p.cost_per_million_tokens}},
                        {"mfu_6n", p.mfu_6n ? nlohmann::json(*p.mfu_6n) : nlohmann::json(nullptr)},
                        {"rejected", p.rejected},
                        {"memory_breakdown", memory_breakdown_json(p.memory)}}
      .dump();
}

SweepPoint point_from_text(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  SweepPoint p;
  p.cluster = j.at("cluster");
  p.gpus = j.at("gpus");
  p.ok = j.at("ok");
  p.error = j.at("error");
  p.strategy = j.at("strategy");
  p.evaluator = j.at("evaluator");
  double* numbers[] = {&p.step_time_s,  &p.samples_per_s,      &p.tokens_per_s,    &p.mfu,      &p.peak_memory_bytes,
                       &p.memory_capacity_bytes, &p.price_per_gpu_hour, &p.time_to_train_s, &p.cost_usd,
                       &p.cost_per_million_tokens};
  const auto& values = j.at("numbers");
  for (std::size_t k = 0; k < std::size(numbers); ++k) *numbers[k] = values.at(k).get<double>();
  if (!j.at("mfu_6n").is_null()) p.mfu_6n = j.at("mfu_6n").get<double>();
  p.rejected = j.at("rejected").get<std::vector<std::string>>();
  p.memory = memory_breakdown_from_json(j.at("memory_breakdown"));
  return p;
}

}  // namespace

hardware::Cluster cluster_of_size(const std::string& name, int gpus, const hardware::Software& software) {
  return hardware::with_software(scaled_to(hardware::load_cluster(name), name, gpus), software);
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  int k = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used_k = 0, used_n = 0;
    k = std::stoi(text.substr(0, slash), &used_k);
    n = std::stoi(text.substr(slash + 1), &used_n);
    if (used_k != slash || used_n != text.size() - slash - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw std::runtime_error("--shard: expected K/N (e.g. 2/8), got '" + text + "'");
  }
  if (n < 1 || k < 1 || k > n) throw std::runtime_error("--shard: K/N needs 1 <= K <= N, got '" + text + "'");
  return {k, n};
}

std::map<std::string, double> parse_prices(const std::string& text, const std::vector<std::string>& clusters) {
  std::map<std::string, double> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::runtime_error("--price: expected GPU=USD/h (e.g. dgx-h100=2.5 or H100-SXM5-80GB=2.5), got '" + item + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    double usd = 0;
    std::size_t used = 0;
    try {
      usd = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !(usd > 0) || !std::isfinite(usd))
      throw std::runtime_error("--price " + item + ": '" + value + "' is not a positive price in USD per GPU-hour");
    bool named = false;
    std::string known;
    for (const std::string& c : clusters) {
      const std::string gpu = hardware::load_cluster(c).device.name;
      known += (known.empty() ? "" : ", ") + c + " (" + gpu + ")";
      if (!hardware::name_in_any_case(key, {c, gpu}).empty()) out[c] = usd, named = true;
    }
    if (!named)
      throw std::runtime_error("--price " + item + ": '" + key + "' is none of the swept clusters or their GPUs: " + known);
  }
  if (out.empty()) throw std::runtime_error("--price: expected GPU=USD/h, got nothing");
  return out;
}

SweepResults run_sweep(const SweepOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ImportOptions io;
  io.bindings = parse_bindings(options.bind);
  io.fusion = options.fusion;
  io.batch_dim = options.batch_dim;
  io.sequence_dim = options.sequence_dim;
  io.warn_opaque = false;
  Graph graph = import_onnx_file(options.model, io);

  SweepResults r;
  r.model = options.model;
  r.bindings = graph.symbols.bindings();
  r.tokens_per_sample = bound_sequence_length(graph);
  r.palm = palm_flops(graph);
  r.tokens = options.tokens;
  r.prices_given = options.prices;
  r.clusters = options.clusters;
  r.gpus = options.gpus;
  r.shard_index = options.shard_index;
  r.shard_count = options.shard_count;
  std::vector<std::pair<std::string, int>> where;
  std::size_t index = 0;
  for (const std::string& name : options.clusters)
    for (int gpus : options.gpus)
      if (index++ % static_cast<std::size_t>(options.shard_count) == static_cast<std::size_t>(options.shard_index - 1))
        where.emplace_back(name, gpus);
  r.points.resize(where.size());
  // Larger clusters take longer to search: they go out first.
  std::vector<std::size_t> order(where.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return where[a].second > where[b].second; });
  std::size_t finished = 0;
  auto record = [&](std::size_t i, SweepPoint p) {
    r.points[i] = std::move(p);
    ++finished;
    if (!options.progress) return;
    const SweepPoint& q = r.points[i];
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    options.progress("sweep [" + std::to_string(finished) + "/" + std::to_string(where.size()) + "] " + q.cluster + " x" +
                     std::to_string(q.gpus) + ": " +
                     (q.ok ? q.strategy + ", " + format_seconds(q.step_time_s) + " per step" : "no plan (" + q.error + ")") +
                     " (" + format_seconds(elapsed) + " elapsed)");
  };
  run_in_workers(
      order, options.jobs,
      [&](std::size_t i) {
        return point_text(sweep_point(graph, options, where[i].first, where[i].second, r.tokens_per_sample, r.palm));
      },
      [&](std::size_t i, const std::string& text) { record(i, point_from_text(text)); },
      [&](std::size_t i, const std::string& error) {
        SweepPoint p;
        p.cluster = where[i].first;
        p.gpus = where[i].second;
        p.error = error;
        record(i, std::move(p));
      });
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace symtensor::compiler
