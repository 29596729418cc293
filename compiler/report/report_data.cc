// results.csv and results.json for compare and sweep.
#include <cmath>
#include <cstdio>

#include "compiler/report/report_files.h"
#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
nlohmann::json optional_num(std::optional<double> v) { return v ? num(*v) : nlohmann::json(nullptr); }
std::string optional_exact(std::optional<double> v) { return v ? exact(*v) : ""; }

nlohmann::json estimate_json(const StepEstimate& e) {
  return {{"step_time_s", num(e.step_time_s)}, {"compute_s", num(e.compute_s)},
          {"exposed_comm_s", num(e.exposed_comm_s)}, {"bubble_s", num(e.bubble_s)},
          {"dp_exposed_s", num(e.dp_exposed_s)}, {"optimizer_s", num(e.optimizer_s)}, {"p2p_s", num(e.p2p_s)},
          {"stage_peak_memory_bytes", e.stage_peak_memory}, {"peak_memory_bytes", num(e.peak_memory)},
          {"memory_capacity_bytes", num(e.memory_capacity)}, {"fits", e.fits}, {"model_flops", num(e.model_flops)},
          {"hardware_flops", num(e.hardware_flops)}, {"mfu", num(e.mfu)}, {"mfu_6n", optional_num(e.mfu_6n)},
          {"hfu", num(e.hfu)}, {"samples_per_s", num(e.samples_per_s)}};
}

nlohmann::json formula_json(const StepFormula& f) {
  return {{"variable", "batch"},
          {"step_time_s", f.text()},
          {"ginac", to_text(f.step_time)},
          {"constant_s", num(f.constant_s)},
          {"per_sample_s", num(f.per_sample_s)},
          {"bound_batch", num(f.bound_batch)},
          {"batch_granule", num(f.batch_granule)},
          {"valid_from", num(f.valid_from)},
          {"valid_to", num(f.valid_to)},
          {"components",
           {{"compute", to_text(f.compute)}, {"comm", to_text(f.comm)}, {"bubble", to_text(f.bubble)},
            {"dp_exposed", to_text(f.dp_exposed)}, {"optimizer", to_text(f.optimizer)}, {"p2p", to_text(f.p2p)}}},
          {"memory_constant_bytes", num(f.memory_constant)},
          {"memory_per_sample_bytes", num(f.memory_per_sample)},
          {"max_batch_that_fits", num(f.max_batch_that_fits)}};
}

nlohmann::json explanation_json(const PlanExplanation& e) {
  nlohmann::json j{{"summary", e.summary}, {"communication", e.communication}};
  j["mesh"] = nlohmann::json::array();
  for (const auto& a : e.mesh) j["mesh"].push_back({{"axis", a.name}, {"size", a.size}, {"level", a.level}, {"role", a.role}});
  j["operators"] = nlohmann::json::array();
  for (const auto& o : e.ops)
    j["operators"].push_back({{"pattern", o.pattern}, {"op_type", o.op_type}, {"count", o.count}, {"cut", o.cut},
                              {"comm", o.comm}, {"comm_seconds_per_micro_batch", num(o.comm_seconds)}});
  return j;
}

}  // namespace

