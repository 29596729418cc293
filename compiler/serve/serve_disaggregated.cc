#include "compiler/serve/serve_disaggregated.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/serving/disaggregated.h"

namespace symtensor::compiler {
namespace {

double kv_element_bytes(const ServingCost& c) { return serving_bytes(c.precision().kv); }

std::string pool_line(const char* what, const ServingCost& c) {
  const ServingLayout& l = c.layout();
  return fmt::format("{:<11}{} replica(s) of tp={} pp={}{} ({} GPUs), KV cache {} tokens a replica\n", what, l.replicas, l.tp,
                     l.pp, l.ep > 1 ? fmt::format(" ep={}", l.ep) : "", l.gpus(), c.memory().kv_tokens);
}

}  // namespace

KvTransferLink kv_transfer_link(const hardware::Cluster& cluster, int prefill_gpus, int decode_gpus) {
  if (prefill_gpus + decode_gpus > cluster.num_devices())
    throw std::runtime_error(fmt::format("serve: the prefill pool's {} GPUs and the decode pool's {} exceed the cluster's {}",
                                         prefill_gpus, decode_gpus, cluster.num_devices()));
  const hardware::TopologyLevel& level =
      prefill_gpus + decode_gpus <= cluster.levels.front().size ? cluster.levels.front() : cluster.levels.back();
  return KvTransferLink{level.name, level.peer_bandwidth(), level.latency_s};
}

double kv_transfer_seconds(const ServingCost& prefill, const ServingCost& decode, std::int64_t tokens,
                           const KvTransferLink& link) {
  const ServingModel& m = prefill.model();
  const double sent = kv_bytes_per_token_per_gpu(m, kv_element_bytes(prefill), prefill.layout().tp, prefill.layout().pp);
  const double received = kv_bytes_per_token_per_gpu(m, kv_element_bytes(decode), decode.layout().tp, decode.layout().pp);
  return static_cast<double>(tokens) * std::max(sent, received) / link.bandwidth + link.latency_s;
}

ServeResult run_disaggregated(const ServingCost& prefill, const ServingCost& decode, const sim::ServingWorkload& workload,
                              const sim::ServingSlo& slo, const sim::ServingProgress& progress) {
  if (prefill.precision().kv != decode.precision().kv)
    throw std::runtime_error("serve: the prefill and decode pools must keep the KV cache in one precision");
  const KvTransferLink link = kv_transfer_link(prefill.cluster(), prefill.layout().gpus(), decode.layout().gpus());
  ServeResult r;
  r.slo = slo;
  r.workload = describe_workload(workload);
  const sim::ServingPool p{prefill.scheduler(), [&prefill](const sim::ServingBatch& b) { return prefill.step_seconds(b); },
                           prefill.layout().replicas};
  const sim::ServingPool d{decode.scheduler(), [&decode](const sim::ServingBatch& b) { return decode.step_seconds(b); },
                           decode.layout().replicas};
  r.run = sim::simulate_disaggregated(
      workload, p, d, [&](std::int64_t tokens) { return kv_transfer_seconds(prefill, decode, tokens, link); }, progress);
  r.metrics = sim::serving_metrics(r.run, slo);
  return r;
}

std::string disaggregated_text(const ServingCost& prefill, const ServingCost& decode, const ServeResult& r) {
  const ServingModel& m = prefill.model();
  const KvTransferLink link = kv_transfer_link(prefill.cluster(), prefill.layout().gpus(), decode.layout().gpus());
  const std::int64_t s = r.run.requests.empty() ? 0 : r.run.requests.front().input_tokens;
  std::string out;
  out += fmt::format("model      {}: {} layers, {} KV heads of {}, {:.2f} B parameters; engine {}, {} GPUs of {} on {}\n", m.name,
                     m.layers, m.kv_heads, m.head_dim, m.parameters / 1e9, prefill.engine().name,
                     prefill.layout().gpus() + decode.layout().gpus(), prefill.cluster().num_devices(),
                     prefill.cluster().device.name);
  out += pool_line("prefill", prefill);
  out += pool_line("decode", decode);
  out += fmt::format("KV move    {:.1f} MB a request of {} tokens ({:.0f} B a token), over {} at {:.0f} GB/s per GPU: {:.3f} ms\n",
                     s * kv_bytes_per_token(m, kv_element_bytes(prefill)) / 1e6, s,
                     kv_bytes_per_token(m, kv_element_bytes(prefill)), link.level, link.bandwidth / 1e9,
                     1e3 * kv_transfer_seconds(prefill, decode, s, link));
  out += fmt::format("workload   {}\n", r.workload);
  return out + serve_metrics_text(r, prefill.layout().gpus() + decode.layout().gpus());
}

nlohmann::json disaggregated_json(const ServingCost& prefill, const ServingCost& decode, const ServeResult& r) {
  nlohmann::json j = serve_metrics_json(r, prefill.layout().gpus() + decode.layout().gpus());
  const KvTransferLink link = kv_transfer_link(prefill.cluster(), prefill.layout().gpus(), decode.layout().gpus());
  auto pool = [](const ServingCost& c) {
    const ServingLayout& l = c.layout();
    return nlohmann::json{{"tp", l.tp}, {"pp", l.pp}, {"ep", l.ep}, {"replicas", l.replicas}, {"gpus", l.gpus()},
                          {"kv_tokens", c.memory().kv_tokens}};
  };
  j["prefill"] = pool(prefill);
  j["decode"] = pool(decode);
  const std::int64_t s = r.run.requests.empty() ? 0 : r.run.requests.front().input_tokens;
  j["kv_transfer"] = {{"link", link.level}, {"bandwidth_bytes_per_s", link.bandwidth}, {"latency_s", link.latency_s},
                      {"input_tokens", s}, {"seconds", kv_transfer_seconds(prefill, decode, s, link)}};
  j["engine"] = prefill.engine().name;
  j["model"] = prefill.model().name;
  return j;
}

}  // namespace symtensor::compiler
