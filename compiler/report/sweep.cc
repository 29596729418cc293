#include "compiler/report/sweep.h"

#include <chrono>
#include <optional>
#include <stdexcept>

#include "compiler/onnx_import/import.h"
#include "compiler/report/evaluate.h"
#include "compiler/report/units.h"

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

hardware::Cluster cluster_of_size(const std::string& name, int gpus) {
  hardware::Cluster base = hardware::load_cluster(name);
  const int per_node = base.devices_per_node();
  if (gpus <= per_node) return hardware::scale_cluster(base, std::nullopt, gpus);
  if (gpus % per_node != 0)
    throw std::runtime_error(name + ": " + std::to_string(gpus) + " GPUs is not a whole number of " +
                             std::to_string(per_node) + "-GPU nodes");
  return hardware::scale_cluster(base, gpus / per_node, std::nullopt);
}

SweepResults run_sweep(const SweepOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  ImportOptions io;
  io.bindings = parse_bindings(options.bind);
  io.warn_opaque = false;
  Graph graph = import_onnx_file(options.model, io);

  SweepResults r;
  r.model = options.model;
  r.bindings = graph.symbols.bindings();
  if (auto seq = r.bindings.find("seq"); seq != r.bindings.end()) r.tokens_per_sample = seq->second;
  r.tokens = options.tokens;
  r.clusters = options.clusters;
  r.gpus = options.gpus;
  const std::size_t total = options.clusters.size() * options.gpus.size();
  for (const std::string& name : options.clusters) {
    for (int gpus : options.gpus) {
      SweepPoint p;
      p.cluster = name;
      p.gpus = gpus;
      std::optional<EvaluatedPlan> best;
      try {
        const hardware::Cluster cluster = cluster_of_size(name, gpus);
        p.memory_capacity_bytes = cluster.device.memory_bytes;
        p.price_per_gpu_hour = cluster.price_per_gpu_hour.value_or(0);
        for (const std::string& strategy : options.strategies) {
          try {
            EvaluatedPlan e = evaluate_strategy(strategy, graph, cluster, StrategyOptions{});
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
      } catch (const std::exception& ex) {
        p.error = ex.what();
      }
      if (best) {
        const StepEstimate& e = best->estimate;
        p.ok = true;
        p.strategy = best->label;
        p.step_time_s = e.step_time_s;
        p.samples_per_s = e.samples_per_s;
        p.tokens_per_s = e.samples_per_s * r.tokens_per_sample;
        p.mfu = e.mfu;
        p.peak_memory_bytes = e.peak_memory;
        if (p.tokens_per_s > 0) {
          p.time_to_train_s = r.tokens / p.tokens_per_s;
          p.cost_usd = gpus * p.time_to_train_s / 3600.0 * p.price_per_gpu_hour;
          p.cost_per_million_tokens = p.cost_usd / r.tokens * 1e6;
        }
      } else if (p.error.empty()) {
        p.error = "no strategy gives a plan that fits";
      }
      r.points.push_back(p);
      if (options.progress) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        options.progress("sweep [" + std::to_string(r.points.size()) + "/" + std::to_string(total) + "] " + name +
                         " x" + std::to_string(gpus) + ": " +
                         (p.ok ? p.strategy + ", " + format_seconds(p.step_time_s) + " per step"
                               : "no plan (" + p.error + ")") +
                         " (" + format_seconds(elapsed) + " elapsed)");
      }
    }
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace symtensor::compiler
