// The strategy-quality benchmark: every workload of the suite under every strategy
// (through `symtensor compare`'s engine, compiler/report/compare.h), one Markdown table and
// one CSV.
//   symtensor-quality bench/quality/suite.yaml OUT_DIR [--only NAME,...] [--no-simulate]
// Writes OUT_DIR/quality.md and OUT_DIR/quality.csv (temporary name, then renamed). A
// strategy that cannot be made (not built in yet, or the plan is impossible) is a row
// with the reason. Throughput is the simulation's (the referee) when it ran, else the
// analytic estimate's; the ratio is to Megatron-LM's best configuration's throughput.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/quality/suite.h"
#include "compiler/report/compare.h"
#include "hardware/cluster.h"
#include "hardware/stack.h"
#include "onnx_models/model_zoo.h"

namespace fs = std::filesystem;
using namespace symtensor;

namespace {

struct Row {
  const quality::Workload* workload = nullptr;
  int devices = 0;
  double memory_gb = 0;
  std::string strategy, label, evaluator, error;
  bool ok = false, fits = false;
  double samples_per_s = 0, tokens_per_s = 0, step_s = 0, mfu = 0, peak_gb = 0, search_s = 0;
  double ratio = 0;  // throughput / the baseline's (Megatron-best) throughput; 0 when either is missing
  // The analytic estimate's step and its ratio to Megatron-best's estimate (0 when either
  // is missing or does not fit): the second evaluator, whose ranking should agree.
  double estimate_s = 0, estimate_ratio = 0;
  double bound_s = 0;  // the workload's step_time_lower_bound, 0 when unknown
};

// Within the estimate's resolution two plans tie (the refinement's threshold).
constexpr double kTie = 0.005;

// Whether the estimate puts SymTensor on the same side of Megatron-best as the simulation.
bool rankings_agree(const Row& r) {
  const double sim = r.ratio - 1, est = r.estimate_ratio - 1;
  return std::abs(sim) < kTie || std::abs(est) < kTie || (sim > 0) == (est > 0);
}

std::vector<Row> run_workload(const quality::Workload& w, bool simulate, const fs::path& scratch) {
  const models::ModelConfig config = models::apply_overrides(models::preset_config(w.preset), w.overrides);
  const fs::path model = scratch / (w.name + ".onnx");
  models::save_model(models::build_model(config), model.string());
  hardware::Cluster cluster = hardware::load_cluster(w.cluster);
  if (w.nodes || w.gpus) cluster = hardware::scale_cluster(cluster, w.nodes, w.gpus);
  if (w.stack) cluster = hardware::with_software(cluster, hardware::Software{*w.stack});

  compiler::CompareOptions options;
  options.model = model.string();
  options.bind = quality::bind_text(w);
  options.strategies = w.strategies;
  options.simulate = simulate;
  options.progress = [&](const std::string& line) { std::cerr << "  " << line << "\n"; };
  const compiler::CompareResults results = compiler::run_compare(options, cluster);
  fs::remove(model);

  std::vector<Row> rows;
  double megatron = 0, megatron_estimate = 0;
  for (const auto& s : results.strategies) {
    Row r;
    r.workload = &w;
    r.devices = results.devices;
    r.memory_gb = results.device_memory_bytes / 1e9;
    r.strategy = s.strategy;
    r.label = s.label;
    r.bound_s = results.step_lower_bound_s;
    r.ok = s.ok;
    r.error = s.ok ? s.simulation_error : s.error;
    if (s.ok) {
      r.evaluator = s.evaluator();
      r.fits = s.fits();
      r.samples_per_s = s.samples_per_s();
      r.tokens_per_s = results.tokens_per_s(s);
      r.step_s = s.step_time_s();
      r.mfu = s.mfu();
      r.peak_gb = s.peak_memory_bytes() / 1e9;
      r.search_s = s.search_time_s;
      if (s.estimate.fits) r.estimate_s = s.estimate.step_time_s;
      if (s.strategy == w.baseline && r.fits) megatron = r.samples_per_s;
      if (s.strategy == w.baseline) megatron_estimate = r.estimate_s;
    }
    rows.push_back(std::move(r));
  }
  for (Row& r : rows) {
    if (r.ok && r.fits && megatron > 0) r.ratio = r.samples_per_s / megatron;
    if (r.estimate_s > 0 && megatron_estimate > 0) r.estimate_ratio = megatron_estimate / r.estimate_s;
  }
  return rows;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string md_cell(std::string s) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = ' ';
  return s;
}

std::string csv(const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "workload,model,cluster,devices,device_memory_gb,bind,strategy,plan,status,evaluator,step_time_s,"
         "samples_per_s,tokens_per_s,mfu,ratio_to_megatron_best,peak_memory_gb,fits,search_time_s,"
         "estimate_step_time_s,estimate_ratio_to_megatron_best,step_lower_bound_s,error\n";
  for (const Row& r : rows) {
    const auto& w = *r.workload;
    const std::string status = !r.ok ? "no plan" : r.fits ? "ok" : "out of memory";
    out << csv_field(w.name) << ',' << csv_field(w.preset) << ',' << csv_field(w.cluster) << ',' << r.devices << ','
        << fmt::format("{:.1f}", r.memory_gb) << ',' << csv_field(quality::bind_text(w)) << ',' << r.strategy << ','
        << csv_field(r.label) << ',' << status << ',' << r.evaluator << ',';
    if (r.ok)
      out << fmt::format("{:.6g},{:.6g},{:.6g},{:.4f},{},{:.2f},{},{:.3f}", r.step_s, r.samples_per_s, r.tokens_per_s,
                         r.mfu, r.ratio > 0 ? fmt::format("{:.3f}", r.ratio) : "", r.peak_gb, r.fits ? "yes" : "no",
                         r.search_s)
          << ',' << (r.estimate_s > 0 ? fmt::format("{:.6g}", r.estimate_s) : "") << ','
          << (r.estimate_ratio > 0 ? fmt::format("{:.3f}", r.estimate_ratio) : "");
    else
      out << ",,,,,,,,,";
    out << ',' << (r.bound_s > 0 ? fmt::format("{:.6g}", r.bound_s) : "");
    out << ',' << csv_field(r.error) << '\n';
  }
  return out.str();
}

std::string throughput(const Row& r) {
  const double t = r.tokens_per_s > 0 ? r.tokens_per_s : r.samples_per_s;
  const char* unit = r.tokens_per_s > 0 ? "tok/s" : "samples/s";
  return t >= 1e6 ? fmt::format("{:.2f} M{}", t / 1e6, unit) : t >= 1e3 ? fmt::format("{:.1f} k{}", t / 1e3, unit)
                                                                        : fmt::format("{:.1f} {}", t, unit);
}

std::string markdown(const std::vector<Row>& rows, const std::vector<std::string>& strategies, double elapsed) {
  std::ostringstream out;
  out << "| workload | model, cluster | strategy | plan | throughput | vs megatron-best | estimated | MFU | of bound | peak memory | search |\n"
      << "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& r : rows) {
    const auto& w = *r.workload;
    out << "| " << md_cell(w.name) << " | "
        << md_cell(fmt::format("{} ({}), {} x{} ({:.0f} GB)", w.preset, quality::bind_text(w), w.cluster, r.devices,
                               r.memory_gb))
        << " | " << r.strategy << " | ";
    if (!r.ok) {
      out << md_cell("no plan: " + r.error) << " | | | | | | | |\n";
      continue;
    }
    std::string label = r.label;
    if (label.rfind(r.strategy, 0) == 0) label = label.substr(r.strategy.size());
    if (label.empty() || label == " ") label = "-";
    out << md_cell(label) << " | " << (r.fits ? throughput(r) : "does not fit") << " | "
        << (r.ratio > 0 ? fmt::format("{:.2f}x", r.ratio) : "-") << " | "
        << (r.estimate_ratio > 0 ? fmt::format("{:.2f}x", r.estimate_ratio) : "-") << " | "
        << (r.fits ? fmt::format("{:.1f}%", 100 * r.mfu) : "-") << " | "
        << (r.fits && r.bound_s > 0 ? fmt::format("{:.0f}%", 100 * r.bound_s / r.step_s) : "-") << " | "
        << fmt::format("{:.1f} GB", r.peak_gb)
        << " | " << fmt::format("{:.2f} s", r.search_s) << " |\n";
  }
  int compared = 0, agreeing = 0;
  std::string disagree;
  for (const Row& r : rows) {
    if (r.strategy != "symtensor" || r.ratio <= 0 || r.estimate_ratio <= 0) continue;
    ++compared;
    if (rankings_agree(r)) ++agreeing;
    else disagree += fmt::format("{}{} ({:.3f}x simulated, {:.3f}x estimated)", disagree.empty() ? "" : ", ",
                                 r.workload->name, r.ratio, r.estimate_ratio);
  }
  out << fmt::format("\nThe two evaluators rank SymTensor against Megatron-best alike on {} of {} workloads "
                     "(within {:.1f}% is a tie){}.\n",
                     agreeing, compared, 100 * kTie, disagree.empty() ? "" : "; not on " + disagree);
  // Headroom: Megatron-best's step over the bound, the most any plan could gain on it.
  double most = 0;
  std::string most_at;
  int above_13 = 0, above_2 = 0, bounded = 0;
  for (const Row& r : rows) {
    if (r.strategy != r.workload->baseline || !r.fits || r.bound_s <= 0 || r.step_s <= 0) continue;
    const double headroom = r.step_s / r.bound_s;
    ++bounded;
    above_13 += headroom >= 1.3, above_2 += headroom >= 2;
    if (headroom > most) most = headroom, most_at = r.workload->name;
  }
  if (bounded > 0)
    out << fmt::format("\nHeadroom: no plan this cost model prices can be more than {:.2f}x faster than Megatron-best on "
                       "any of the {} workloads ({}); 1.3x would be possible at most on {}, 2x on {} (`of bound`: the "
                       "step's lower bound over the plan's step, see compiler/cost/step_bound.h).\n",
                       most, bounded, most_at, above_13, above_2);
  std::string strategy_list;
  for (const auto& s : strategies) strategy_list += (strategy_list.empty() ? "" : ", ") + s;
  out << "\nStrategies: " << strategy_list << ". Throughput from the discrete-event simulation "
      << "when it ran (else the analytic estimate); `vs megatron-best` is throughput over that of Megatron-LM's best "
      << "configuration (for a vision-language model, megatron-mimo: Megatron MIMO's non-colocated best, "
      << "compiler/report/mimo.h), `estimated` the same ratio by the analytic estimate; peak memory per device; search is the "
      << "wall time to make the plan. Total "
      << fmt::format("{:.0f} s", elapsed) << ".\n";
  return out.str();
}

