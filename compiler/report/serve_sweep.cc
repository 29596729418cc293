#include "compiler/report/serve_sweep.h"

#include <chrono>

#include <fmt/format.h>

#include "hardware/serving_engine.h"

namespace symtensor::compiler {
namespace {

// The profile as `serve` takes it (no training stack): at `nodes`, or resized to `gpus` (part of
// one node or whole nodes, as sweep sizes its points).
hardware::Cluster serve_cluster_of_size(const std::string& name, std::optional<int> gpus, std::optional<int> nodes) {
  const hardware::Cluster base = hardware::load_cluster(name);
  if (!gpus) return hardware::scale_cluster(base, nodes, std::nullopt);
  const int per_node = base.devices_per_node();
  if (*gpus <= per_node) return hardware::scale_cluster(base, std::nullopt, *gpus);
  if (*gpus % per_node != 0)
    throw std::runtime_error(fmt::format("{}: {} GPUs is not a whole number of {}-GPU nodes", name, *gpus, per_node));
  return hardware::scale_cluster(base, *gpus / per_node, std::nullopt);
}

ServeSweepRow serve_sweep_row(const ServingModel& model, const ServeSweepOptions& o, const hardware::ServingEngine& engine,
                              const std::string& name, std::optional<int> gpus) {
  const auto t0 = std::chrono::steady_clock::now();
  ServeSweepRow row;
  row.cluster = name;
  try {
    const hardware::Cluster cluster = serve_cluster_of_size(name, gpus, o.nodes);
    row.device = cluster.device.name;
    row.cluster_gpus = cluster.num_devices();
    const auto given = o.prices.find(name);
    row.price_given = given != o.prices.end();
    row.price_per_gpu_hour = row.price_given ? given->second : cluster.price_per_gpu_hour.value_or(0);
    const ServeSearchResult r = search_serving(model, o.precision, cluster, engine, o.search);
    row.why = r.why;
    if (const std::optional<ServeAnswer> a = serve_answer(r)) {
      row.ok = true;
      row.answer = *a;
      row.output_tokens_per_hour = a->output_tokens_per_s * 3600;
      row.cost_per_hour = a->gpus * row.price_per_gpu_hour;
      row.cost_per_million_output_tokens = cost_per_million_output_tokens(a->gpus, row.price_per_gpu_hour, a->output_tokens_per_s);
    } else {
      row.error = fmt::format("no layout meets the SLOs at {} requests/s on {} GPUs", o.search.rate, row.cluster_gpus);
      // The aggregated layout closest to them, and why it falls short.
      const ServeCandidate* closest = nullptr;
      for (const ServeCandidate& c : r.candidates)
        if (!closest || c.attainment >= closest->attainment) closest = &c;  // on a tie the largest replica
      if (closest && !closest->why.empty())
        row.error += fmt::format(" (closest, tp={} pp={}: {})", closest->layout.tp, closest->layout.pp, closest->why);
    }
  } catch (const std::exception& e) {
    row.error = e.what();
  }
  row.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return row;
}

}  // namespace

double cost_per_million_output_tokens(int gpus, double usd_per_gpu_hour, double output_tokens_per_s) {
  if (!(usd_per_gpu_hour > 0) || !(output_tokens_per_s > 0)) return 0;
  return gpus * usd_per_gpu_hour / (output_tokens_per_s * 3600 / 1e6);
}

ServeSweepResults run_serve_sweep(const ServingModel& model, const ServeSweepOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const hardware::ServingEngine engine = hardware::load_serving_engine(o.engine);
  ServeSweepResults r;
  r.model = model.name;
  r.engine = engine.name;
  r.precision = std::string(hardware::to_string(o.precision.weights));
  r.kv_precision = std::string(hardware::to_string(o.precision.kv));
  r.rate = o.search.rate;
  r.attainment = o.search.attainment;
  r.input_tokens = o.search.input_tokens;
  r.output_tokens = o.search.output_tokens;
  r.slo = o.search.slo;
  std::vector<std::pair<std::string, std::optional<int>>> where;
  for (const std::string& name : o.clusters) {
    if (o.gpus.empty()) where.emplace_back(name, std::nullopt);
    for (int g : o.gpus) where.emplace_back(name, g);
  }
  for (const auto& [name, gpus] : where) {
    r.rows.push_back(serve_sweep_row(model, o, engine, name, gpus));
    if (o.progress) {
      const ServeSweepRow& row = r.rows.back();
      o.progress(fmt::format("sweep --serve [{}/{}] {} ({} GPUs): {} ({:.2f} s)", r.rows.size(), where.size(), name,
                             row.cluster_gpus, row.ok ? row.answer.layout : "no layout: " + row.error, row.search_s));
    }
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace symtensor::compiler
