// Calibration against today's published training runs (tests/data/calibration/runs.csv, from
// shared/reference/CALIBRATION.md "Today's GPUs, precisions and stacks"): each run simulated
// with its GPU, stack, precision and layout, its tokens/s per GPU against the published one.
// The knobs a source leaves unstated are chosen by one rule for every run (runs.csv's README);
// the stacks' kernel factors (hardware/stacks/*.yaml) are the only fitted parameters, a few per
// stack and GPU. Prints a table (id, published, predicted, error, step breakdown) and the
// summary the README quotes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/lowering/simulate_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/strategies/megatron.h"
#include "hardware/cluster.h"
#include "hardware/stack.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

struct PublishedRun {
  std::string id, source, model, profile, stack, precision, knobs;
  int gpus = 0;
  double seq = 0, gbs = 0, published = 0;  // tokens/s per GPU
};

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) fields.emplace_back();
    else fields.back() += c;
  }
  return fields;
}

std::vector<PublishedRun> load_runs() {
  std::ifstream in(std::string(SYMTENSOR_TEST_DATA) + "/calibration/runs.csv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<PublishedRun> runs;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    if (f.size() != 11) throw std::runtime_error("runs.csv: a line has " + std::to_string(f.size()) + " fields: " + line);
    PublishedRun r{f[0], f[1], f[2], f[3], f[5], f[6], f[9]};
    r.gpus = std::stoi(f[4]);
    r.seq = std::stod(f[7]), r.gbs = std::stod(f[8]), r.published = std::stod(f[10]);
    runs.push_back(r);
  }
  return runs;
}

// The architectures of runs.csv's README, from the zoo's families.
models::ModelConfig architecture(const std::string& name) {
  // NAME+mtp: the run trains one multi-token prediction layer (its source says "(MTP)").
  if (name.ends_with("+mtp")) {
    models::ModelConfig c = architecture(name.substr(0, name.size() - 4));
    c.mtp_layers = 1;
    return c;
  }
  // GPT-3's own vocabulary (50257): Megatron's layout pads it to a multiple of 128 x tp, as
  // NeMo runs it (50688 at tp=4).
  if (name == "gpt3-175b") return models::preset_config("gpt3-175b");
  // The MoE models of today, as the zoo writes them from their HF config.json.
  for (const char* zoo : {"mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b", "nemotron-4-15b", "nemotron-4-340b"})
    if (name == zoo) return models::preset_config(name);
  models::ModelConfig c = models::preset_config(name == "mixtral-8x22b" ? "mixtral-8x7b" : "llama2-7b");
  c.name = name;
  c.kv_heads = 8, c.rope_theta = 500000, c.vocab = 128256;
  if (name == "llama3-8b") c.layers = 32, c.hidden = 4096, c.heads = 32, c.intermediate = 14336;
  else if (name == "llama3-70b") c.layers = 80, c.hidden = 8192, c.heads = 64, c.intermediate = 28672;
  else if (name == "llama3.1-405b") c.layers = 126, c.hidden = 16384, c.heads = 128, c.intermediate = 53248;
  else if (name == "mixtral-8x22b") c.layers = 56, c.hidden = 6144, c.heads = 48, c.intermediate = 16384, c.vocab = 32768;
  else throw std::runtime_error("runs.csv: unknown model '" + name + "'");
  return c;
}

hardware::Cluster cluster_for(const PublishedRun& r) {
  const std::string path = std::string(SYMTENSOR_TEST_DATA) + "/calibration/" + r.profile + ".yaml";
  hardware::Cluster base = hardware::load_cluster(std::ifstream(path).good() ? path : r.profile);
  // NVIDIA places its NVL72 runs 64 GPUs to a rack (32-GPU EP groups and TP inside a domain).
  const int per_node = std::min(base.devices_per_node(), base.devices_per_node() >= 64 ? 64 : 8);
  const int in_node = std::min(r.gpus, per_node);
  hardware::Software software;
  software.stack = r.stack;
  return hardware::with_software(hardware::scale_cluster(base, std::max(1, r.gpus / in_node), in_node), software);
}

