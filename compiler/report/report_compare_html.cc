// report.html of `symtensor compare`.
#include <cmath>

#include "compiler/report/charts.h"
#include "compiler/report/html_page.h"
#include "compiler/report/report_files.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

std::string batch_text(double b) { return std::isfinite(b) ? format_count(std::floor(b)) : "unbounded"; }

std::string strategy_table(const CompareResults& r) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < r.strategies.size(); ++i) {
    const auto& s = r.strategies[i];
    if (!s.ok) {
      rows.push_back({"\x02" "failed", s.strategy, "—", "—", "—", "—", "—", "—", "—", "no plan: " + s.error});
      continue;
    }
    std::string mem = format_bytes(s.peak_memory_bytes()) + " / " + format_bytes(r.row_memory_bytes(s));
    if (!s.fits()) mem = html::raw("<span class=\"bad\">" + html::esc(mem) + " (does not fit)</span>");
    std::string note = s.evaluator();
    if (!s.simulation_error.empty()) note += "; " + s.simulation_error;
    if (s.simulated) note += "; analytic estimate " + format_seconds(s.estimate.step_time_s);
    rows.push_back({static_cast<int>(i) == r.chosen ? "\x02" "chosen" : "\x02" "row", s.label,
                    format_seconds(s.step_time_s()),
                    format_si(r.tokens_per_sample > 0 ? r.tokens_per_s(s) : s.samples_per_s(),
                              r.tokens_per_sample > 0 ? "tokens/s" : "samples/s"),
                    format_si(s.samples_per_s(), "samples/s"), format_percent(s.mfu()), format_percent(s.mfu_6n()),
                    mem, format_seconds(s.search_time_s), note});
  }
  return html::table({"strategy", "step time", "throughput", "samples", kExactMfuLabel, palm_mfu_label(r.palm),
                      "peak memory / device (of capacity)", "search time", "evaluator / notes"},
                     rows, "strategies") +
         "<p class=\"note\">" + html::esc(describe_mfu_conventions(r.palm)) + "</p>\n";
}

std::string explanation_html(const StrategyResult& s) {
  std::string out = "<p>" + html::esc(s.explanation.summary) + "</p>\n";
  std::vector<std::vector<std::string>> mesh;
  for (const auto& a : s.explanation.mesh) mesh.push_back({a.name, std::to_string(a.size), a.level, a.role});
  out += html::table({"mesh axis", "size", "topology level", "role"}, mesh, "mesh");
  std::vector<std::vector<std::string>> ops;
  for (const auto& o : s.explanation.ops)
    ops.push_back({o.pattern, o.op_type, std::to_string(o.count), o.cut, o.comm.empty() ? "none" : o.comm});
  out += "<p>Operators by kind (heaviest first), the loop dims cut and the mesh axes cutting them, and the "
         "collectives each needs per micro-batch:</p>\n" +
         html::table({"operator (all layers)", "op", "count", "cut (loop -> axes)", "communication per micro-batch"},
                     ops, "cuts");
  out += "<ul>";
  for (const auto& line : s.explanation.communication) out += "<li>" + html::esc(line) + "</li>";
  return out + "</ul>\n";
}

std::string formulas_html(const CompareResults& r) {
  std::string out =
      "<p class=\"note\">Built with GiNaC from the plan analysis: each operator's time is split into its "
      "batch-proportional part and its constant part (weights, launch), collectives into latency and bandwidth; "
      "gradient synchronisation, ZeRO gathers and the optimizer are constant. The micro-batch count and "
      "data-parallel ways are those of the plan, so the micro-batch size is batch / (dp x m). Efficiency, "
      "roofline side and collective algorithm are held at the bound point; the slowest stage and whether "
      "gradient synchronisation is exposed are the branches active there (valid range shown).</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : r.strategies) {
    if (!s.ok || !s.formula) continue;
    const auto& f = *s.formula;
    rows.push_back({s.label, html::raw("<code>T(batch) = " + html::esc(f.text()) + "</code>"),
                    format_seconds(f.at(f.bound_batch)) + " at batch " + format_count(f.bound_batch),
                    batch_text(f.valid_from) + " .. " + batch_text(f.valid_to),
                    "multiple of " + format_count(f.batch_granule),
                    html::raw("<code>" + html::esc(format_bytes(f.memory_constant) + " + " +
                                                   format_bytes(f.memory_per_sample) + " x batch") + "</code>"),
                    describe_max_batch(f)});
  }
  out += html::table({"plan", "step time formula", "at the bound batch", "valid for batch", "batch", "peak memory",
                      "largest batch that fits"},
                     rows, "formulas");
  out += "<details><summary>Components of each formula (GiNaC form)</summary>\n";
  for (const auto& s : r.strategies) {
    if (!s.ok || !s.formula) continue;
    const auto& f = *s.formula;
    out += "<p><b>" + html::esc(s.label) + "</b><br><code>compute = " + html::esc(to_text(f.compute)) +
           "</code><br><code>communication = " + html::esc(to_text(f.comm)) + "</code><br><code>bubble = " +
           html::esc(to_text(f.bubble)) + "</code><br><code>exposed gradient sync = " +
           html::esc(to_text(f.dp_exposed)) + "</code><br><code>pipeline sends = " + html::esc(to_text(f.p2p)) +
           "</code><br><code>optimizer = " + html::esc(to_text(f.optimizer)) + "</code></p>\n";
  }
  out += "</details>\n<h3>Break-even points</h3>\n";
  if (r.break_evens.empty()) return out + "<p>No two formulas cross at a batch of one sample or more.</p>\n";
  std::vector<std::vector<std::string>> be;
  for (const auto& b : r.break_evens)
    be.push_back({b.faster_below, b.faster_above, format_count(std::round(b.batch)), format_seconds(b.step_time_s),
                  b.within_validity ? "yes" : "no (outside a formula's valid range)"});
  return out + html::table({"faster below", "faster above", "batch where they are equal", "step time there",
                            "inside the valid ranges"},
                           be, "break-even");
}

}  // namespace

