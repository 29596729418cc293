#include "compiler/serve/serve_report.h"

#include <fmt/format.h>

namespace symtensor::compiler {
namespace {

std::string ms(double s) { return s >= 10 ? fmt::format("{:.1f} s", s) : fmt::format("{:.2f} ms", s * 1e3); }

std::string row(const std::string& what, const sim::Distribution& d) {
  return fmt::format("  {:<22}{:>12}{:>12}{:>12}{:>12}\n", what, ms(d.mean), ms(d.p50), ms(d.p90), ms(d.p99));
}

sim::ServingBatch decode_batch(int requests, std::int64_t context) {
  sim::ServingBatch b;
  b.decode_requests = requests;
  b.decode_context = requests * context;
  return b;
}

}  // namespace

ServeResult run_serving(const ServingCost& cost, const sim::ServingWorkload& workload, const sim::ServingSlo& slo,
                        const sim::ServingProgress& progress) {
  ServeResult r;
  r.slo = slo;
  r.workload = describe_workload(workload);
  r.run = sim::simulate_serving(workload, cost.scheduler(), [&cost](const sim::ServingBatch& b) { return cost.step_seconds(b); },
                                cost.layout().replicas, progress);
  r.metrics = sim::serving_metrics(r.run, slo);
  return r;
}

std::string describe_workload(const sim::ServingWorkload& w) {
  const std::string shape = fmt::format("{} -> {} tokens", w.input_tokens, w.output_tokens);
  switch (w.mode) {
    case sim::ArrivalMode::offline: return fmt::format("offline (all at once), {} requests of {}", w.requests, shape);
    case sim::ArrivalMode::closed_loop:
      return fmt::format("closed loop of {} users, {} requests of {}", w.concurrency, w.requests, shape);
    case sim::ArrivalMode::poisson:
      return fmt::format("Poisson arrivals at {} requests/s (seed {}), {} requests of {}", w.rate, w.seed, w.requests, shape);
    case sim::ArrivalMode::trace: return fmt::format("trace of {} requests", w.trace.size());
  }
  return "";
}

std::string serve_text(const ServingCost& cost, const ServeResult& r) {
  const ServingModel& m = cost.model();
  const ServingLayout& l = cost.layout();
  const ServingMemory& mem = cost.memory();
  const hardware::ServingEngine& e = cost.engine();
  std::string out;
  out += fmt::format("model      {}: {} layers, hidden {}, {} heads, {} KV heads of {}, {:.2f} B parameters\n", m.name, m.layers,
                     m.hidden, m.heads, m.kv_heads, m.head_dim, m.parameters / 1e9);
  out += fmt::format("layout     {} replica(s) of tp={} pp={}{} on {} ({} GPUs of {}), engine {}\n", l.replicas, l.tp, l.pp,
                     l.ep > 1 ? fmt::format(" ep={}", l.ep) : "", cost.cluster().device.name, l.gpus(),
                     cost.cluster().num_devices(), e.name);
  out += fmt::format("memory/GPU {:.1f} GB: weights {:.2f} GB, activations {:.2f} GB, other {:.2f} GB, KV cache {:.2f} GB\n",
                     mem.capacity / 1e9, mem.weights / 1e9, mem.activations / 1e9, mem.other / 1e9, mem.kv_cache / 1e9);
  out += fmt::format("KV cache   {:.0f} B per token per GPU, {} pages of {} = {} tokens per replica\n", mem.kv_bytes_per_token,
                     mem.kv_blocks, e.block_size, mem.kv_tokens);
  const auto one = cost.step_parts(decode_batch(1, 1024));
  out += fmt::format("decode     batch 1 at 1k context: {} a step (weights {}, KV {}, TP all-reduces {}, overhead {})\n",
                     ms(one.total_s), ms(one.weights_s), ms(one.kv_s), ms(one.tp_comm_s), ms(one.overhead_s));
  out += fmt::format("workload   {}\n", r.workload);
  return out + serve_metrics_text(r, l.gpus());
}

std::string serve_metrics_text(const ServeResult& r, int gpu_count) {
  std::string out;
  out += fmt::format("simulated  {} steps, peak batch {}, {} preemptions, {:.2f} s\n\n", r.run.steps, r.run.peak_batch,
                     r.run.preemptions, r.metrics.duration_s);
  out += fmt::format("  {:<22}{:>12}{:>12}{:>12}{:>12}\n", "latency", "mean", "p50", "p90", "p99");
  out += row("TTFT", r.metrics.ttft);
  out += row("TPOT (e2e-TTFT)/(n-1)", r.metrics.tpot);
  out += row("inter-token", r.metrics.itl);
  out += row("end-to-end", r.metrics.e2e);
  const double gpus = gpu_count;
  out += fmt::format("\nthroughput {:.1f} output tokens/s ({:.1f} per GPU), {:.1f} total tokens/s ({:.1f} per GPU), {:.2f} requests/s\n",
                     r.metrics.output_tokens_per_s, r.metrics.output_tokens_per_s / gpus, r.metrics.total_tokens_per_s,
                     r.metrics.total_tokens_per_s / gpus, r.metrics.requests_per_s);
  if (r.slo.ttft_s > 0 || r.slo.tpot_s > 0)
    out += fmt::format("goodput    {:.2f} requests/s, {:.1f} output tokens/s ({:.1f} per GPU); {:.1f}% of requests meet TTFT <= {} "
                       "and TPOT <= {}\n", r.metrics.goodput_requests_per_s, r.metrics.goodput_output_tokens_per_s,
                       r.metrics.goodput_output_tokens_per_s / gpus, 100 * r.metrics.slo_attainment,
                       r.slo.ttft_s > 0 ? ms(r.slo.ttft_s) : "any", r.slo.tpot_s > 0 ? ms(r.slo.tpot_s) : "any");
  return out;
}

nlohmann::json serve_json(const ServingCost& cost, const ServeResult& r) {
  nlohmann::json j = serve_metrics_json(r, cost.layout().gpus());
  const ServingMemory& mem = cost.memory();
  j["memory"] = {{"capacity_bytes", mem.capacity}, {"weights_bytes", mem.weights}, {"activations_bytes", mem.activations},
                 {"other_bytes", mem.other}, {"kv_cache_bytes", mem.kv_cache}, {"kv_bytes_per_token_per_gpu", mem.kv_bytes_per_token},
                 {"kv_blocks", mem.kv_blocks}, {"kv_tokens", mem.kv_tokens}};
  const ServingLayout& l = cost.layout();
  j["layout"] = {{"tp", l.tp}, {"pp", l.pp}, {"ep", l.ep}, {"replicas", l.replicas}, {"gpus", l.gpus()}};
  const ServingModel& m = cost.model();
  j["model"] = {{"name", m.name}, {"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
                {"head_dim", m.head_dim}, {"parameters", m.parameters}};
  j["engine"] = cost.engine().name;
  return j;
}

nlohmann::json serve_metrics_json(const ServeResult& r, int gpu_count) {
  nlohmann::json j;
  auto put = [&](const std::string& key, const sim::Distribution& d) {
    j[key] = d.mean;
    j[key.substr(0, key.size() - 2) + "_p50_s"] = d.p50;
    j[key.substr(0, key.size() - 2) + "_p90_s"] = d.p90;
    j[key.substr(0, key.size() - 2) + "_p99_s"] = d.p99;
  };
  put("ttft_s", r.metrics.ttft);
  put("tpot_s", r.metrics.tpot);
  put("itl_s", r.metrics.itl);
  put("e2e_s", r.metrics.e2e);
  const double gpus = gpu_count;
  j["output_tokens_per_s"] = r.metrics.output_tokens_per_s;
  j["output_tokens_per_s_per_gpu"] = r.metrics.output_tokens_per_s / gpus;
  j["total_tokens_per_s"] = r.metrics.total_tokens_per_s;
  j["total_tokens_per_s_per_gpu"] = r.metrics.total_tokens_per_s / gpus;
  j["requests_per_s"] = r.metrics.requests_per_s;
  j["duration_s"] = r.metrics.duration_s;
  j["requests"] = r.run.requests.size();
  j["steps"] = r.run.steps;
  j["peak_batch"] = r.run.peak_batch;
  j["preemptions"] = r.run.preemptions;
  if (r.slo.ttft_s > 0 || r.slo.tpot_s > 0) {
    j["goodput_requests_per_s"] = r.metrics.goodput_requests_per_s;
    j["goodput_output_tokens_per_s"] = r.metrics.goodput_output_tokens_per_s;
    j["slo_attainment"] = r.metrics.slo_attainment;
  }
  j["workload"] = r.workload;
  return j;
}

}  // namespace symtensor::compiler
