// report.md of compare and sweep.
#include <cmath>

#include <fmt/format.h>

#include "compiler/report/report_files.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

std::string md(std::string text) {
  for (std::size_t i = 0; (i = text.find('|', i)) != std::string::npos; i += 2) text.replace(i, 1, "\\|");
  return text;
}

}  // namespace

std::string compare_markdown(const CompareResults& r) {
  std::string out = "# SymTensor compare\n\nModel `" + r.model + "` on " + r.cluster + " (" + describe_devices(r.device_kinds) + "); dims:";
  for (const auto& [k, v] : r.bindings) out += " " + k + "=" + format_count(v);
  out += "\n\n";
  if (r.chosen >= 0) out += "**Chosen: " + md(r.strategies[r.chosen].label) + "**\n\n";
  else out += "**No strategy gave a plan that fits.**\n\n";
  if (r.step_lower_bound_s > 0) out += "Bound: " + describe_step_lower_bound(r) + ".\n\n";
  if (!r.fleet.empty())  // the fleet search: each group's stages and layers, Megatron-best (a) and (b), the ceiling
    out += "## Mixed fleet: the plan by group\n\n```\n" + r.fleet + "```\n\n";
  out += "| strategy | step time | samples/s | tokens/s | " + std::string(kExactMfuLabel) + " | " +
         md(palm_mfu_label(r.palm)) + " | peak memory / device | fits | search time | evaluator |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : r.strategies) {
    if (!s.ok) {
      out += "| " + md(s.strategy) + " | no plan: " + md(s.error) + " | | | | | | | | |\n";
      continue;
    }
    out += "| " + md(s.label) + " | " + format_seconds(s.step_time_s()) + " | " + format_si(s.samples_per_s(), "") +
           " | " + format_si(r.tokens_per_s(s), "") + " | " + format_percent(s.mfu()) + " | " +
           format_percent(s.mfu_6n()) + " | " +
           format_bytes(s.peak_memory_bytes()) + " of " + format_bytes(r.row_memory_bytes(s)) + " | " +
           (s.fits() ? "yes" : "no") + " | " + format_seconds(s.search_time_s) + " | " + s.evaluator() +
           (s.simulation_error.empty() ? "" : " (" + md(s.simulation_error) + ")") + " |\n";
  }
  out += "\n" + describe_mfu_conventions(r.palm) + "\n";
  out += "\n## Step-time breakdown (seconds)\n\n| strategy |";
  for (const auto& c : breakdown_components()) out += " " + c + " |";
  out += "\n|---|";
  for (std::size_t c = 0; c < breakdown_components().size(); ++c) out += "---|";
  out += "\n";
  for (const auto& s : r.strategies) {
    if (!s.ok) continue;
    out += "| " + md(s.label) + " |";
    for (double v : breakdown_values(s)) out += " " + format_seconds(v) + " |";
    out += "\n";
  }
  out += "\n## Memory per device, part by part (analytic peak)\n\n| strategy | stage | parameters | gradients | optimizer "
         "states | activations (per micro-batch x in flight) | transient | reserve | peak |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : r.strategies) {
    for (const auto& b : s.memory)
      out += "| " + md(s.label) + " | " + std::to_string(b.stage) + " | " + format_bytes(b.parameters) + " | " +
             format_bytes(b.gradients) + " | " + format_bytes(b.optimizer) + " | " + format_bytes(b.activations) + " (" +
             format_bytes(b.activations_per_micro_batch) + " x " + fmt::format("{:.3g}", b.micro_batches_in_flight) + ") | " +
             format_bytes(b.transient) + " | " + format_bytes(b.reserve) + " | " + format_bytes(b.peak) + " |\n";
  }
  out += "\n## Step time as a formula of the batch\n\n";
  for (const auto& s : r.strategies)
    if (s.ok && s.formula)
      out += "- " + md(s.label) + ": `T(batch) = " + s.formula->text() + "`; peak memory `" +
             format_bytes(s.formula->memory_constant) + " + " + format_bytes(s.formula->memory_per_sample) +
             " x batch`; largest batch that fits: " + describe_max_batch(*s.formula) + "\n";
  out += "\n## Break-even points\n\n";
  if (r.break_evens.empty()) out += "None at a batch of one sample or more.\n";
  for (const auto& b : r.break_evens)
    out += "- " + md(b.faster_below) + " is faster below batch " + format_count(std::round(b.batch)) + ", " +
           md(b.faster_above) + " above it" + (b.within_validity ? "" : " (outside a formula's valid range)") + "\n";
  if (r.chosen >= 0) {
    const auto& e = r.strategies[r.chosen].explanation;
    out += "\n## The chosen plan\n\n";
    for (const std::string& line : r.why_chosen) out += line + "\n\n";
    out += e.summary + "\n\n| operator | op | count | cut | communication |\n|---|---|---|---|---|\n";
    for (const auto& o : e.ops)
      out += "| " + md(o.pattern) + " | " + o.op_type + " | " + std::to_string(o.count) + " | " + md(o.cut) + " | " +
             md(o.comm.empty() ? "none" : o.comm) + " |\n";
    out += "\n";
    for (const auto& line : e.communication) out += "- " + line + "\n";
  }
  return out;
}

std::string sweep_markdown(const SweepResults& r) {
  std::string out = "# SymTensor sweep\n\nModel `" + r.model + "`, training " + format_si(r.tokens, "tokens") +
                    "; best plan per point by the analytic estimate; swept in " + format_seconds(r.elapsed_s) +
                    ".\n\n";
  if (const SweepPoint* f = fastest_point(r))
    out += "**Fastest: " + f->cluster + " x" + std::to_string(f->gpus) + "** with " + md(f->strategy) + ": " +
           format_duration(f->time_to_train_s) +
           (f->price_per_gpu_hour > 0 ? ", " + format_usd(f->cost_usd) + " at " + describe_price(r, *f) : ", no price") +
           ".\n\n";
  if (const SweepPoint* c = cheapest_point(r))
    out += "**Cheapest: " + c->cluster + " x" + std::to_string(c->gpus) + "** with " + md(c->strategy) + ": " +
           format_duration(c->time_to_train_s) + ", " + format_usd(c->cost_usd) + " at " + describe_price(r, *c) + ".\n\n";
  out += "| cluster | GPUs | best plan | step time | tokens/s | " + std::string(kExactMfuLabel) + " | " +
         md(palm_mfu_label(r.palm)) + " | time to train | price | cost | per M tokens |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : r.points) {
    if (!p.ok) {
      out += "| " + p.cluster + " | " + std::to_string(p.gpus) + " | no plan: " + md(p.error) + " | | | | | | | | |\n";
      continue;
    }
    out += "| " + p.cluster + " | " + std::to_string(p.gpus) + " | " + md(p.strategy) + " | " +
           format_seconds(p.step_time_s) + " | " + format_si(p.tokens_per_s, "") + " | " + format_percent(p.mfu) +
           " | " + format_percent(p.mfu_6n) + " | " + format_duration(p.time_to_train_s) + " | " +
           describe_price(r, p) + " | " + format_usd(p.cost_usd) + " | " + format_usd(p.cost_per_million_tokens) + " |\n";
  }
  return out + "\n" + describe_mfu_conventions(r.palm) +
         "\n\nPrices marked illustrative are the profiles', not quotes: `symtensor sweep --price GPU=USD/h` "
         "(a profile name or its GPU) uses yours.\n";
}

}  // namespace symtensor::compiler