std::string exact(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

nlohmann::json palm_flops_json(const PalmFlops& p) {
  return {{"per_token", num(p.per_token)}, {"parameters", num(p.parameters)}, {"layers", p.layers},
          {"hidden", num(p.hidden)},       {"sequence", num(p.sequence)},     {"all_experts", p.all_experts},
          {"label", palm_mfu_label(p)},    {"not_applicable", p.not_applicable}};
}

PalmFlops palm_flops_from_json(const nlohmann::json& j) {
  PalmFlops p;
  const auto number = [&](const char* key) { return j.at(key).is_null() ? 0.0 : j.at(key).get<double>(); };
  p.per_token = number("per_token"), p.parameters = number("parameters");
  p.hidden = number("hidden"), p.sequence = number("sequence");
  p.layers = j.at("layers").get<int>();
  p.all_experts = j.at("all_experts").get<bool>();
  p.not_applicable = j.at("not_applicable").get<std::string>();
  return p;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string describe_step_lower_bound(const CompareResults& r) {
  if (r.step_lower_bound_s <= 0) return "";
  return "no plan steps faster than " + format_seconds(r.step_lower_bound_s) +
         " (the step's compute at the whole batch's kernel efficiency, spread over the devices, with no "
         "communication, bubble or recomputation)";
}

std::string describe_max_batch(const StepFormula& f) {
  if (!std::isfinite(f.max_batch_that_fits)) return "unbounded (activations do not grow with the batch)";
  if (f.max_batch_that_fits < f.batch_granule)
    return "none: even a batch of " + format_count(f.batch_granule) + " does not fit";
  return format_count(f.max_batch_that_fits) + " (a multiple of " + format_count(f.batch_granule) + ")";
}

std::string describe_mfu_conventions(const PalmFlops& palm) {
  return std::string(kExactMfuLabel) +
         ": every operator's FLOPs as its kernel computes them (a causal fused attention half of its "
         "scores), recomputation left out. " + palm_mfu_label(palm) +
         ": the convention torchtitan and PaLM publish, 6N + 12Lhs per token, attention whole; " +
         describe_palm_flops(palm) + ". Both over the devices' dense peak at the plan's precision.";
}

std::vector<std::string> breakdown_components() {
  return {"compute", "exposed communication", "pipeline bubble / idle", "exposed gradient sync", "pipeline sends",
          "optimizer"};
}

std::vector<double> breakdown_values(const StrategyResult& r) {
  if (!r.ok) return std::vector<double>(6, 0.0);
  if (r.simulated) {
    const auto& s = r.simulation;
    return {s.compute_s, s.exposed_comm_s, s.bubble_s, 0.0, 0.0, s.optimizer_s};
  }
  const auto& e = r.estimate;
  return {e.compute_s, e.exposed_comm_s, e.bubble_s, e.dp_exposed_s, e.p2p_s, e.optimizer_s};
}

std::string compare_csv(const CompareResults& r) {
  std::string out =
      "strategy,label,ok,evaluator,step_time_s,samples_per_s,tokens_per_s,mfu,mfu_6n,peak_memory_bytes,"
      "memory_capacity_bytes,fits,search_time_s,estimate_step_time_s,simulated_step_time_s,compute_s,"
      "exposed_comm_s,bubble_s,dp_exposed_s,p2p_s,optimizer_s,formula_constant_s,formula_per_sample_s,error\n";
  for (const auto& s : r.strategies) {
    const auto b = breakdown_values(s);
    out += csv_field(s.strategy) + "," + csv_field(s.label) + "," + (s.ok ? "1" : "0") + "," +
           (s.ok ? s.evaluator() : "") + ",";
    if (s.ok) {
      out += exact(s.step_time_s()) + "," + exact(s.samples_per_s()) + "," + exact(r.tokens_per_s(s)) + "," +
             exact(s.mfu()) + "," + optional_exact(s.mfu_6n()) + "," + exact(s.peak_memory_bytes()) + "," +
             exact(r.row_memory_bytes(s)) + "," + (s.fits() ? "1" : "0") + "," + exact(s.search_time_s) + "," +
             exact(s.estimate.step_time_s) + "," + (s.simulated ? exact(s.simulation.step_time_s) : "") + ",";
      for (double v : b) out += exact(v) + ",";
      out += (s.formula ? exact(s.formula->constant_s) : "") + "," + (s.formula ? exact(s.formula->per_sample_s) : "") + ",";
    } else {
      out += ",,,,,,,,,,,,,,,,,,,";
    }
    out += csv_field(s.ok ? s.simulation_error : s.error) + "\n";
  }
  return out;
}

nlohmann::json compare_json(const CompareResults& r) {
  nlohmann::json j{{"model", r.model}, {"cluster", r.cluster}, {"devices", r.devices},
                   {"device_memory_bytes", num(r.device_memory_bytes)}, {"bindings", r.bindings},
                   {"tokens_per_sample", num(r.tokens_per_sample)}, {"palm_flops", palm_flops_json(r.palm)}};
  j["device_kinds"] = nlohmann::json::array();
  for (const DeviceKind& d : r.device_kinds)
    j["device_kinds"].push_back({{"name", d.name}, {"devices", d.devices}, {"memory_bytes", num(d.memory_bytes)}});
  j["step_lower_bound_s"] = r.step_lower_bound_s > 0 ? num(r.step_lower_bound_s) : nlohmann::json(nullptr);
  j["chosen"] = r.chosen >= 0 ? nlohmann::json(r.strategies[r.chosen].label) : nlohmann::json(nullptr);
  j["strategies"] = nlohmann::json::array();
  for (const auto& s : r.strategies) {
    nlohmann::json row{{"strategy", s.strategy}, {"label", s.label}, {"ok", s.ok}};
    if (!s.ok) {
      row["error"] = s.error;
      j["strategies"].push_back(row);
      continue;
    }
    row["evaluator"] = s.evaluator();
    row["step_time_s"] = num(s.step_time_s());
    row["samples_per_s"] = num(s.samples_per_s());
    row["tokens_per_s"] = num(r.tokens_per_s(s));
    row["mfu"] = num(s.mfu());
    row["mfu_6n"] = optional_num(s.mfu_6n());
    row["peak_memory_bytes"] = num(s.peak_memory_bytes());
    row["memory_capacity_bytes"] = num(r.row_memory_bytes(s));  // the tightest stage's, beside its peak
    const std::vector<double> peaks = s.stage_peak_memory();
    row["stage_peak_memory_bytes"] = peaks;
    std::vector<double> capacities;
    for (std::size_t st = 0; st < peaks.size(); ++st) capacities.push_back(s.stage_capacity_bytes(st));
    row["stage_memory_capacity_bytes"] = capacities;
    row["fits"] = s.fits();
    row["search_time_s"] = num(s.search_time_s);
    row["breakdown"] = nlohmann::json::object();
    const auto names = breakdown_components();
    const auto values = breakdown_values(s);
    for (std::size_t k = 0; k < names.size(); ++k) row["breakdown"][names[k]] = num(values[k]);
    row["estimate"] = estimate_json(s.estimate);
    row["memory_breakdown"] = memory_breakdown_json(s.memory);
    row["simulation"] = s.simulated ? report_to_json(s.simulation, *s.plan) : nlohmann::json(nullptr);
    if (!s.simulation_error.empty()) row["simulation_error"] = s.simulation_error;
    row["formula"] = s.formula ? formula_json(*s.formula) : nlohmann::json(nullptr);
    row["explanation"] = explanation_json(s.explanation);
    j["strategies"].push_back(row);
  }
  j["break_evens"] = nlohmann::json::array();
  for (const auto& b : r.break_evens)
    j["break_evens"].push_back({{"faster_below", b.faster_below}, {"faster_above", b.faster_above},
                                {"batch", num(b.batch)}, {"step_time_s", num(b.step_time_s)},
                                {"within_validity", b.within_validity}});
  return j;
}

const SweepPoint* fastest_point(const SweepResults& r) {
  const SweepPoint* best = nullptr;
  for (const auto& p : r.points)
    if (p.ok && p.samples_per_s > 0 && (!best || p.samples_per_s > best->samples_per_s)) best = &p;
  return best;
}

const SweepPoint* cheapest_point(const SweepResults& r) {
  const SweepPoint* best = nullptr;
  for (const auto& p : r.points)
    if (p.ok && p.cost_usd > 0 && (!best || p.cost_usd < best->cost_usd)) best = &p;
  return best;
}

std::string describe_price(const SweepResults& r, const SweepPoint& p) {
  if (!(p.price_per_gpu_hour > 0)) return "no price";
  return format_usd(p.price_per_gpu_hour) + "/GPU-hour" + (r.prices_given.count(p.cluster) ? " (yours)" : " (illustrative)");
}

std::string sweep_csv(const SweepResults& r) {
  std::string out =
      "cluster,gpus,ok,strategy,evaluator,step_time_s,samples_per_s,tokens_per_s,mfu,mfu_6n,peak_memory_bytes,"
      "memory_capacity_bytes,price_per_gpu_hour,time_to_train_s,cost_usd,cost_per_million_tokens,"
      "peak_stage,peak_stage_parameters_bytes,peak_stage_gradients_bytes,peak_stage_optimizer_bytes,"
      "peak_stage_activations_bytes,peak_stage_transient_bytes,peak_stage_reserve_bytes,error\n";
  for (const auto& p : r.points) {
    out += csv_field(p.cluster) + "," + std::to_string(p.gpus) + "," + (p.ok ? "1" : "0") + "," +
           csv_field(p.strategy) + "," + p.evaluator + ",";
    if (p.ok)
      out += exact(p.step_time_s) + "," + exact(p.samples_per_s) + "," + exact(p.tokens_per_s) + "," + exact(p.mfu) +
             "," + optional_exact(p.mfu_6n) + "," + exact(p.peak_memory_bytes) + "," +
             exact(p.memory_capacity_bytes) + "," + exact(p.price_per_gpu_hour) + "," + exact(p.time_to_train_s) + "," + exact(p.cost_usd) + "," +
             exact(p.cost_per_million_tokens) + ",";
    else
      out += ",,,,,,,,,,,";
    // The stage whose peak is the point's: its parts (they sum to peak_memory_bytes).
    if (const StageMemoryBreakdown* b = p.ok ? fullest_stage(p.memory) : nullptr)
      out += std::to_string(b->stage) + "," + exact(b->parameters) + "," + exact(b->gradients) + "," + exact(b->optimizer) +
             "," + exact(b->activations) + "," + exact(b->transient) + "," + exact(b->reserve) + ",";
    else
      out += ",,,,,,,";
    out += csv_field(p.error) + "\n";
  }
  return out;
}

nlohmann::json sweep_json(const SweepResults& r) {
  nlohmann::json j{{"model", r.model}, {"bindings", r.bindings}, {"tokens_per_sample", num(r.tokens_per_sample)},
                   {"tokens", num(r.tokens)}, {"clusters", r.clusters}, {"gpus", r.gpus},
                   {"elapsed_s", num(r.elapsed_s)}, {"evaluator", "analytic"},
                   {"palm_flops", palm_flops_json(r.palm)}};
  j["shard"] = nlohmann::json{{"index", r.shard_index}, {"count", r.shard_count}};
  j["prices_given"] = r.prices_given;  // --price; the others are the profiles' illustrative prices
  j["points"] = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json row{{"cluster", p.cluster}, {"gpus", p.gpus}, {"ok", p.ok}, {"rejected", p.rejected}};
    if (!p.ok) {
      row["error"] = p.error;
    } else {
      row.update({{"strategy", p.strategy}, {"evaluator", p.evaluator}, {"step_time_s", num(p.step_time_s)},
                  {"samples_per_s", num(p.samples_per_s)}, {"tokens_per_s", num(p.tokens_per_s)},
                  {"mfu", num(p.mfu)}, {"mfu_6n", optional_num(p.mfu_6n)},
                  {"peak_memory_bytes", num(p.peak_memory_bytes)},
                  {"memory_capacity_bytes", num(p.memory_capacity_bytes)},
                  {"price_per_gpu_hour", num(p.price_per_gpu_hour)}, {"time_to_train_s", num(p.time_to_train_s)},
                  {"cost_usd", num(p.cost_usd)}, {"cost_per_million_tokens", num(p.cost_per_million_tokens)},
                  {"memory_breakdown", memory_breakdown_json(p.memory)}});
    }
    j["points"].push_back(row);
  }
  return j;
}

}  // namespace symtensor::compiler
