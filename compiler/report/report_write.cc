#include <filesystem>
#include <stdexcept>

#include "compiler/report/report_files.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::compiler {
namespace {

void make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::runtime_error("-o " + dir + ": cannot create the report folder" + (ec ? ": " + ec.message() : ""));
}

std::string in(const std::string& dir, const char* name) { return (std::filesystem::path(dir) / name).string(); }

}  // namespace

void write_compare_report(const CompareResults& r, const std::string& dir) {
  make_dir(dir);
  sim::write_file_atomically(in(dir, "results.csv"), compare_csv(r));
  sim::write_file_atomically(in(dir, "results.json"), compare_json(r).dump(2) + "\n");
  sim::write_file_atomically(in(dir, "report.md"), compare_markdown(r));
  sim::write_file_atomically(in(dir, "report.html"), compare_html(r));
}

void write_sweep_report(const SweepResults& r, const std::string& dir) {
  make_dir(dir);
  sim::write_file_atomically(in(dir, "results.csv"), sweep_csv(r));
  sim::write_file_atomically(in(dir, "results.json"), sweep_json(r).dump(2) + "\n");
  sim::write_file_atomically(in(dir, "report.md"), sweep_markdown(r));
  sim::write_file_atomically(in(dir, "report.html"), sweep_html(r));
}

}  // namespace symtensor::compiler
