// symtensor inspect MODEL.onnx [--bind ...] [--json]
#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/analysis/model_stats.h"
#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/base/units.h"

namespace symtensor::driver {
namespace {

// Exporters name a dim per tensor: a deep model brings thousands of names for a handful of
// values. One line per value, its first names in natural order (unk__2 before unk__10);
// `inspect --json` lists every name.
template <typename Aliases>
void print_aliases(const Aliases& aliases) {
  constexpr std::size_t kShown = 4;
  std::map<std::string, std::vector<std::string>> by_value;
  for (const auto& [name, value] : aliases) by_value[compiler::to_text(value)].push_back(name);
  std::cout << "aliases (dims the exporter named, as inference derives them; all of them: --json):\n";
  for (auto& [value, names] : by_value) {
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    std::cout << "  " << value << ": ";
    for (std::size_t i = 0; i < names.size() && i < kShown; ++i) std::cout << (i ? ", " : "") << names[i];
    if (names.size() > kShown) std::cout << " and " << compiler::format_count(static_cast<double>(names.size() - kShown)) << " more";
    std::cout << "\n";
  }
}

using compiler::Graph;
using compiler::Tensor;

struct InspectOptions {
  ModelChoice input;
  bool json = false;
  int top = 10;
};

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + compiler::to_text(t.shape[i]);
  return s + "]";
}

// Values with unbound dims at 1: only for ranking operators by cost. The substitution is
// built once (a graph holds a few symbols per layer).
std::vector<double> rank_values(const Graph& g, const std::vector<compiler::NodeCost>& costs) {
  GiNaC::exmap ones;
  for (const auto& [name, sym] : g.symbols.all())
    if (!g.symbols.bindings().count(name)) ones[sym] = 1;
  std::vector<double> values;
  values.reserve(costs.size());
  for (const auto& c : costs) {
    const GiNaC::ex v = GiNaC::evalf(g.symbols.substitute(c.flops).subs(ones));
    values.push_back(GiNaC::is_a<GiNaC::numeric>(v) ? GiNaC::ex_to<GiNaC::numeric>(v).to_double() : 0.0);
  }
  return values;
}

nlohmann::json quantity(const Graph& g, const GiNaC::ex& e) {
  nlohmann::json j{{"formula", compiler::to_text(e)}};
  if (auto v = g.symbols.evaluate(e)) j["value"] = *v;
  return j;
}

void print_quantity(const Graph& g, const std::string& label, const GiNaC::ex& e, const std::string& unit) {
  std::cout << label << ": " << compiler::to_text(e);
  if (auto v = g.symbols.evaluate(e); v && !GiNaC::is_a<GiNaC::numeric>(e)) std::cout << " = " << compiler::format_si(*v, unit);
  else if (v) std::cout << " (" << compiler::format_si(*v, unit) << ")";
  std::cout << "\n";
}

void run_inspect(const InspectOptions& o) {
  Graph g = import_model(o.input, !o.json);
  const compiler::ModelStats stats = compiler::compute_model_stats(g);

  const std::vector<double> rank = rank_values(g, stats.node_costs);
  std::vector<std::size_t> by_cost(rank.size());
  for (std::size_t i = 0; i < by_cost.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::size_t a, std::size_t b) { return rank[a] > rank[b]; });
  std::vector<compiler::NodeCost> heaviest;
  for (std::size_t i : by_cost) heaviest.push_back(stats.node_costs[i]);
  heaviest.resize(std::min<std::size_t>(heaviest.size(), static_cast<std::size_t>(std::max(o.top, 0))));

  // The model's dims are the symbols of its inputs' and outputs' shapes.
  std::set<std::string> dims;
  for (const auto* ids : {&g.inputs, &g.outputs})
    for (auto id : *ids)
      for (const auto& d : g.tensor(id).shape)
        for (auto it = d.preorder_begin(); it != d.preorder_end(); ++it)
          if (GiNaC::is_a<GiNaC::symbol>(*it)) dims.insert(GiNaC::ex_to<GiNaC::symbol>(*it).get_name());

