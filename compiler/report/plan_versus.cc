#include "compiler/report/plan_versus.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "compiler/base/units.h"
#include "compiler/report/plan_label.h"
#include "compiler/report/report_files.h"

namespace symtensor::compiler {
namespace {

// The layers a plan recomputes in the backward pass: all under full recomputation (or the sum
// of Plan::recompute_layers), none otherwise; -1 under selective recomputation.
int recomputed_layers(const Plan& p, int layers) {
  if (p.recompute == RecomputePolicy::none) return 0;
  if (p.recompute == RecomputePolicy::selective) return -1;
  if (p.recompute_layers.empty()) return layers;
  int n = 0;
  for (int c : p.recompute_layers) n += c;
  return n;
}

std::string recompute_words(const Plan& p, int layers) {
  const int n = recomputed_layers(p, layers);
  if (n < 0) return "recomputes the attention scores only (selective)";
  if (n == 0) return "recomputes nothing";
  if (layers > 0 && n >= layers) return fmt::format("recomputes all {} layers", layers);
  return layers > 0 ? fmt::format("recomputes {} of {} layers", n, layers) : "recomputes some layers";
}

// The ZeRO stage as it runs, "1/1/3" where the pipeline stages differ.
std::string effective_zero(const Plan& p) {
  const std::vector<int> zero = p.effective_zero_stages();
  if (std::adjacent_find(zero.begin(), zero.end(), std::not_equal_to<>()) == zero.end()) return std::to_string(zero.front());
  return fmt::format("{}", fmt::join(zero, "/"));
}

// What `a` does differently from `b`, in words: "tp=2 where megatron has tp=1".
std::vector<std::string> differences(const StrategyResult& a, const StrategyResult& b, Graph& graph,
                                     const hardware::Cluster& cluster, int layers) {
  std::vector<std::string> out;
  const Plan& pa = *a.plan;
  const Plan& pb = *b.plan;
  try {
    const PlanDegrees da = plan_degrees(graph, pa, cluster), db = plan_degrees(graph, pb, cluster);
    const auto degree = [&](const char* name, int x, int y) {
      if (x != y) out.push_back(fmt::format("{}={} where {} has {}={}", name, x, b.strategy, name, y));
    };
    degree("tp", da.tp, db.tp);
    degree("dp", da.dp, db.dp);
    degree("pp", da.pp, db.pp);
    degree("cp", da.cp, db.cp);
    degree("ep", da.ep, db.ep);
    degree("vp", da.vp, db.vp);
    if (da.micro_batches != db.micro_batches || da.micro_batch_size != db.micro_batch_size)
      out.push_back(fmt::format("{} micro-batch(es) of {:g} sample(s) where {} has {} of {:g}", da.micro_batches,
                                da.micro_batch_size, b.strategy, db.micro_batches, db.micro_batch_size));
  } catch (const std::exception&) {
    // degrees unreadable (not a transformer): the other differences still say something
  }
  if (recomputed_layers(pa, layers) != recomputed_layers(pb, layers))
    out.push_back(fmt::format("it {} where {} {}", recompute_words(pa, layers), b.strategy, recompute_words(pb, layers)));
  if (effective_zero(pa) != effective_zero(pb))
    out.push_back(fmt::format("ZeRO-{} where {} has ZeRO-{}", effective_zero(pa), b.strategy, effective_zero(pb)));
  if (pa.offload_layers != pb.offload_layers)
    out.push_back(fmt::format("{} layer(s) offloaded to host memory where {} has {}", pa.offload_layers, b.strategy,
                              pb.offload_layers));
  return out;
}

}  // namespace

std::vector<std::string> why_chosen(const CompareResults& r, Graph& graph, const hardware::Cluster& cluster, int layers) {
  if (r.chosen < 0) return {};
  const StrategyResult& c = r.strategies[r.chosen];
  std::vector<std::string> lines;
  const StrategyResult* next = nullptr;
  for (std::size_t i = 0; i < r.strategies.size(); ++i) {
    const StrategyResult& s = r.strategies[i];
    if (static_cast<int>(i) == r.chosen || !s.ok || !s.fits() || !s.plan) continue;
    if (!next || s.step_time_s() < next->step_time_s()) next = &s;
  }
  if (!next) {
    lines.push_back(fmt::format("Why {}: it is the only plan compared that fits in {} per device.", c.strategy,
                                format_bytes(r.row_memory_bytes(c))));
  } else {
    const double tc = c.step_time_s(), tn = next->step_time_s();
    if (tn <= tc * 1.005) {
      lines.push_back(fmt::format("Why {}: it ties {} ({} against {} a step, within 0.5%); no strategy compared beats the "
                                  "other here.",
                                  c.strategy, next->strategy, format_seconds(tc), format_seconds(tn)));
    } else {
      lines.push_back(fmt::format("Why {}: {} a step against {} for {}, the next fastest plan that fits: {:.2f}x faster.",
                                  c.strategy, format_seconds(tc), format_seconds(tn), next->strategy, tn / tc));
    }
    // Where the time goes differently, largest difference first.
    const std::vector<std::string> names = breakdown_components();
    const std::vector<double> vc = breakdown_values(c), vn = breakdown_values(*next);
    std::vector<std::pair<double, std::size_t>> deltas;
    for (std::size_t k = 0; k < names.size() && k < vc.size() && k < vn.size(); ++k)
      if (std::abs(vn[k] - vc[k]) > 0.01 * tc) deltas.emplace_back(vn[k] - vc[k], k);
    std::sort(deltas.begin(), deltas.end(), [](const auto& x, const auto& y) { return std::abs(x.first) > std::abs(y.first); });
    std::string where;
    for (const auto& [d, k] : deltas)
      where += fmt::format("{}{}: {} against {} ({} {})", where.empty() ? "" : "; ", names[k], format_seconds(vc[k]),
                           format_seconds(vn[k]), format_seconds(std::abs(d)), d > 0 ? "less" : "more");
    if (!where.empty()) lines.push_back("Where the step differs: " + where + ".");
    const std::vector<std::string> diff = differences(c, *next, graph, cluster, layers);
    if (!diff.empty()) {
      std::string what;
      for (const std::string& d : diff) what += (what.empty() ? "" : "; ") + d;
      // Each peak beside its own devices' memory (a mixed fleet's rows may hold different GPUs).
      const double cap_c = r.row_memory_bytes(c), cap_n = r.row_memory_bytes(*next);
      lines.push_back(cap_c == cap_n ? fmt::format("What {} does differently: {}; peak {} against {} of {} per device.",
                                                   c.strategy, what, format_bytes(c.peak_memory_bytes()),
                                                   format_bytes(next->peak_memory_bytes()), format_bytes(cap_c))
                                     : fmt::format("What {} does differently: {}; peak {} of {} against {} of {} per device.",
                                                   c.strategy, what, format_bytes(c.peak_memory_bytes()), format_bytes(cap_c),
                                                   format_bytes(next->peak_memory_bytes()), format_bytes(cap_n)));
    }
  }
  for (const StrategyResult& s : r.strategies)
    if (s.ok && !s.fits() && s.step_time_s() < c.step_time_s())
      lines.push_back(fmt::format("{} would take {} a step but needs {} per device of {}: it does not fit.", s.strategy,
                                  format_seconds(s.step_time_s()), format_bytes(s.peak_memory_bytes()),
                                  format_bytes(r.row_memory_bytes(s))));
  return lines;
}

}  // namespace symtensor::compiler