struct RunOutcome {
  double predicted = 0, error = 0;
  std::string recompute, note;
  PlanSimulation simulation;
};

RunOutcome simulate_run(const PublishedRun& r) {
  ImportOptions io;
  io.bindings = {{"batch", r.gbs}, {"seq", r.seq}};
  io.warn_opaque = false;
  io.fusion.attention = AttentionMode::fused;  // every run uses fused attention kernels
  models::ModelConfig config = architecture(r.model);
  config.seq = static_cast<std::int64_t>(r.seq);
  Graph graph = import_onnx_model(models::build_model(config), r.id, io);
  const hardware::Cluster cluster = cluster_for(r);
  MegatronKnobs k = parse_megatron_knobs(r.knobs);
  if (k.tp > 1) k.sp = true;
  if (r.stack == "megatron" || r.stack == "nemo") k.distopt = true;
  StrategyOptions so;
  so.precision = *hardware::parse_precision(r.precision);
  // Recomputation as published; NVIDIA's performance recipes run without it unless they say.
  const Plan plan = make_megatron_plan(graph, cluster, k, so);
  sim::SimOptions options;
  options.record_trace = false;
  RunOutcome o;
  o.simulation = simulate_plan(graph, plan, cluster, {}, options);
  o.recompute = std::string(to_string(k.recompute));
  if (!o.simulation.report.fits) {
    double peak = 0;
    for (const auto& st : o.simulation.report.stages) peak = std::max(peak, st.peak_memory_bytes);
    o.note = fmt::format("does not fit by the memory model ({:.0f} of {:.0f} GB)", peak / 1e9, o.simulation.report.device_memory_bytes / 1e9);
  }
  o.predicted = r.gbs * r.seq / (r.gpus * o.simulation.report.step_time_s);
  o.error = o.predicted / r.published - 1;
  return o;
}

struct ErrorSummary {
  std::size_t runs = 0;
  double mean_abs = 0, worst = 0, share_within10 = 0;
  int within10 = 0, fitting = 0;
};

ErrorSummary summarize(const char* what, const std::vector<double>& errors, int fitting) {
  ErrorSummary s;
  s.runs = errors.size();
  s.fitting = fitting;
  for (double e : errors) s.mean_abs += std::abs(e), s.worst = std::max(s.worst, std::abs(e)), s.within10 += std::abs(e) <= 0.10;
  s.mean_abs /= std::max<std::size_t>(1, errors.size());
  s.share_within10 = static_cast<double>(s.within10) / std::max<std::size_t>(1, errors.size());
  std::printf("%s, %zu runs: mean |error| %.1f%%, %d within 10%% (%.0f%%), worst %.1f%%", what, s.runs, 100 * s.mean_abs,
              s.within10, 100 * s.share_within10, 100 * s.worst);
  if (fitting >= 0) std::printf("; %d fit by the memory model", fitting);
  std::printf("\n");
  return s;
}

// The runs of one kind (dense models, or mixtures of experts), simulated, printed and
// summarized overall and per stack and GPU. Two tests, so that they run side by side.
// The long-context torchtitan runs, whose spread no rate constant across CP degrees fits
// (Calibration.LongContextRowsNeedARatePerContextParallelDegree).
bool long_context_torchtitan(const PublishedRun& r) { return r.stack == "torchtitan" && r.seq >= 32768; }

