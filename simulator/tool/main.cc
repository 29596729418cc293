// symtensor-sim PROGRAM.json --cluster PROFILE [--full] [--trace trace.json] [--json]
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "hardware/cluster.h"
#include "simulator/engine/simulator.h"
#include "simulator/program/program_json.h"
#include "simulator/stats/chrome_trace.h"
#include "simulator/stats/result_json.h"
#include "simulator/stats/summary_text.h"

int main(int argc, char** argv) {
  CLI::App app{"Simulate one training step of a SymTensor step program on a cluster"};
  std::string program_path, cluster_name, trace_path;
  bool full = false, as_json = false;
  app.add_option("program", program_path, "step program (JSON)")->required();
  app.add_option("--cluster", cluster_name, "bundled profile name, NAMExN, or path to a cluster YAML")->required();
  app.add_flag("--full", full, "simulate every rank instead of one per rank class");
  app.add_option("--trace", trace_path, "write a Chrome trace (opens in Perfetto)");
  app.add_flag("--json", as_json, "print results as JSON");
  CLI11_PARSE(app, argc, argv);
  try {
    using namespace symtensor;
    sim::Program program = sim::load_program(program_path);
    hardware::Cluster cluster = hardware::load_cluster(cluster_name);
    sim::SimOptions options;
    options.mode = full ? sim::SimMode::full : sim::SimMode::symmetric;
    options.record_trace = !trace_path.empty();
    sim::SimResult result = sim::simulate(program, cluster, options);
    if (!trace_path.empty()) sim::write_chrome_trace(program, result, trace_path);
    std::fputs(as_json ? (sim::result_to_json(result).dump(1) + "\n").c_str() : sim::summary_text(result).c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "symtensor-sim: error: %s\n", e.what());
    return 1;
  }
}
