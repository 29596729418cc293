// `sweep --serve`'s table and report files: one row per cluster, the serving search's answer and
// its cost per million output tokens. CSV and JSON print numbers exactly.
#include <cmath>

#include <fmt/format.h>

#include "compiler/base/units.h"
#include "compiler/report/html_page.h"
#include "compiler/report/report_files.h"
#include "compiler/report/serve_sweep.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::compiler {
namespace {

std::string slo_text(double s) { return s > 0 ? fmt::format("{} s", s) : "any"; }

std::string serve_sweep_heading(const ServeSweepResults& r) {
  return fmt::format("{} on {} ({} weights, {} KV cache): {} requests/s of {} -> {} tokens, SLOs TTFT <= {}, TPOT <= {} met by "
                     "{:.0f}% of requests",
                     r.model, r.engine, r.precision, r.kv_precision, r.rate, r.input_tokens, r.output_tokens,
                     slo_text(r.slo.ttft_s), slo_text(r.slo.tpot_s), 100 * r.attainment);
}

std::string price_text(const ServeSweepRow& row) {
  if (!(row.price_per_gpu_hour > 0)) return "no price";
  return format_usd(row.price_per_gpu_hour) + (row.price_given ? " (yours)" : " (illustrative)");
}

std::string per_million_text(const ServeSweepRow& row) {
  return row.cost_per_million_output_tokens > 0 ? format_usd(row.cost_per_million_output_tokens) : "no price";
}

// The row with a price and the lowest cost per million output tokens; nullptr when none.
const ServeSweepRow* cheapest_row(const ServeSweepResults& r) {
  const ServeSweepRow* best = nullptr;
  for (const ServeSweepRow& row : r.rows)
    if (row.ok && row.cost_per_million_output_tokens > 0 &&
        (!best || row.cost_per_million_output_tokens < best->cost_per_million_output_tokens))
      best = &row;
  return best;
}

std::string md_cell(std::string text) {
  for (std::size_t i = 0; (i = text.find('|', i)) != std::string::npos; i += 2) text.replace(i, 1, "\\|");
  return text;
}

const char* kPriceNote =
    "Prices marked illustrative are the profiles' (price_per_gpu_hour_usd), not quotes: `symtensor sweep --serve --price "
    "GPU=USD/h` (a profile name or its GPU) uses yours. Cost per million output tokens = GPUs x price per GPU-hour / "
    "(simulated output tokens per hour / 1e6).";

}  // namespace

std::string serve_sweep_text(const ServeSweepResults& r) {
  std::string out = "sweep --serve " + serve_sweep_heading(r) + "\n\n";
  out += fmt::format("  {:<14}{:>6}  {:<16}{:<40}{:>6}{:>14}{:>12}{:>22}{:>16}\n", "cluster", "GPUs", "kind", "layout", "used",
                     "output tok/s", "TPOT p90", "price/GPU-hour", "per M output");
  for (const ServeSweepRow& row : r.rows) {
    if (!row.ok) {
      out += fmt::format("  {:<14}{:>6}  {}\n", row.cluster, row.cluster_gpus, row.error);
      continue;
    }
    const ServeAnswer& a = row.answer;
    out += fmt::format("  {:<14}{:>6}  {:<16}{:<40}{:>6}{:>14.0f}{:>9.1f} ms{:>22}{:>16}\n", row.cluster, row.cluster_gpus,
                       a.disaggregated ? "disaggregated" : "aggregated", a.layout, a.gpus, a.output_tokens_per_s,
                       a.tpot_p90_s * 1e3, price_text(row), per_million_text(row));
  }
  out += "\n";
  for (const ServeSweepRow& row : r.rows)
    if (row.ok) out += fmt::format("  {}: {}\n", row.cluster, row.why);
  if (const ServeSweepRow* c = cheapest_row(r))
    out += fmt::format("\ncheapest   {}: {} per million output tokens on {} GPUs at {}\n", c->cluster,
                       per_million_text(*c), c->answer.gpus, price_text(*c));
  return out;
}