void write_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out || !(out << text) || !out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

std::set<std::string> split_names(const std::string& text) {
  std::set<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.insert(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> positional;
    std::set<std::string> only;
    bool simulate = true;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--no-simulate") simulate = false;
      else if (a == "--only" && i + 1 < argc) only = split_names(argv[++i]);
      else if (a.rfind("--", 0) == 0) throw std::runtime_error("unknown option '" + a + "'");
      else positional.push_back(a);
    }
    if (positional.size() != 2)
      throw std::runtime_error("usage: symtensor-quality SUITE.yaml OUT_DIR [--only NAME,...] [--no-simulate]");
    const quality::Suite suite = quality::load_suite(positional[0]);
    for (const auto& name : only) {
      bool known = false;
      for (const auto& w : suite.workloads) known |= w.name == name;
      if (!known) throw std::runtime_error("--only: no workload named '" + name + "' in " + positional[0]);
    }
    const fs::path out_dir = positional[1];
    fs::create_directories(out_dir);
    const fs::path scratch = out_dir / ".models";
    fs::create_directories(scratch);

    const auto start = std::chrono::steady_clock::now();
    std::vector<Row> rows;
    for (const auto& w : suite.workloads) {
      if (!only.empty() && !only.count(w.name)) continue;
      std::cerr << "quality: " << w.name << " (" << w.preset << " on " << w.cluster << ")\n";
      try {
        auto part = run_workload(w, simulate, scratch);
        rows.insert(rows.end(), part.begin(), part.end());
      } catch (const std::exception& e) {  // the workload itself is broken: one row per strategy saying why
        for (const auto& s : w.strategies) {
          Row r;
          r.workload = &w;
          r.strategy = s;
          r.error = e.what();
          rows.push_back(r);
        }
        std::cerr << "  workload failed: " << e.what() << "\n";
      }
    }
    fs::remove_all(scratch);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<std::string> columns;  // every strategy run, in first-seen order
    for (const Row& r : rows)
      if (std::find(columns.begin(), columns.end(), r.strategy) == columns.end()) columns.push_back(r.strategy);
    write_file(out_dir / "quality.csv", csv(rows));
    write_file(out_dir / "quality.md", markdown(rows, columns, elapsed));
    std::cout << markdown(rows, columns, elapsed);
    std::cerr << "quality: wrote " << (out_dir / "quality.md").string() << " and " << (out_dir / "quality.csv").string()
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "symtensor-quality: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