ErrorSummary check_runs(bool mixtures_of_experts, std::vector<double>* errors_without_long_context = nullptr) {
  const std::vector<PublishedRun> runs = load_runs();
  EXPECT_GE(runs.size(), 50u);
  std::map<std::string, std::vector<double>> by_group;  // stack and GPU -> errors
  std::vector<double> errors;
  int fitting = 0;
  std::printf("%-34s %-9s %-6s %9s %9s %7s  %s\n", "run", "stack", "prec", "published", "predicted", "error",
              "step: compute / exposed comm / bubble (recompute)");
  for (const PublishedRun& r : runs) {
    if ((architecture(r.model).experts > 0) != mixtures_of_experts) continue;
    const RunOutcome o = simulate_run(r);
    const auto& rep = o.simulation.report;
    std::printf("%-34s %-9s %-6s %9.0f %9.0f %+6.1f%%  %.2f s: %.2f / %.2f / %.2f (%s)%s%s\n", r.id.c_str(), r.stack.c_str(),
                r.precision.c_str(), r.published, o.predicted, 100 * o.error, rep.step_time_s, rep.compute_s,
                rep.exposed_comm_s, rep.bubble_s, o.recompute.c_str(), o.note.empty() ? "" : " ", o.note.c_str());
    errors.push_back(o.error);
    if (errors_without_long_context && !long_context_torchtitan(r)) errors_without_long_context->push_back(o.error);
    fitting += rep.fits ? 1 : 0;
    by_group[r.stack + " " + r.profile].push_back(o.error);
  }
  std::printf("\n");
  const ErrorSummary summary = summarize(mixtures_of_experts ? "MoE" : "dense", errors, fitting);
  for (const auto& [group, e] : by_group) {
    double sum = 0, bias = 0;
    for (double x : e) sum += std::abs(x), bias += x;
    std::printf("  %-32s %2zu runs, mean |error| %5.1f%%, mean error %+5.1f%%\n", group.c_str(), e.size(), 100 * sum / e.size(),
                100 * bias / e.size());
  }
  return summary;
}

TEST(Calibration, PublishedRunsOfTodaysStacks) {
  std::vector<double> without_long_context;
  const ErrorSummary d = check_runs(false, &without_long_context);
  EXPECT_EQ(d.runs, 37u);
  // The bar holds on the 33 dense runs a fit can meet it on.
  const ErrorSummary met = summarize("dense but the 4 long-context torchtitan runs", without_long_context, -1);
  EXPECT_EQ(met.runs, 33u);
  EXPECT_LE(met.mean_abs, 0.05);
  EXPECT_GE(met.share_within10, 0.90);
  EXPECT_LE(met.worst, 0.20);
  // What the fit reaches today (the bar is a mean of 5%, 90% within 10%, none beyond
  // 20%: not met, see the README). A change that makes any of these worse fails here.
  EXPECT_LE(d.mean_abs, 0.065);
  EXPECT_GE(d.share_within10, 0.80);
  EXPECT_LE(d.worst, 0.26);
  // The published runs ran: the memory model should let them fit (27 of the 37 dense today).
  EXPECT_GE(d.fitting, 27);
}

// The MoE runs of today's models (DeepSeek-V3, Qwen3, gpt-oss, Mixtral): far from the bar; the
// README names what the model lacks for them.
TEST(Calibration, PublishedMixtureOfExpertsRuns) {
  const ErrorSummary m = check_runs(true);
  EXPECT_EQ(m.runs, 21u);
  EXPECT_LE(m.mean_abs, 0.175);
  EXPECT_GE(m.share_within10, 0.38);
  // GPT-OSS-120B on GB200 (+70%): published by one release only, 26.04.01, whose MoE runs
  // were software-limited (see the README).
  EXPECT_LE(m.worst, 0.71);
}