std::string serve_sweep_csv(const ServeSweepResults& r) {
  std::string out =
      "cluster,device,cluster_gpus,ok,kind,layout,gpus,output_tokens_per_s,goodput_output_tokens_per_s,slo_attainment,"
      "ttft_p90_s,tpot_p90_s,price_per_gpu_hour,price_source,output_tokens_per_hour,cost_per_hour,"
      "cost_per_million_output_tokens,search_s,why,error\n";
  for (const ServeSweepRow& row : r.rows) {
    const ServeAnswer& a = row.answer;
    const std::string source = row.price_per_gpu_hour > 0 ? (row.price_given ? "yours" : "illustrative") : "";
    out += csv_field(row.cluster) + "," + csv_field(row.device) + "," + std::to_string(row.cluster_gpus) + "," +
           (row.ok ? "1" : "0") + ",";
    if (row.ok)
      out += std::string(a.disaggregated ? "disaggregated" : "aggregated") + "," + csv_field(a.layout) + "," +
             std::to_string(a.gpus) + "," + exact(a.output_tokens_per_s) + "," + exact(a.goodput_tokens_per_s) + "," +
             exact(a.attainment) + "," + exact(a.ttft_p90_s) + "," + exact(a.tpot_p90_s) + ",";
    else
      out += ",,,,,,,,";
    out += exact(row.price_per_gpu_hour) + "," + source + ",";
    out += row.ok ? exact(row.output_tokens_per_hour) + "," + exact(row.cost_per_hour) + "," +
                        exact(row.cost_per_million_output_tokens) + ","
                  : ",,,";
    out += exact(row.search_s) + "," + csv_field(row.why) + "," + csv_field(row.error) + "\n";
  }
  return out;
}

nlohmann::json serve_sweep_json(const ServeSweepResults& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j{{"mode", "serve"},
                   {"model", r.model},
                   {"engine", r.engine},
                   {"precision", r.precision},
                   {"kv_precision", r.kv_precision},
                   {"rate", num(r.rate)},
                   {"input_tokens", r.input_tokens},
                   {"output_tokens", r.output_tokens},
                   {"slo_ttft_s", num(r.slo.ttft_s)},
                   {"slo_tpot_s", num(r.slo.tpot_s)},
                   {"attainment", num(r.attainment)},
                   {"elapsed_s", num(r.elapsed_s)}};
  j["rows"] = nlohmann::json::array();
  for (const ServeSweepRow& row : r.rows) {
    nlohmann::json x{{"cluster", row.cluster},           {"device", row.device},
                     {"cluster_gpus", row.cluster_gpus}, {"ok", row.ok},
                     {"price_per_gpu_hour", num(row.price_per_gpu_hour)},
                     {"price_source", row.price_per_gpu_hour > 0 ? (row.price_given ? "yours" : "illustrative") : "none"},
                     {"search_s", num(row.search_s)}};
    if (!row.ok) {
      x["error"] = row.error;
    } else {
      const ServeAnswer& a = row.answer;
      x.update({{"kind", a.disaggregated ? "disaggregated" : "aggregated"},
                {"layout", a.layout},
                {"gpus", a.gpus},
                {"output_tokens_per_s", num(a.output_tokens_per_s)},
                {"goodput_output_tokens_per_s", num(a.goodput_tokens_per_s)},
                {"slo_attainment", num(a.attainment)},
                {"ttft_p90_s", num(a.ttft_p90_s)},
                {"tpot_p90_s", num(a.tpot_p90_s)},
                {"output_tokens_per_hour", num(row.output_tokens_per_hour)},
                {"cost_per_hour", num(row.cost_per_hour)},
                {"cost_per_million_output_tokens", num(row.cost_per_million_output_tokens)},
                {"why", row.why}});
    }
    j["rows"].push_back(std::move(x));
  }
  return j;
}

