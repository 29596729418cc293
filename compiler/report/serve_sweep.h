#pragma once
// `symtensor sweep --serve` (issue #33): the serving search (compiler/serve/serve_search.h) on
// each cluster of a list, at one rate and SLOs, and what its answer costs: per million output
// tokens = GPUs x price per GPU-hour / (output tokens per hour / 1e6), at the profile's
// illustrative price or the user's (--price, as `sweep` takes it).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/serve/serve_search.h"

namespace symtensor::compiler {

struct ServeSweepOptions {
  std::vector<std::string> clusters;       // profile names (or paths)
  std::vector<int> gpus;                   // sizes (sweep's --gpus); empty: each profile as it is
  std::optional<int> nodes;                // --nodes: every profile at this many nodes (without --gpus)
  std::map<std::string, double> prices;    // --price, by the name in `clusters`
  ServeSearchOptions search;
  ServingPrecision precision;
  std::string engine = "trtllm";           // hardware/engines
  std::function<void(const std::string&)> progress;
};

struct ServeSweepRow {
  std::string cluster, device;
  int cluster_gpus = 0;                    // GPUs the search could use
  bool ok = false;                         // a layout meets the SLOs
  std::string error;                       // why not (no layout meets the SLOs, a bad profile, ...)
  ServeAnswer answer;                      // when ok
  std::string why;                         // the search's sentence: aggregated or disaggregated, and why
  double price_per_gpu_hour = 0;           // 0: no price
  bool price_given = false;                // --price, else the profile's illustrative one
  double output_tokens_per_hour = 0;       // the answer's simulated output tokens/s x 3600
  double cost_per_hour = 0;                // GPUs x price
  double cost_per_million_output_tokens = 0;
  double search_s = 0;
};

struct ServeSweepResults {
  std::string model, engine, precision, kv_precision;
  double rate = 0, attainment = 0;
  std::int64_t input_tokens = 0, output_tokens = 0;
  sim::ServingSlo slo;
  std::vector<ServeSweepRow> rows;
  double elapsed_s = 0;
};

ServeSweepResults run_serve_sweep(const ServingModel& model, const ServeSweepOptions& options);

// Cost per million output tokens: gpus x usd_per_gpu_hour / (output_tokens_per_s x 3600 / 1e6); 0 without a price or tokens.
double cost_per_million_output_tokens(int gpus, double usd_per_gpu_hour, double output_tokens_per_s);

// The table on stdout; the report files (serve_sweep_report.cc).
std::string serve_sweep_text(const ServeSweepResults& r);
std::string serve_sweep_csv(const ServeSweepResults& r);
nlohmann::json serve_sweep_json(const ServeSweepResults& r);
std::string serve_sweep_markdown(const ServeSweepResults& r);
std::string serve_sweep_html(const ServeSweepResults& r);
// results.csv, results.json, report.md, report.html in `dir` (each written then renamed).
void write_serve_sweep_report(const ServeSweepResults& r, const std::string& dir);

}  // namespace symtensor::compiler
