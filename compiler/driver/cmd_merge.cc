// symtensor merge DIR... -o OUT: joins the folders of `sweep --shard K/N` runs into one
// sweep report (compiler/report/sweep_merge.h).
#include <iostream>
#include <memory>

#include "compiler/driver/commands.h"
#include "compiler/report/report_files.h"
#include "compiler/report/sweep_merge.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct MergeOptions {
  std::vector<std::string> dirs;
  std::string out;
};

void run_merge(const MergeOptions& o) {
  sim::check_output_dir(o.out, "-o");
  const compiler::SweepResults r = compiler::merge_sweep_dirs(o.dirs);
  compiler::write_sweep_report(r, o.out);
  std::cout << "merged " << o.dirs.size() << " shards, " << r.points.size() << " points\n"
            << "report: " << o.out << "/report.html (and report.md, results.csv, results.json)\n";
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand("merge", "Join the folders of `sweep --shard K/N` runs into one sweep report");
  cmd->add_option("dirs", o->dirs, "sweep output folders, one per shard")->required();
  cmd->add_option("-o,--output", o->out, "report folder")->required();
  cmd->callback([o]() { run_merge(*o); });
}

}  // namespace symtensor::driver
