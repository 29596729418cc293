#include "compiler/report/failure_report.h"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/base/units.h"
#include "hardware/cluster_loss.h"

namespace symtensor::compiler {
namespace {

int parse_count(const std::string& part, const std::string& text) {
  std::size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(part, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (part.empty() || used != part.size() || v < 0)
    throw std::runtime_error("--fail-nodes " + text + ": expected a count of nodes or a range A..B (0..2)");
  return v;
}

std::string throughput_text(double per_s, double tokens_per_sample) {
  return tokens_per_sample > 0 ? format_si(per_s, "tokens/s") : format_si(per_s, "samples/s");
}

std::string plan_line(const char* who, const GridPlan& p, int gpus_left, double tokens_per_sample) {
  if (!p.found) return fmt::format("  {:<15}no plan ({})\n", who, p.note);
  std::string s = fmt::format("  {:<15}uses {} of {} GPUs, idles {}; step {}{}, {}{}\n", who, p.gpus_used, gpus_left,
                              gpus_left - p.gpus_used, format_seconds(p.step_time_s), p.simulated ? " (simulated)" : "",
                              throughput_text(plan_throughput(p, tokens_per_sample), tokens_per_sample),
                              p.fits ? "" : ", DOES NOT FIT");
  if (!p.note.empty()) s += fmt::format("  {:<15}({})\n", "", p.note);
  return s;
}

std::string cell(const GridPlan& p, double tokens_per_sample) {
  if (!p.found) return "no plan | | | ";
  return fmt::format("{} | {} | {} | {}", p.gpus_used, format_seconds(p.step_time_s),
                     throughput_text(plan_throughput(p, tokens_per_sample), tokens_per_sample), p.fits ? "yes" : "no");
}

nlohmann::json plan_json(const GridPlan& p, double tokens_per_sample) {
  nlohmann::json j;
  j["found"] = p.found;
  if (!p.found) {
    j["why"] = p.note;
    return j;
  }
  j["cluster"] = p.cluster.name;
  j["gpus_used"] = p.gpus_used;
  j["step_time_s"] = p.step_time_s;
  j[tokens_per_sample > 0 ? "tokens_per_s" : "samples_per_s"] = plan_throughput(p, tokens_per_sample);
  j["fits"] = p.fits;
  j["simulated"] = p.simulated;
  if (!p.note.empty()) j["note"] = p.note;
  return j;
}

}  // namespace

std::pair<int, int> parse_fail_nodes(const std::string& text) {
  const std::size_t dots = text.find("..");
  if (dots == std::string::npos) {
    const int n = parse_count(text, text);
    return {n, n};
  }
  const int from = parse_count(text.substr(0, dots), text), to = parse_count(text.substr(dots + 2), text);
  if (from > to) throw std::runtime_error("--fail-nodes " + text + ": the range runs downwards; give A..B with A <= B");
  return {from, to};
}

double plan_throughput(const GridPlan& p, double tokens_per_sample) {
  if (!p.found || !(p.step_time_s > 0)) return 0;
  return p.plan.global_batch / p.step_time_s * (tokens_per_sample > 0 ? tokens_per_sample : 1);
}

FailureSweep run_failure_sweep(Graph& graph, const hardware::Cluster& cluster, int from, int to, const std::string& group,
                               const StrategyOptions& options, const std::function<void(const std::string&)>& progress) {
  FailureSweep sweep;
  sweep.cluster = cluster.name;
  sweep.tokens_per_sample = bound_sequence_length(graph);
  // Every loss is checked before the (slow) searches: a bad range fails at once.
  std::vector<hardware::Cluster> lefts;
  for (int lost = from; lost <= to; ++lost) lefts.push_back(hardware::without_nodes(cluster, lost, group));
  for (int lost = from; lost <= to; ++lost) {
    FailureRow row;
    row.lost = lost;
    row.plans = plans_after_loss(graph, lefts[lost - from], options);
    // A fleet's rows are simulated; one left with a single group is too, to compare alike.
    if (cluster.mixed()) simulate_failure_plans(graph, row.plans);
    if (progress)
      progress(fmt::format("{} node{} lost: {} GPUs left, SymTensor {}, Megatron-best {}", lost, lost == 1 ? "" : "s",
                           row.plans.gpus_left, format_seconds(row.plans.symtensor.step_time_s),
                           row.plans.megatron.found ? format_seconds(row.plans.megatron.step_time_s) : "no plan"));
    sweep.global_batch = row.plans.symtensor.plan.global_batch;
    sweep.rows.push_back(std::move(row));
  }
  return sweep;
}

std::string describe_after_loss(const FailurePlans& plans, int lost, double tokens_per_sample) {
  std::string s = fmt::format("after losing {} node{}: {} left, {} GPUs\n", lost, lost == 1 ? "" : "s", plans.left.name,
                              plans.gpus_left);
  s += plan_line("SymTensor:", plans.symtensor, plans.gpus_left, tokens_per_sample);
  s += plan_line("Megatron-best:", plans.megatron, plans.gpus_left, tokens_per_sample);
  if (plans.symtensor.found && plans.megatron.found && plans.symtensor.step_time_s > 0)
    s += fmt::format("  speedup over Megatron-best: {:.2f}x\n", plans.megatron.step_time_s / plans.symtensor.step_time_s);
  return s;
}

std::string failure_table(const FailureSweep& sweep) {
  std::string s =
      "| nodes lost | cluster left | GPUs left | SymTensor GPUs | step | throughput | fits | Megatron-best GPUs | step | "
      "throughput | fits | speedup |\n|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|\n";
  for (const FailureRow& r : sweep.rows) {
    const GridPlan &a = r.plans.symtensor, &b = r.plans.megatron;
    const std::string speedup =
        a.found && b.found && a.step_time_s > 0 ? fmt::format("{:.2f}x", b.step_time_s / a.step_time_s) : "";
    s += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.lost, r.plans.left.name, r.plans.gpus_left,
                     cell(a, sweep.tokens_per_sample), cell(b, sweep.tokens_per_sample), speedup);
  }
  return s;
}

std::vector<std::pair<std::string, std::string>> failure_sweep_files(const FailureSweep& sweep) {
  std::string md = fmt::format("# What-if after a failure: {} on {}\n\n", sweep.model, sweep.cluster);
  md += "Throughput as nodes are lost: SymTensor's plan on what is left and Megatron-best on its largest valid grid "
        "(tp x pp x cp x dp must be the whole world, dividing the heads, layers and batch); the GPUs each uses, the rest "
        "idle. Step times are the analytic estimate (simulated where the sweep starts on a mixed fleet).\n\n";
  md += failure_table(sweep);
  for (const FailureRow& r : sweep.rows)
    for (const auto* p : {&r.plans.symtensor, &r.plans.megatron})
      if (!p->note.empty())
        md += fmt::format("\n- {} lost, {}: {}", r.lost, p == &r.plans.symtensor ? "SymTensor" : "Megatron-best", p->note);
  md += "\n";
  const char* unit = sweep.tokens_per_sample > 0 ? "tokens_per_s" : "samples_per_s";
  std::string csv = fmt::format(
      "nodes_lost,cluster_left,gpus_left,symtensor_gpus,symtensor_step_s,symtensor_{0},symtensor_fits,megatron_gpus,"
      "megatron_step_s,megatron_{0},megatron_fits\n",
      unit);
  nlohmann::json rows = nlohmann::json::array();
  for (const FailureRow& r : sweep.rows) {
    std::string line = fmt::format("{},{},{}", r.lost, r.plans.left.name, r.plans.gpus_left);
    for (const GridPlan* p : {&r.plans.symtensor, &r.plans.megatron})
      line += p->found ? fmt::format(",{},{:.6g},{:.6g},{}", p->gpus_used, p->step_time_s,
                                     plan_throughput(*p, sweep.tokens_per_sample), p->fits ? 1 : 0)
                       : ",,,,";
    csv += line + "\n";
    nlohmann::json j;
    j["nodes_lost"] = r.lost;
    j["cluster_left"] = r.plans.left.name;
    j["gpus_left"] = r.plans.gpus_left;
    j["symtensor"] = plan_json(r.plans.symtensor, sweep.tokens_per_sample);
    j["megatron"] = plan_json(r.plans.megatron, sweep.tokens_per_sample);
    rows.push_back(j);
  }
  nlohmann::json all;
  all["model"] = sweep.model;
  all["cluster"] = sweep.cluster;
  all["rows"] = rows;
  return {{"report.md", md}, {"results.csv", csv}, {"results.json", all.dump(2) + "\n"}};
}

}  // namespace symtensor::compiler
