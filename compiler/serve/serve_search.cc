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
  c.ttft_p99_s = r.metrics.ttft.p99;
  c.tpot_p99_s = r.metrics.tpot.p99;
  return c;
}

std::string aggregated_name(const ServeCandidate& c) {
  return fmt::format("tp={} pp={} x {}", c.layout.tp, c.layout.pp, c.layout.replicas);
}

std::string disaggregated_name(const ServeDisaggregatedCandidate& c) {
  return fmt::format("prefill {} x tp={} + decode {} x tp={}", c.prefill.replicas, c.prefill.tp, c.decode.replicas, c.decode.tp);
}

std::string search_ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }

// Aggregated or disaggregated (serve_search.h's rule), and why in a sentence.
void choose_kind(ServeSearchResult& r) {
  const ServeCandidate* agg = r.fewest_gpus >= 0 ? &r.candidates[r.fewest_gpus] : nullptr;
  const ServeDisaggregatedCandidate* dis = r.fewest_disaggregated >= 0 ? &r.disaggregated[r.fewest_disaggregated] : nullptr;
  if (!agg && !dis) {
    r.why = "no layout meets the SLOs at this rate on this cluster";
    return;
  }
  if (dis && (!agg || dis->gpus() < agg->layout.gpus() ||
              (dis->gpus() == agg->layout.gpus() && dis->goodput_per_gpu() > agg->goodput_per_gpu()))) {
    r.disaggregated_chosen = true;
    const std::string pools = fmt::format("disaggregated: {} ({} GPUs, the KV cache moved in {})", disaggregated_name(*dis),
                                          dis->gpus(), search_ms(dis->kv_transfer_s));
    // The aggregated layout to set it against: the fewest GPUs meeting the SLOs, else the one closest to them.
    const ServeCandidate* versus = agg;
    if (!agg)
      for (const ServeCandidate& c : r.candidates)
        if (c.attainment > 0 && (!versus || c.attainment > versus->attainment)) versus = &c;
    const std::string tpot = fmt::format("the decode pool's TPOT p99 is {} without prefill interference", search_ms(dis->tpot_p99_s));
    if (!agg) {
      r.why = pools + fmt::format("; no aggregated layout meets the SLOs on the cluster{}; {}",
                                  versus ? fmt::format(" (closest: {}, {:.0f}% of requests, TPOT p99 {}, prefills in its decode "
                                                       "steps)",
                                                       aggregated_name(*versus), 100 * versus->attainment, search_ms(versus->tpot_p99_s))
                                         : "",
                                  tpot);
    } else if (dis->gpus() < agg->layout.gpus()) {
      r.why = pools + fmt::format("; {} fewer GPU(s) than aggregated {} ({} GPUs, TPOT p99 {} with prefills in its decode steps): {}",
                                  agg->layout.gpus() - dis->gpus(), aggregated_name(*agg), agg->layout.gpus(),
                                  search_ms(agg->tpot_p99_s), tpot);
    } else {
      r.why = pools + fmt::format("; as many GPUs as aggregated {} and more goodput per GPU ({:.1f} against {:.1f} tokens/s): {}",
                                  aggregated_name(*agg), dis->goodput_per_gpu(), agg->goodput_per_gpu(), tpot);
    }
    return;
  }
  const std::string head =
      fmt::format("aggregated: {} ({} GPU{})", aggregated_name(*agg), agg->layout.gpus(), agg->layout.gpus() == 1 ? "" : "s");
  if (!dis) {
    r.why = head + (r.disaggregated.empty() ? "" : "; no disaggregated layout meets the SLOs on the cluster");
  } else if (dis->gpus() > agg->layout.gpus()) {
    r.why = head + fmt::format("; the fewest disaggregated, {}, needs {} GPUs: separate pools pay for prefill and decode apart "
                               "where one replica's batches do both within the SLOs",
                               disaggregated_name(*dis), dis->gpus());
  } else {
    r.why = head + fmt::format("; disaggregated {} needs as many GPUs for no more goodput per GPU ({:.1f} against {:.1f} tokens/s)",
                               disaggregated_name(*dis), dis->goodput_per_gpu(), agg->goodput_per_gpu());
  }
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
      ServeCandidate at_most;
      try {
        at_most = try_replicas(*cost, o, most);
      } catch (const std::exception& e) {  // e.g. a request the replica's KV cache cannot hold
        c.why = e.what();
        result.candidates.push_back(c);
        continue;
      }
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
  if (o.disaggregated) {
    result.disaggregated = search_disaggregated(model, precision, cluster, engine, o);
    for (int i = 0; i < static_cast<int>(result.disaggregated.size()); ++i) {
      const ServeDisaggregatedCandidate& c = result.disaggregated[i];
      if (!c.meets) continue;
      const int best = result.fewest_disaggregated;
      if (best < 0 || c.gpus() < result.disaggregated[best].gpus() ||
          (c.gpus() == result.disaggregated[best].gpus() && c.goodput_per_gpu() > result.disaggregated[best].goodput_per_gpu()))
        result.fewest_disaggregated = i;
    }
  }
  choose_kind(result);
  return result;
}

std::optional<ServeAnswer> serve_answer(const ServeSearchResult& r) {
  ServeAnswer a;
  const auto measured = [&a](const auto& c) {  // an aggregated or a disaggregated candidate
    a.goodput_tokens_per_s = c.goodput_tokens_per_s;
    a.output_tokens_per_s = c.output_tokens_per_s;
    a.attainment = c.attainment;
    a.ttft_p90_s = c.ttft_p90_s;
    a.tpot_p90_s = c.tpot_p90_s;
  };
  if (r.disaggregated_chosen) {
    const ServeDisaggregatedCandidate& c = r.disaggregated[r.fewest_disaggregated];
    a.disaggregated = true;
    a.layout = disaggregated_name(c);
    a.gpus = c.gpus();
    measured(c);
    return a;
  }
  if (r.fewest_gpus < 0) return std::nullopt;
  const ServeCandidate& c = r.candidates[r.fewest_gpus];
  a.layout = aggregated_name(c);
  a.gpus = c.layout.gpus();
  measured(c);
  return a;
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
  if (!r.disaggregated.empty()) {
    out += fmt::format("\n  {:<34}{:>6}{:>11}{:>13}{:>13}{:>20}\n", "disaggregated (prefill + decode)", "GPUs", "meet SLOs",
                       "TTFT p90", "TPOT p90", "goodput/GPU tok/s");
    for (int i = 0; i < static_cast<int>(r.disaggregated.size()); ++i) {
      const ServeDisaggregatedCandidate& c = r.disaggregated[i];
      if (!c.meets) {
        out += fmt::format("  tp={} + tp={}: {}\n", c.prefill.tp, c.decode.tp, c.why);
        continue;
      }
      out += fmt::format("  {:<34}{:>6}{:>10.0f}%{:>10.1f} ms{:>10.1f} ms{:>20.1f} {}\n", disaggregated_name(c), c.gpus(),
                         100 * c.attainment, c.ttft_p90_s * 1e3, c.tpot_p90_s * 1e3, c.goodput_per_gpu(),
                         i == r.fewest_disaggregated ? " fewest GPUs" : "");
    }
  }
  out += "\nanswer     " + r.why + "\n";
  if (!r.found()) out += "           (more nodes: --nodes)\n";
  return out;
}

}  // namespace symtensor::compiler
