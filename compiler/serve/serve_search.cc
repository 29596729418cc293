#include "compiler/serve/serve_search.h"

#include <optional>

#include <fmt/format.h>

#include "compiler/serve/serve_report.h"

namespace symtensor::compiler {
namespace {

// One replica of `layout` serving 1/replicas of the rate.
ServeCandidate try_replicas(const ServingCost& cost, const ServeSearchOptions& o, int replicas) {
  sim::ServingWorkload w;
  w.mode = sim::ArrivalMode::poisson;
  w.rate = o.rate / replicas;
  w.requests = o.requests_per_replica;
  w.input_tokens = o.input_tokens;
  w.output_tokens = o.output_tokens;
  w.seed = o.seed;
  const ServeResult r = run_serving(cost, w, o.slo);
  ServeCandidate c;
  c.layout = cost.layout();
  c.layout.replicas = replicas;
  c.attainment = r.metrics.slo_attainment;
  c.meets = c.attainment >= o.attainment;
  // The replicas together: each serves its share of the rate.
  c.goodput_tokens_per_s = r.metrics.goodput_output_tokens_per_s * replicas;
  c.output_tokens_per_s = r.metrics.output_tokens_per_s * replicas;
  c.ttft_p90_s = r.metrics.ttft.p90;
  c.tpot_p90_s = r.metrics.tpot.p90;
  return c;
}

}  // namespace

ServeSearchResult search_serving(const ServingModel& model, const ServingPrecision& precision, const hardware::Cluster& cluster,
                                 const hardware::ServingEngine& engine, const ServeSearchOptions& o) {
  if (!(o.rate > 0)) throw std::runtime_error("serve: the search needs --rate");
  if (o.slo.ttft_s <= 0 && o.slo.tpot_s <= 0) throw std::runtime_error("serve: the search needs --slo-ttft or --slo-tpot");
  ServeSearchResult result;
  const int gpus = cluster.num_devices(), per_node = cluster.devices_per_node();
  for (int tp = 1; tp <= per_node && tp <= gpus; tp *= 2) {
    if (model.heads % tp != 0) continue;
    for (int pp = 1; pp <= 4 && tp * pp <= gpus && pp <= model.layers; pp *= 2) {
      ServingLayout layout;
      layout.tp = tp;
      layout.pp = pp;
      ServeCandidate c;
      c.layout = layout;
      std::optional<ServingCost> cost;
      try {
        cost.emplace(model, layout, precision, cluster, engine);
      } catch (const std::exception& e) {
        c.why = e.what();
        result.candidates.push_back(c);
        continue;
      }
      const int most = gpus / (tp * pp);
      ServeCandidate at_most = try_replicas(*cost, o, most);
      if (!at_most.meets) {
        at_most.why = fmt::format("misses the SLOs even with {} replicas ({:.0f}% of requests meet them)", most,
                                  100 * at_most.attainment);
        result.candidates.push_back(at_most);
        continue;
      }
      int lo = 0, hi = most;  // lo fails (or 0), hi meets
      ServeCandidate best = at_most;
      while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        ServeCandidate m = try_replicas(*cost, o, mid);
        if (m.meets) {
          hi = mid;
          best = m;
        } else {
          lo = mid;
        }
      }
      result.candidates.push_back(best);
    }
  }
  for (int i = 0; i < static_cast<int>(result.candidates.size()); ++i) {
    const ServeCandidate& c = result.candidates[i];
    if (!c.meets) continue;
    auto better_count = [&](int j) {
      const ServeCandidate& b = result.candidates[j];
      return c.layout.gpus() < b.layout.gpus() || (c.layout.gpus() == b.layout.gpus() && c.goodput_per_gpu() > b.goodput_per_gpu());
    };
    if (result.fewest_gpus < 0 || better_count(result.fewest_gpus)) result.fewest_gpus = i;
    if (result.best_goodput_per_gpu < 0 || c.goodput_per_gpu() > result.candidates[result.best_goodput_per_gpu].goodput_per_gpu())
      result.best_goodput_per_gpu = i;
  }
  return result;
}

std::string serve_search_text(const ServeSearchResult& r, const hardware::Cluster& cluster, const ServeSearchOptions& o) {
  std::string out = fmt::format("search     {} ({} GPUs of {}): {} requests/s of {} -> {} tokens, SLOs TTFT <= {} s, TPOT <= {} s "
                                "met by {:.0f}% of requests\n\n",
                                cluster.name, cluster.num_devices(), cluster.device.name, o.rate, o.input_tokens, o.output_tokens,
                                o.slo.ttft_s > 0 ? fmt::format("{}", o.slo.ttft_s) : "any",
                                o.slo.tpot_s > 0 ? fmt::format("{}", o.slo.tpot_s) : "any", 100 * o.attainment);
  out += fmt::format("  {:<14}{:>9}{:>6}{:>11}{:>13}{:>13}{:>20}\n", "replica", "replicas", "GPUs", "meet SLOs", "TTFT p90",
                     "TPOT p90", "goodput/GPU tok/s");
  for (int i = 0; i < static_cast<int>(r.candidates.size()); ++i) {
    const ServeCandidate& c = r.candidates[i];
    const std::string name = fmt::format("tp={} pp={}", c.layout.tp, c.layout.pp);
    if (!c.why.empty() && !c.meets) {
      out += fmt::format("  {:<14}{}\n", name, c.why);
      continue;
    }
    std::string mark;
    if (i == r.fewest_gpus) mark += " fewest GPUs";
    if (i == r.best_goodput_per_gpu) mark += " most goodput/GPU";
    out += fmt::format("  {:<14}{:>9}{:>6}{:>10.0f}%{:>10.1f} ms{:>10.1f} ms{:>20.1f} {}\n", name, c.layout.replicas, c.layout.gpus(),
                       100 * c.attainment, c.ttft_p90_s * 1e3, c.tpot_p90_s * 1e3, c.goodput_per_gpu(), mark);
  }
  if (r.fewest_gpus < 0) out += "\nno layout meets the SLOs at this rate on this cluster (more nodes: --nodes)\n";
  return out;
}

}  // namespace symtensor::compiler