std::string compare_html(const CompareResults& r) {
  std::string body = "<h1>SymTensor: which strategy?</h1>\n<p>Model <code>" + html::esc(r.model) +
                     "</code> on <b>" + html::esc(r.cluster) + "</b> (" + html::esc(describe_devices(r.device_kinds)) + "); dims:";
  for (const auto& [k, v] : r.bindings) body += " " + html::esc(k) + "=" + format_count(v);
  body += ".</p>\n";
  if (r.chosen >= 0) {
    const auto& c = r.strategies[r.chosen];
    body += "<p><b>Chosen: " + html::esc(c.label) + "</b> — " + format_seconds(c.step_time_s()) + " per step, " +
            format_si(c.samples_per_s(), "samples/s") + ", " + kExactMfuLabel + " " + format_percent(c.mfu()) + ", " +
            html::esc(palm_mfu_label(r.palm)) + " " + format_percent(c.mfu_6n()) + ", peak " +
            format_bytes(c.peak_memory_bytes()) + " per device (" + c.evaluator() + ").</p>\n";
  } else {
    body += "<p class=\"bad\"><b>No strategy gave a plan that fits in device memory.</b></p>\n";
  }
  if (r.step_lower_bound_s > 0) body += "<p class=\"note\">Bound: " + html::esc(describe_step_lower_bound(r)) + ".</p>\n";
  body += "<h2>Strategies</h2>\n" + strategy_table(r);
  if (!r.fleet.empty()) body += "<h2>Mixed fleet: the plan by group</h2>\n<pre>" + html::esc(r.fleet) + "</pre>\n";

  std::vector<StackedBar> bars;
  std::vector<MemoryGroup> memory;
  for (const auto& s : r.strategies) {
    if (!s.ok) continue;
    // Charts name the strategy only; its knobs are in the table above.
    bars.push_back({s.strategy + " (" + s.evaluator().substr(0, 3) + ")", breakdown_values(s)});
    MemoryGroup m{s.strategy, s.stage_peak_memory(), {}};
    for (std::size_t k = 0; k < m.stage_bytes.size(); ++k) m.stage_capacity_bytes.push_back(s.stage_capacity_bytes(k));
    memory.push_back(std::move(m));
  }
  body += "<h2>Step-time breakdown</h2>\n<p class=\"note\">Simulated plans (sim) break the critical stage down "
          "into compute, exposed communication (all collectives and sends), idle/bubble and optimizer; analytic "
          "ones (ana) also separate gradient sync and pipeline sends.</p>\n" +
          breakdown_chart(breakdown_components(), bars);
  // Every stage names its own capacity; without any, the device's memory.
  double least_capacity = 0;
  for (const MemoryGroup& m : memory)
    for (double cap : m.stage_capacity_bytes)
      if (cap > 0 && (least_capacity == 0 || cap < least_capacity)) least_capacity = cap;
  body += "<h2>Memory per pipeline stage</h2>\n" + memory_chart(memory, least_capacity > 0 ? least_capacity : r.device_memory_bytes);
  if (r.chosen >= 0) {
    const auto& c = r.strategies[r.chosen];
    body += "<h2>Simulated step of the chosen plan</h2>\n";
    if (r.timeline.bars.empty()) body += "<p>Not simulated: " + html::esc(c.simulation_error) + "</p>\n";
    else
      body += gantt_chart(r.timeline) +
              (r.timeline.truncated ? "<p class=\"note\">Only the first bars are drawn.</p>\n" : "");
    body += "<h2>The chosen plan explained</h2>\n";
    for (const std::string& line : r.why_chosen) body += "<p class=\"why\">" + html::esc(line) + "</p>\n";
    body += explanation_html(c);
  }
  body += "<h2>Step time as a formula of the batch</h2>\n" + formulas_html(r);
  body += "<h2>Other plans</h2>\n";
  for (std::size_t i = 0; i < r.strategies.size(); ++i)
    if (static_cast<int>(i) != r.chosen && r.strategies[i].ok)
      body += "<details><summary>" + html::esc(r.strategies[i].label) + "</summary>\n" +
              explanation_html(r.strategies[i]) + "</details>\n";
  body += "<p class=\"note\">Same numbers: results.csv, results.json, report.md.</p>\n";
  return html::page("SymTensor compare: " + r.model, body);
}

}  // namespace symtensor::compiler