// Why the bar cannot be met by a fit that generalizes (issue #29), measured.
//
// The four long-context torchtitan runs hold 32k tokens per GPU (32k without CP up to 256k at
// CP8), so the model's step time is A + B·r with r = seq / 32k: A the non-attention work,
// equal in the four, and B the attention of the 32k run, attention per token growing with the
// sequence. With A as the model prices it (the 8k torchtitan runs, which pin it, are within 3%),
// the best attention rate B for all four still leaves one beyond 20%: their attention grows
// 1 : 2.3 : 7.5 : 16 against the 1 : 2 : 4 : 8 of the work, a slowdown with the CP degree that a
// rate per degree would fit and nothing else would.
TEST(Calibration, LongContextRowsNeedARatePerContextParallelDegree) {
  std::vector<PublishedRun> rows;
  for (const PublishedRun& r : load_runs())
    if (r.stack == "torchtitan" && r.seq >= 32768) rows.push_back(r);
  ASSERT_EQ(rows.size(), 4u);
  std::vector<double> ratio, published_step, predicted_step;
  for (const PublishedRun& r : rows) {
    ratio.push_back(r.seq / 32768);
    EXPECT_DOUBLE_EQ(r.gbs * r.seq / r.gpus, 32768) << r.id;  // the same tokens per GPU
    published_step.push_back(r.gbs * r.seq / (r.gpus * r.published));
    predicted_step.push_back(simulate_run(r).simulation.report.step_time_s);
  }
  // A and B from the two ends; the model is linear in r between them.
  const double b = (predicted_step[3] - predicted_step[0]) / (ratio[3] - ratio[0]);
  const double a = predicted_step[0] - b * ratio[0];
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_NEAR(predicted_step[i], a + b * ratio[i], 0.02 * predicted_step[i]);
  EXPECT_GT(a, 4.0);  // 8 x 8.03e9 FLOPs a token (full recomputation) x 32k tokens at the GEMM rate
  double best = 1e9, best_b = 0;
  for (double scale = 0.05; scale <= 5; scale += 0.0005) {
    double worst = 0;
    for (std::size_t i = 0; i < rows.size(); ++i)
      worst = std::max(worst, std::abs(published_step[i] / (a + scale * b * ratio[i]) - 1));
    if (worst < best) best = worst, best_b = scale * b;
  }
  std::printf("long context: non-attention %.2f s; model's 32k attention %.2f s, best for the four %.2f s: worst |error| "
              "%.1f%%\n", a, b, best_b, 100 * best);
  EXPECT_GT(best, 0.20);
}

// GPT-OSS-120B was published by one release, 26.04.01. On each GPU it ran on, the same config of
// the nearest fine-grained MoE (Qwen3-30B-A3B) ran 1.33-1.53x faster at the newest release, which
// the fit follows (release_drift.csv). The GPT-OSS errors are that drift: taken out, they are
// within 20%; left in, a fit within 20% of the GPT-OSS rows would be 1.3-1.5x off the newest
// Qwen3 rows, i.e. a parameter per release.
TEST(Calibration, GptOssRowsMeasureTheirRelease) {
  std::map<std::string, double> drift;  // GPU -> newest / 26.04.01 tokens per second
  std::ifstream in(std::string(SYMTENSOR_TEST_DATA) + "/calibration/release_drift.csv");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_fields(line);
    ASSERT_EQ(f.size(), 7u) << line;
    EXPECT_EQ(f[3], "26.04.01");
    drift[f[0]] = std::stod(f[6]) / std::stod(f[4]);
  }
  const std::map<std::string, std::string> gpu_of = {
      {"gb300-nvl72", "GB300"}, {"gb200-nvl72", "GB200"}, {"dgx-b300", "B300"}};
  int rows = 0;
  for (const PublishedRun& r : load_runs()) {
    if (r.model != "gpt-oss-120b") continue;
    ++rows;
    EXPECT_NE(r.source.find("26.04.01"), std::string::npos) << r.id;
    const double d = drift.at(gpu_of.at(r.profile));
    const RunOutcome o = simulate_run(r);
    const double at_newest = o.predicted / (r.published * d) - 1;
    std::printf("%-22s error %+.1f%%; drift of the release %.2fx; error at the newest release %+.1f%%\n", r.id.c_str(),
                100 * o.error, d, 100 * at_newest);
    EXPECT_GT(d, 1.3);
    EXPECT_GT(o.error, 0.20);
    EXPECT_LT(std::abs(at_newest), 0.20);
  }
  EXPECT_EQ(rows, 3);
}

}  // namespace
}  // namespace symtensor::compiler
