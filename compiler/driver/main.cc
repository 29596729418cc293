// symtensor: the command-line driver. It only parses flags and calls into the libraries.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "compiler/driver/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"SymTensor: symbolic and adaptive tensor partitioning for distributed deep learning"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "symtensor 0.1.0");
  symtensor::driver::add_inspect_command(app);
  symtensor::driver::add_hardware_command(app);
  symtensor::driver::add_models_command(app);
  symtensor::driver::add_compile_command(app);
  symtensor::driver::add_shard_command(app);
  symtensor::driver::add_verify_command(app);
  symtensor::driver::add_simulate_command(app);
  symtensor::driver::add_compare_command(app);
  symtensor::driver::add_sweep_command(app);
  symtensor::driver::add_export_command(app);
  symtensor::driver::add_merge_command(app);
  symtensor::driver::add_fit_command(app);
  symtensor::driver::add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command's own exit status (it has said why)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // One line, like every other error: CLI11's own format adds a second.
    std::cerr << "symtensor: error: " << e.what() << " (see --help)\n";
    return e.get_exit_code();
  } catch (const std::exception& e) {
    std::cerr << "symtensor: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
