#pragma once
// The report files of compare and sweep: report.html (self-contained, inline SVG),
// report.md, results.csv, results.json. Every number comes from CompareResults /
// SweepResults; CSV and JSON print numbers exactly (17 significant digits).
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/report/results.h"

namespace symtensor::compiler {

// The step-time components drawn in the breakdown chart, in order.
std::vector<std::string> breakdown_components();
std::vector<double> breakdown_values(const StrategyResult& r);
// "no plan steps faster than 1.2 s (...)": CompareResults::step_lower_bound_s in words; "" when unknown.
std::string describe_step_lower_bound(const CompareResults& r);
// StepFormula::max_batch_that_fits in words: "1,024 (a multiple of 512)", "none: even a batch
// of 512 does not fit", "unbounded (...)".
std::string describe_max_batch(const StepFormula& f);
// What the two MFU columns count: the exact count, and 6N + 12Lhs with its terms.
std::string describe_mfu_conventions(const PalmFlops& palm);

std::string compare_csv(const CompareResults& r);
nlohmann::json compare_json(const CompareResults& r);
std::string compare_markdown(const CompareResults& r);
std::string compare_html(const CompareResults& r);

// The sweep's headline points: the shortest time to train, and the lowest cost (a point
// with a price); nullptr when none.
const SweepPoint* fastest_point(const SweepResults& r);
const SweepPoint* cheapest_point(const SweepResults& r);
// "$2.50 (yours)", "$4.00 (illustrative)" or "no price": the point's price per GPU-hour and where it came from.
std::string describe_price(const SweepResults& r, const SweepPoint& p);

std::string sweep_csv(const SweepResults& r);
nlohmann::json sweep_json(const SweepResults& r);
std::string sweep_markdown(const SweepResults& r);
std::string sweep_html(const SweepResults& r);

// Creates `dir` when missing and writes the four files (temporary name, then rename).
// Throws naming the path on failure.
void write_compare_report(const CompareResults& r, const std::string& dir);
void write_sweep_report(const SweepResults& r, const std::string& dir);

// CompareResults::palm / SweepResults::palm in results.json ("palm_flops"), and back.
nlohmann::json palm_flops_json(const PalmFlops& palm);
PalmFlops palm_flops_from_json(const nlohmann::json& j);

// A CSV field, quoted when it holds a comma, quote or newline.
std::string csv_field(const std::string& text);
// Exact decimal text of a double ("inf" and "nan" as such).
std::string exact(double v);

}  // namespace symtensor::compiler
