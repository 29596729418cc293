// report.html of `symtensor sweep`.
#include <map>

#include "compiler/report/charts.h"
#include "compiler/report/html_page.h"
#include "compiler/report/report_files.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

// The point's fullest stage: model states, activations, transient buffers, reserve.
std::string peak_stage_parts(const SweepPoint& p) {
  const StageMemoryBreakdown* b = fullest_stage(p.memory);
  if (!b) return "—";
  return "stage " + std::to_string(b->stage) + ": states " + format_bytes(b->parameters + b->gradients + b->optimizer) +
         ", activations " + format_bytes(b->activations) + ", transient " + format_bytes(b->transient) + ", reserve " +
         format_bytes(b->reserve);
}

}  // namespace

std::string sweep_html(const SweepResults& r) {
  std::string body = "<h1>SymTensor: which cluster?</h1>\n<p>Model <code>" + html::esc(r.model) + "</code>; dims:";
  for (const auto& [k, v] : r.bindings) body += " " + html::esc(k) + "=" + format_count(v);
  body += ". Training " + format_si(r.tokens, "tokens") +
          ". Each point is the best plan over the strategies by the <b>analytic estimate</b> (the simulator "
          "is the referee in <code>symtensor compare</code>); swept in " + format_seconds(r.elapsed_s) + ".</p>\n";

  const SweepPoint* best = cheapest_point(r);
  const SweepPoint* fastest = fastest_point(r);
  if (fastest)
    body += "<p><b>Fastest: " + html::esc(fastest->cluster) + " x" + std::to_string(fastest->gpus) + "</b> with " +
            html::esc(fastest->strategy) + ": " + format_duration(fastest->time_to_train_s) +
            (fastest->price_per_gpu_hour > 0 ? ", " + format_usd(fastest->cost_usd) + " at " +
                                                   html::esc(describe_price(r, *fastest))
                                             : std::string(", no price")) +
            ".</p>\n";
  if (best)
    body += "<p><b>Cheapest: " + html::esc(best->cluster) + " x" + std::to_string(best->gpus) + "</b> with " +
            html::esc(best->strategy) + ": " + format_duration(best->time_to_train_s) + ", " +
            format_usd(best->cost_usd) + " (" + format_usd(best->cost_per_million_tokens) + " per million tokens) at " +
            html::esc(describe_price(r, *best)) + ".</p>\n";

  std::map<std::string, Series> throughput, cost;
  for (const auto& p : r.points) {
    if (!p.ok) continue;
    throughput[p.cluster].label = cost[p.cluster].label = p.cluster;
    throughput[p.cluster].points.emplace_back(p.gpus, r.tokens_per_sample > 0 ? p.tokens_per_s : p.samples_per_s);
    if (p.cost_per_million_tokens > 0) cost[p.cluster].points.emplace_back(p.gpus, p.cost_per_million_tokens);
  }
  std::vector<Series> t, c;
  for (const auto& name : r.clusters) {
    if (throughput.count(name)) t.push_back(throughput[name]);
    if (cost.count(name)) c.push_back(cost[name]);
  }
  body += "<h2>Scaling</h2>\n" +
          line_chart(t, "GPUs", r.tokens_per_sample > 0 ? "throughput (tokens/s)" : "throughput (samples/s)",
                     "scaling");
  body += "<h2>Cost per million tokens</h2>\n" + line_chart(c, "GPUs", "cost per million tokens (USD)", "cost");

  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.points) {
    if (!p.ok) {
      std::string why = p.error;
      for (const auto& rj : p.rejected) why += "; " + rj;
      rows.push_back({"\x02" "failed", p.cluster, std::to_string(p.gpus), "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", why});
      continue;
    }
    rows.push_back({best == &p ? "\x02" "chosen" : "\x02" "row", p.cluster, std::to_string(p.gpus), p.strategy,
                    format_seconds(p.step_time_s),
                    format_si(r.tokens_per_sample > 0 ? p.tokens_per_s : p.samples_per_s,
                              r.tokens_per_sample > 0 ? "tokens/s" : "samples/s"),
                    format_percent(p.mfu), format_percent(p.mfu_6n),
                    format_bytes(p.peak_memory_bytes) + " / " + format_bytes(p.memory_capacity_bytes),
                    peak_stage_parts(p),
                    format_duration(p.time_to_train_s), describe_price(r, p),
                    p.price_per_gpu_hour > 0 ? format_usd(p.cost_usd) : "no price",
                    p.price_per_gpu_hour > 0 ? format_usd(p.cost_per_million_tokens) : "no price"});
  }
  body += "<h2>All points</h2>\n" +
          html::table({"cluster", "GPUs", "best plan", "step time", "throughput", kExactMfuLabel, palm_mfu_label(r.palm),
                       "peak memory / capacity", "its stage, part by part", "time to train", "price per GPU-hour",
                       "cost", "per million tokens"},
                      rows, "sweep") +
          "<p class=\"note\">" + html::esc(describe_mfu_conventions(r.palm)) + "</p>\n";
  body += "<p class=\"note\">Prices marked illustrative are the profiles' (<code>price_per_gpu_hour_usd</code>), "
          "not quotes; give your own with <code>symtensor sweep --price GPU=USD/h</code> (a profile name or its GPU, "
          "e.g. <code>--price dgx-h100=2.5</code>). Same numbers: results.csv, results.json, report.md.</p>\n";
  return html::page("SymTensor sweep: " + r.model, body);
}

}  // namespace symtensor::compiler