  if (o.json) {
    nlohmann::json j;
    j["model"] = o.input.path;
    j["graph"] = g.name;
    j["dims"] = dims;
    j["bindings"] = g.symbols.bindings();
    for (auto [key, ids] : {std::pair{"inputs", &g.inputs}, std::pair{"outputs", &g.outputs}}) {
      j[key] = nlohmann::json::array();
      for (auto id : *ids) {
        const Tensor& t = g.tensor(id);
        nlohmann::json shape = nlohmann::json::array();
        for (const auto& d : t.shape) shape.push_back(compiler::to_text(d));
        j[key].push_back({{"name", t.name}, {"dtype", compiler::to_string(t.dtype)}, {"shape", shape}});
      }
    }
    j["parameter_count"] = quantity(g, stats.parameter_count);
    j["parameter_bytes"] = quantity(g, stats.parameter_bytes);
    j["active_parameter_count"] = quantity(g, stats.active_parameter_count);
    j["forward_flops"] = quantity(g, stats.forward_flops);
    j["gemm_flops"] = quantity(g, stats.gemm_flops);
    j["attention_flops"] = quantity(g, stats.attention_flops);
    j["fused"] = stats.fused;
    for (const auto& [name, value] : g.symbols.aliases()) j["aliases"][name] = compiler::to_text(value);
    j["batch_dim"] = g.batch_dim;
    j["operators"] = stats.op_histogram;
    j["heaviest"] = nlohmann::json::array();
    for (const auto& c : heaviest)
      j["heaviest"].push_back({{"node", g.node(c.node).name}, {"op", g.node(c.node).op_type}, {"flops", quantity(g, c.flops)}});
    j["opaque"] = stats.opaque_ops;
    std::cout << j.dump(2) << "\n";
    return;
  }

  std::cout << "model: " << o.input.path << (g.name.empty() ? "" : " (graph " + g.name + ")") << "\n";
  std::cout << "dims:";
  for (const auto& d : dims) {
    std::cout << " " << d;
    if (auto it = g.symbols.bindings().find(d); it != g.symbols.bindings().end()) std::cout << "=" << it->second;
  }
  std::cout << "\nbatch dim: " << (g.batch_dim.empty() ? std::string("none (static shapes)") : g.batch_dim) << "\n";
  if (!g.symbols.aliases().empty()) print_aliases(g.symbols.aliases());
  std::cout << "inputs:\n";
  for (auto id : g.inputs)
    std::cout << "  " << g.tensor(id).name << "  " << compiler::to_string(g.tensor(id).dtype) << " " << shape_text(g.tensor(id)) << "\n";
  std::cout << "outputs:\n";
  for (auto id : g.outputs)
    std::cout << "  " << g.tensor(id).name << "  " << compiler::to_string(g.tensor(id).dtype) << " " << shape_text(g.tensor(id)) << "\n";
  if (auto n = g.symbols.evaluate(stats.parameter_count)) {
    std::cout << "parameters: " << compiler::format_count(*n) << " ("
              << compiler::format_bytes(*g.symbols.evaluate(stats.parameter_bytes)) << ")";
    const auto active = g.symbols.evaluate(stats.active_parameter_count);
    if (active && *active < *n) std::cout << ", active per token " << compiler::format_count(*active) << " (routed experts: top-k of E)";
    std::cout << "\n";
  }
  else
    std::cout << "parameters: " << compiler::to_text(stats.parameter_count) << "\n";
  print_quantity(g, "forward FLOPs", stats.forward_flops, "FLOP");
  print_quantity(g, "  of which GEMM/conv", stats.gemm_flops, "FLOP");
  if (!stats.attention_flops.is_zero()) print_quantity(g, "  of which fused attention", stats.attention_flops, "FLOP");
  std::cout << "fused:" << (stats.fused.empty() ? " nothing" : "") << "\n";
  for (const auto& [pattern, what] : stats.fused) std::cout << "  " << pattern << ": " << what << "\n";
  std::cout << "operators (" << g.nodes().size() << " nodes):";
  for (const auto& [op, n] : stats.op_histogram) std::cout << " " << op << " " << n << ";";
  std::cout << "\nheaviest operators:\n";
  for (const auto& c : heaviest) {
    std::cout << "  " << g.node(c.node).name << " (" << g.node(c.node).op_type << "): ";
    if (auto v = g.symbols.evaluate(c.flops)) std::cout << compiler::format_si(*v, "FLOP");
    else std::cout << compiler::to_text(c.flops) << " FLOP";
    std::cout << "\n";
  }
  std::cout << "opaque operators: " << (stats.opaque_ops.empty() ? "none" : "") << "\n";
  for (const auto& op : stats.opaque_ops) std::cout << "  " << op << "\n";
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Import an ONNX model and print its symbolic shapes, parameters and FLOPs");
  cmd->add_option("model", opts->input.path, "ONNX model file")->required();
  add_model_options(cmd, opts->input, "Bind dim symbols, e.g. batch=8,seq=2048");
  cmd->add_flag("--json", opts->json, "Print JSON instead of text");
  cmd->add_option("--top", opts->top, "How many of the heaviest operators to list")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->callback([opts] { run_inspect(*opts); });
}

}  // namespace symtensor::driver