std::string serve_sweep_markdown(const ServeSweepResults& r) {
  std::string out = "# SymTensor sweep --serve\n\n" + md_cell(serve_sweep_heading(r)) + "; searched in " +
                    format_seconds(r.elapsed_s) + ".\n\n";
  if (const ServeSweepRow* c = cheapest_row(r))
    out += "**Cheapest: " + c->cluster + "**, " + c->answer.layout + " on " + std::to_string(c->answer.gpus) + " GPUs: " +
           per_million_text(*c) + " per million output tokens at " + price_text(*c) + " per GPU-hour.\n\n";
  out += "| cluster | GPUs | kind | layout | GPUs used | output tokens/s | goodput tokens/s | TTFT p90 | TPOT p90 | price per "
         "GPU-hour | cost per hour | per M output tokens |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ServeSweepRow& row : r.rows) {
    if (!row.ok) {
      out += "| " + row.cluster + " | " + std::to_string(row.cluster_gpus) + " | " + md_cell(row.error) +
             " | | | | | | | | | |\n";
      continue;
    }
    const ServeAnswer& a = row.answer;
    out += fmt::format("| {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {} | {} | {} | {} | {} |\n", row.cluster, row.cluster_gpus,
                       a.disaggregated ? "disaggregated" : "aggregated", md_cell(a.layout), a.gpus, a.output_tokens_per_s,
                       a.goodput_tokens_per_s, format_seconds(a.ttft_p90_s), format_seconds(a.tpot_p90_s), price_text(row),
                       row.cost_per_hour > 0 ? format_usd(row.cost_per_hour) : "no price", per_million_text(row));
  }
  out += "\n";
  for (const ServeSweepRow& row : r.rows)
    if (row.ok) out += "- " + row.cluster + ": " + md_cell(row.why) + "\n";
  return out + "\n" + kPriceNote + "\n";
}

std::string serve_sweep_html(const ServeSweepResults& r) {
  std::string body = "<h1>SymTensor sweep --serve</h1>\n<p>" + html::esc(serve_sweep_heading(r)) + "; searched in " +
                     html::esc(format_seconds(r.elapsed_s)) + ".</p>\n";
  if (const ServeSweepRow* c = cheapest_row(r))
    body += "<p><b>Cheapest: " + html::esc(c->cluster) + "</b>, " + html::esc(c->answer.layout) + " on " +
            std::to_string(c->answer.gpus) + " GPUs: " + html::esc(per_million_text(*c)) +
            " per million output tokens at " + html::esc(price_text(*c)) + " per GPU-hour.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const ServeSweepRow& row : r.rows) {
    if (!row.ok) {
      rows.push_back({row.cluster, std::to_string(row.cluster_gpus), "—", row.error, "—", "—", "—", "—", price_text(row), "—"});
      continue;
    }
    const ServeAnswer& a = row.answer;
    rows.push_back({row.cluster, std::to_string(row.cluster_gpus), a.disaggregated ? "disaggregated" : "aggregated", a.layout,
                    std::to_string(a.gpus), fmt::format("{:.0f}", a.output_tokens_per_s), format_seconds(a.ttft_p90_s),
                    format_seconds(a.tpot_p90_s), price_text(row), per_million_text(row)});
  }
  body += html::table({"cluster", "GPUs", "kind", "layout", "GPUs used", "output tokens/s", "TTFT p90", "TPOT p90",
                       "price per GPU-hour", "per million output tokens"},
                      rows, "sweep");
  body += "<ul>\n";
  for (const ServeSweepRow& row : r.rows)
    if (row.ok) body += "<li>" + html::esc(row.cluster + ": " + row.why) + "</li>\n";
  body += "</ul>\n<p class=\"note\">" + html::esc(kPriceNote) + " Same numbers: results.csv, results.json, report.md.</p>\n";
  return html::page("SymTensor sweep --serve: " + r.model, body);
}

void write_serve_sweep_report(const ServeSweepResults& r, const std::string& dir) {
  sim::write_files_atomically(dir, {{"results.csv", serve_sweep_csv(r)},
                                    {"results.json", serve_sweep_json(r).dump(2) + "\n"},
                                    {"report.md", serve_sweep_markdown(r)},
                                    {"report.html", serve_sweep_html(r)}});
}

}  // namespace symtensor::compiler
