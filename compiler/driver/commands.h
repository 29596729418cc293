#pragma once
// Each subcommand lives in its own cmd_<name>.cc and registers itself here.
#include <CLI/CLI.hpp>

namespace symtensor::driver {

void add_inspect_command(CLI::App& app);
void add_hardware_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_shard_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace symtensor::driver
