#include "compiler/report/report_files.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::compiler {

void write_compare_report(const CompareResults& r, const std::string& dir) {
  sim::write_files_atomically(dir, {{"results.csv", compare_csv(r)},
                                    {"results.json", compare_json(r).dump(2) + "\n"},
                                    {"report.md", compare_markdown(r)},
                                    {"report.html", compare_html(r)}});
}

void write_sweep_report(const SweepResults& r, const std::string& dir) {
  sim::write_files_atomically(dir, {{"results.csv", sweep_csv(r)},
                                    {"results.json", sweep_json(r).dump(2) + "\n"},
                                    {"report.md", sweep_markdown(r)},
                                    {"report.html", sweep_html(r)}});
}

}  // namespace symtensor::compiler
