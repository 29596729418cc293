// `symtensor hardware list` and `symtensor hardware show NAME [--nodes N] [--gpus G]`.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "compiler/driver/commands.h"
#include "hardware/cluster.h"
#include "hardware/describe.h"

namespace symtensor::driver {

void add_hardware_command(CLI::App& app) {
  CLI::App* hardware = app.add_subcommand("hardware", "List and show the bundled hardware profiles");
  hardware->require_subcommand(1);

  CLI::App* list = hardware->add_subcommand("list", "List the bundled hardware profiles");
  list->callback([] { std::cout << hardware::describe_profiles(); });

  struct ShowOptions {
    std::string profile;
    std::optional<int> nodes;
    std::optional<int> gpus;
  };
  auto options = std::make_shared<ShowOptions>();
  CLI::App* show = hardware->add_subcommand("show", "Show a profile's numbers, with units");
  show->add_option("profile", options->profile, "profile name (see `hardware list`), NAMExNODES, or a .yaml path")
      ->required();
  show->add_option("--nodes", options->nodes, "number of nodes (size of the outermost level)");
  show->add_option("--gpus", options->gpus, "GPUs used in each node (any count up to the node's size)");
  show->callback([options] {
    hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster(options->profile), options->nodes, options->gpus);
    std::cout << hardware::describe_cluster(cluster);
  });
}

}  // namespace symtensor::driver
