// The disaggregated half of the serving search (serve_search.h): prefill and decode pools,
// each pool sized first by its own throughput bound at the rate, then by simulation.
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/serve/serve_disaggregated.h"
#include "compiler/serve/serve_search.h"

namespace symtensor::compiler {
namespace {

// Seconds of a lone prompt of `tokens` on a replica: one step, or chunks of the token budget.
double lone_prefill_seconds(const ServingCost& c, std::int64_t tokens) {
  const sim::ServingScheduler s = c.scheduler();
  const std::int64_t chunk = s.chunked_prefill ? std::max<std::int64_t>(1, s.max_num_tokens) : tokens;
  double total = 0;
  for (std::int64_t done = 0; done < tokens; done += chunk) {
    const std::int64_t n = std::min(chunk, tokens - done);
    sim::ServingBatch b;
    b.prefill_tokens = n;
    b.prefill_requests = 1;
    b.prefill_context = done;
    b.prefill_attention_pairs = static_cast<double>(n) * done + n * (n + 1) / 2.0;
    total += c.step_seconds(b);
  }
  return total;
}

// Prompts a second one prefill replica computes at best: whole prompts filling the token
// budget in each step (one at least).
double prefill_capacity(const ServingCost& c, std::int64_t input) {
  const sim::ServingScheduler s = c.scheduler();
  const std::int64_t k = std::max<std::int64_t>(1, s.max_num_tokens / input);
  sim::ServingBatch b;
  b.prefill_tokens = k * input;
  b.prefill_requests = static_cast<int>(k);
  b.prefill_attention_pairs = k * (input * (input + 1) / 2.0);
  return static_cast<double>(k) / c.step_seconds(b);
}

sim::ServingBatch decode_step_batch(std::int64_t requests, std::int64_t context) {
  sim::ServingBatch b;
  b.decode_requests = static_cast<int>(requests);
  b.decode_context = requests * context;
  return b;
}

struct DecodeBound {
  std::int64_t batch = 0;   // the largest batch the KV cache holds whose step meets the TPOT SLO
  double step_s = 0;        // its step
  double lone_step_s = 0;   // a batch of one
};

// The decode replica's batch at its mean context (prompt + half the output).
DecodeBound decode_bound(const ServingCost& c, const ServeSearchOptions& o) {
  const sim::ServingScheduler s = c.scheduler();
  const std::int64_t context = o.input_tokens + o.output_tokens / 2;
  std::int64_t hi = std::min<std::int64_t>(s.max_batch, c.memory().batch_for(o.input_tokens + o.output_tokens, s.block_size));
  DecodeBound d;
  d.lone_step_s = c.step_seconds(decode_step_batch(1, context));
  if (hi < 1) return d;
  auto ok = [&](std::int64_t b) { return o.slo.tpot_s <= 0 || c.step_seconds(decode_step_batch(b, context)) <= o.slo.tpot_s; };
  if (!ok(1)) return d;
  std::int64_t lo = 1;  // ok(lo)
  if (ok(hi)) lo = hi;
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  d.batch = lo;
  d.step_s = c.step_seconds(decode_step_batch(lo, context));
  return d;
}

std::string pool_ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }

// One simulation of the pools at `a` prefill and `b` decode replicas.
void simulate_pools(ServeDisaggregatedCandidate& c, const ServingCost& p1, const ServingCost& d1, const ServeSearchOptions& o, int a,
              int b) {
  ServingLayout pl = p1.layout(), dl = d1.layout();
  pl.replicas = a;
  dl.replicas = b;
  const ServingCost p(p1.model(), pl, p1.precision(), p1.cluster(), p1.engine());
  const ServingCost d(d1.model(), dl, d1.precision(), d1.cluster(), d1.engine());
  sim::ServingWorkload w;
  w.mode = sim::ArrivalMode::poisson;
  w.rate = o.rate;
  w.requests = o.requests_per_replica * std::max(a, b);
  w.input_tokens = o.input_tokens;
  w.output_tokens = o.output_tokens;
  w.seed = o.seed;
  const ServeResult r = run_disaggregated(p, d, w, o.slo);
  ++c.simulations;
  // The link the pools now span (inside a node while both fit in one).
  c.kv_transfer_s = kv_transfer_seconds(p, d, o.input_tokens, kv_transfer_link(p.cluster(), pl.gpus(), dl.gpus()));
  c.prefill = pl;
  c.decode = dl;
  int ttft_ok = 0, tpot_ok = 0, n = 0;
  for (const sim::RequestRecord& q : r.run.requests) {
    ++n;
    const double ttft = q.first_token_s - q.arrival_s;
    const double tpot = q.output_tokens > 1 ? (q.finish_s - q.first_token_s) / static_cast<double>(q.output_tokens - 1) : 0;
    ttft_ok += o.slo.ttft_s <= 0 || ttft <= o.slo.ttft_s;
    tpot_ok += o.slo.tpot_s <= 0 || tpot <= o.slo.tpot_s;
  }
  c.ttft_share = n > 0 ? static_cast<double>(ttft_ok) / n : 0;
  c.tpot_share = n > 0 ? static_cast<double>(tpot_ok) / n : 0;
  c.attainment = r.metrics.slo_attainment;
  c.meets = c.attainment >= o.attainment;
  c.goodput_tokens_per_s = r.metrics.goodput_output_tokens_per_s;
  c.output_tokens_per_s = r.metrics.output_tokens_per_s;
  c.ttft_p90_s = r.metrics.ttft.p90;
  c.ttft_p99_s = r.metrics.ttft.p99;
  c.tpot_p90_s = r.metrics.tpot.p90;
  c.tpot_p99_s = r.metrics.tpot.p99;
}

ServeDisaggregatedCandidate search_pair(const ServingModel& model, const ServingPrecision& precision,
                                        const hardware::Cluster& cluster, const hardware::ServingEngine& engine,
                                        const ServeSearchOptions& o, int tp_prefill, int tp_decode) {
  ServeDisaggregatedCandidate c;
  c.prefill.tp = tp_prefill;
  c.decode.tp = tp_decode;
  const int gpus = cluster.num_devices();
  if (tp_prefill + tp_decode > gpus) {
    c.why = fmt::format("needs {} GPUs for one replica of each pool, the cluster has {}", tp_prefill + tp_decode, gpus);
    return c;
  }
  std::optional<ServingCost> p1, d1;
  try {
    p1.emplace(model, c.prefill, precision, cluster, engine);
  } catch (const std::exception& e) {
    c.why = fmt::format("prefill: {}", e.what());
    return c;
  }
  try {
    d1.emplace(model, c.decode, precision, cluster, engine);
  } catch (const std::exception& e) {
    c.why = fmt::format("decode: {}", e.what());
    return c;
  }
  // A lone request's first token: its prompt and the KV move between the pools.
  c.kv_transfer_s = kv_transfer_seconds(*p1, *d1, o.input_tokens, kv_transfer_link(cluster, tp_prefill, tp_decode));
  const double lone_ttft = lone_prefill_seconds(*p1, o.input_tokens) + c.kv_transfer_s;
  if (o.slo.ttft_s > 0 && lone_ttft > o.slo.ttft_s) {
    c.why = fmt::format("a lone prompt's prefill and KV move take {} > the TTFT SLO", pool_ms(lone_ttft));
    return c;
  }
  const DecodeBound db = decode_bound(*d1, o);
  if (db.batch < 1) {
    c.why = db.lone_step_s > o.slo.tpot_s && o.slo.tpot_s > 0
                ? fmt::format("a decode step of one request takes {} > the TPOT SLO", pool_ms(db.lone_step_s))
                : "the decode replica's KV cache holds no whole request";
    return c;
  }
  // Each pool's replicas by its throughput bound at the rate.
  const double decode_per_s = static_cast<double>(db.batch) / db.step_s / std::max<std::int64_t>(1, o.output_tokens - 1);
  int a = std::max(1, static_cast<int>(std::ceil(o.rate / prefill_capacity(*p1, o.input_tokens) - 1e-9)));
  int b = std::max(1, static_cast<int>(std::ceil(o.rate / decode_per_s - 1e-9)));
  c.prefill_bound = a;
  c.decode_bound = b;
  c.prefill.replicas = a;
  c.decode.replicas = b;
  if (a * tp_prefill + b * tp_decode > gpus) {
    c.why = fmt::format("the pools' throughput bounds at the rate need {} prefill and {} decode replicas, {} GPUs of {}", a, b,
                        a * tp_prefill + b * tp_decode, gpus);
    return c;
  }
  for (;;) {
    try {
      simulate_pools(c, *p1, *d1, o, a, b);
    } catch (const std::exception& e) {  // e.g. a prompt the prefill replica's KV cache cannot hold
      c.meets = false;
      c.why = e.what();
      return c;
    }
    if (c.meets) return c;
    // Grow the pool whose SLO fewer requests meet (both when both fall short).
    const bool grow_prefill = c.ttft_share < o.attainment || c.ttft_share <= c.tpot_share;
    const bool grow_decode = c.tpot_share < o.attainment || c.tpot_share < c.ttft_share;
    const int na = a + (grow_prefill ? 1 : 0), nb = b + (grow_decode ? 1 : 0);
    if (na * tp_prefill + nb * tp_decode > gpus) {
      c.why = fmt::format("misses the SLOs at {} prefill and {} decode replicas ({:.0f}% of requests meet them; TTFT {:.0f}%, "
                          "TPOT {:.0f}%), the cluster has no GPUs for more",
                          a, b, 100 * c.attainment, 100 * c.ttft_share, 100 * c.tpot_share);
      return c;
    }
    a = na;
    b = nb;
  }
}

}  // namespace

std::vector<ServeDisaggregatedCandidate> search_disaggregated(const ServingModel& model, const ServingPrecision& precision,
                                                               const hardware::Cluster& cluster,
                                                               const hardware::ServingEngine& engine,
                                                               const ServeSearchOptions& o) {
  std::vector<ServeDisaggregatedCandidate> out;
  if (o.output_tokens < 2) return out;  // nothing to decode after the first token
  const int gpus = cluster.num_devices(), per_node = cluster.devices_per_node();
  for (int tp_prefill = 1; tp_prefill <= per_node && tp_prefill < gpus; tp_prefill *= 2) {
    if (model.heads % tp_prefill != 0) continue;
    for (int tp_decode = 1; tp_decode <= per_node && tp_decode < gpus; tp_decode *= 2) {
      if (model.heads % tp_decode != 0) continue;
      out.push_back(search_pair(model, precision, cluster, engine, o, tp_prefill, tp_decode));
    }
  }
  return out;
}

}  // namespace symtensor::compiler
