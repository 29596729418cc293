// serve --export (compiler/serve/serve_export.h, issue #33): each launch read back with the
// engine's own rules, an argparse-style parser of the flags FRAMEWORKS.md names ("Serving
// engines") with their types and choices, and TensorRT-LLM's options file with a YAML parser;
// the layout, batch limits, memory fraction and precision read back equal the plan's. What an
// engine cannot express is refused in one line.
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "compiler/serve/serve_export.h"
#include "compiler/serve/serving_model.h"
#include "tests/compiler/serve_test_util.h"
#include "hardware/cluster.h"
#include "hardware/serving_engine.h"
#include "onnx_models/presets.h"
#include "simulator/stats/atomic_write.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

using hardware::Precision;

using testing::serving_model_of;

ServingCost export_cost(const std::string& preset, const std::string& engine, ServingLayout l, Precision w, Precision kv,
                        const std::string& cluster = "dgx-h100") {
  return ServingCost(serving_model_of(preset), l, ServingPrecision{w, kv},
                     hardware::scale_cluster(hardware::load_cluster(cluster), 1, 8), hardware::load_serving_engine(engine));
}

// An argparse-style flag: its type and, for a string, its choices (FRAMEWORKS.md).
struct FlagSpec {
  enum Kind { integer, fraction, boolean, text } kind;
  std::set<std::string> choices = {};
};
using FlagSpecs = std::map<std::string, FlagSpec>;

const FlagSpecs& vllm_flags() {
  static const FlagSpecs f = {
      {"--tensor-parallel-size", {FlagSpec::integer}}, {"--pipeline-parallel-size", {FlagSpec::integer}},
      {"--data-parallel-size", {FlagSpec::integer}},   {"--enable-expert-parallel", {FlagSpec::boolean}},
      {"--max-num-seqs", {FlagSpec::integer}},         {"--max-num-batched-tokens", {FlagSpec::integer}},
      {"--block-size", {FlagSpec::integer}},           {"--enable-chunked-prefill", {FlagSpec::boolean}},
      {"--gpu-memory-utilization", {FlagSpec::fraction}},
      {"--kv-cache-dtype", {FlagSpec::text, {"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "nvfp4"}}},
      {"--quantization", {FlagSpec::text, {"fp8", "awq", "gptq", "modelopt", "compressed-tensors"}}},
      {"--dtype", {FlagSpec::text, {"auto", "half", "float16", "bfloat16", "float", "float32"}}}};
  return f;
}
const FlagSpecs& sglang_flags() {
  static const FlagSpecs f = {
      {"--model-path", {FlagSpec::text}},           {"--tp-size", {FlagSpec::integer}},
      {"--pp-size", {FlagSpec::integer}},           {"--dp-size", {FlagSpec::integer}},
      {"--ep-size", {FlagSpec::integer}},           {"--mem-fraction-static", {FlagSpec::fraction}},
      {"--max-running-requests", {FlagSpec::integer}}, {"--chunked-prefill-size", {FlagSpec::integer}},
      {"--page-size", {FlagSpec::integer}},
      {"--kv-cache-dtype", {FlagSpec::text, {"auto", "fp8_e5m2", "fp8_e4m3", "bf16"}}},
      {"--quantization", {FlagSpec::text, {"fp8"}}}};
  return f;
}
const FlagSpecs& trtllm_flags() {
  static const FlagSpecs f = {
      {"--tp_size", {FlagSpec::integer}}, {"--pp_size", {FlagSpec::integer}}, {"--ep_size", {FlagSpec::integer}},
      {"--max_batch_size", {FlagSpec::integer}}, {"--max_num_tokens", {FlagSpec::integer}},
      {"--kv_cache_free_gpu_memory_fraction", {FlagSpec::fraction}},
      {"--backend", {FlagSpec::text, {"pytorch", "tensorrt", "_autodeploy"}}},
      {"--extra_llm_api_options", {FlagSpec::text}}};
  return f;
}

// The script's `exec` command as words (continuations joined, quotes dropped).
std::vector<std::string> serve_export_words(const std::string& script) {
  const auto at = script.find("\nexec ");
  EXPECT_NE(at, std::string::npos) << script;
  std::string command = script.substr(at + 6);
  for (std::size_t p; (p = command.find("\\\n")) != std::string::npos;) command.replace(p, 2, " ");
  std::istringstream in(command);
  std::vector<std::string> words;
  for (std::string w; in >> w;) {
    if (w.size() >= 2 && w.front() == '"' && w.back() == '"') w = w.substr(1, w.size() - 2);
    words.push_back(w);
  }
  return words;
}

// Parses the words after `program` (its positional arguments first) as argparse would: every
// flag known, typed, in its choices, given once. Values by flag ("" for a switch).
std::map<std::string, std::string> parse_serve_flags(const std::string& script, const std::vector<std::string>& program,
                                                     const FlagSpecs& specs) {
  const std::vector<std::string> w = serve_export_words(script);
  std::map<std::string, std::string> out;
  EXPECT_GE(w.size(), program.size());
  for (std::size_t i = 0; i < program.size() && i < w.size(); ++i) EXPECT_EQ(w[i], program[i]);
  for (std::size_t i = program.size(); i < w.size(); ++i) {
    const auto spec = specs.find(w[i]);
    if (spec == specs.end()) {
      ADD_FAILURE() << "unknown flag " << w[i];
      continue;
    }
    EXPECT_FALSE(out.count(w[i])) << "given twice: " << w[i];
    if (spec->second.kind == FlagSpec::boolean) {
      out[w[i]] = "";
      continue;
    }
    if (i + 1 >= w.size()) {
      ADD_FAILURE() << w[i] << " without a value";
      break;
    }
    const std::string v = w[++i];
    std::size_t used = 0;
    switch (spec->second.kind) {
      case FlagSpec::integer: {
        EXPECT_NO_THROW(used = std::to_string(std::stoll(v)).size()) << w[i - 1];
        EXPECT_EQ(used, v.size()) << w[i - 1] << " " << v;
        break;
      }
      case FlagSpec::fraction: {
        const double f = std::stod(v, &used);
        EXPECT_EQ(used, v.size()) << v;
        EXPECT_TRUE(f > 0 && f <= 1) << w[i - 1] << " " << v;
        break;
      }
      default:
        if (!spec->second.choices.empty()) {
          EXPECT_TRUE(spec->second.choices.count(v)) << w[i - 1] << " " << v;
        }
    }
    out[w[i - 1]] = v;
  }
  return out;
}

TEST(ServeExport, VllmReadBackIsThePlansLayout) {
  const ServingCost c = export_cost("llama3-70b", "vllm", {2, 2, 1, 2}, Precision::fp8, Precision::fp8);
  const ServeExport ex = export_serving(c, ServeExportTarget::vllm);
  const auto f = parse_serve_flags(ex.script, {"vllm", "serve", "$MODEL"}, vllm_flags());
  EXPECT_EQ(f.at("--tensor-parallel-size"), "2");
  EXPECT_EQ(f.at("--pipeline-parallel-size"), "2");
  EXPECT_EQ(f.at("--data-parallel-size"), "2");
  EXPECT_FALSE(f.count("--enable-expert-parallel"));
  EXPECT_EQ(std::stoi(f.at("--max-num-seqs")), c.engine().max_batch);
  EXPECT_EQ(std::stoi(f.at("--max-num-batched-tokens")), c.engine().max_num_tokens);
  EXPECT_EQ(std::stoi(f.at("--block-size")), c.engine().block_size);
  EXPECT_DOUBLE_EQ(std::stod(f.at("--gpu-memory-utilization")), c.engine().memory_fraction);
  EXPECT_EQ(f.at("--quantization"), "fp8");
  EXPECT_EQ(f.at("--kv-cache-dtype"), "fp8");
  // bf16 weights and KV: the dtype, no quantization; one replica: no --data-parallel-size.
  const ServeExport bf = export_serving(export_cost("llama3-70b", "vllm", {4, 1, 1, 1}, Precision::bf16, Precision::bf16),
                                        ServeExportTarget::vllm);
  const auto g = parse_serve_flags(bf.script, {"vllm", "serve", "$MODEL"}, vllm_flags());
  EXPECT_EQ(g.at("--dtype"), "bfloat16");
  EXPECT_EQ(g.at("--kv-cache-dtype"), "bfloat16");
  EXPECT_FALSE(g.count("--quantization") || g.count("--data-parallel-size"));
  // The unsettled default is said, and the model is a marked placeholder.
  EXPECT_NE(ex.script.find("0.92"), std::string::npos);
  EXPECT_NE(ex.script.find("MODEL=\"${MODEL:?PLACEHOLDER"), std::string::npos);
}

TEST(ServeExport, ExpertParallelInEachEngine) {
  // Mixtral 8x7B, tp=2 with the 8 experts over ep=2.
  const ServingLayout l{2, 1, 2, 1};
  const auto v = parse_serve_flags(
      export_serving(export_cost("mixtral-8x7b", "vllm", l, Precision::bf16, Precision::bf16), ServeExportTarget::vllm).script,
      {"vllm", "serve", "$MODEL"}, vllm_flags());
  EXPECT_TRUE(v.count("--enable-expert-parallel"));
  const auto s = parse_serve_flags(
      export_serving(export_cost("mixtral-8x7b", "sglang", l, Precision::bf16, Precision::bf16), ServeExportTarget::sglang).script,
      {"python", "-m", "sglang.launch_server"}, sglang_flags());
  EXPECT_EQ(s.at("--ep-size"), "2");
  EXPECT_EQ(s.at("--tp-size"), "2");
  // vLLM shards the experts over all of TP x DP: ep=2 inside tp=4 cannot be said there.
  const ServingCost wide = export_cost("mixtral-8x7b", "vllm", {4, 1, 2, 1}, Precision::bf16, Precision::bf16);
  try {
    export_serving(wide, ServeExportTarget::vllm);
    ADD_FAILURE() << "vLLM took ep=2 inside tp=4";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--enable-expert-parallel"), std::string::npos) << e.what();
  }
}

TEST(ServeExport, SglangReadBackIsThePlansLayout) {
  const ServingCost c = export_cost("llama3-70b", "sglang", {4, 1, 1, 2}, Precision::fp8, Precision::fp8);
  const ServeExport ex = export_serving(c, ServeExportTarget::sglang);
  const auto f = parse_serve_flags(ex.script, {"python", "-m", "sglang.launch_server"}, sglang_flags());
  EXPECT_EQ(f.at("--model-path"), "$MODEL");
  EXPECT_EQ(f.at("--tp-size"), "4");
  EXPECT_EQ(f.at("--pp-size"), "1");
  EXPECT_EQ(f.at("--dp-size"), "2");
  EXPECT_EQ(f.at("--ep-size"), "1");
  EXPECT_DOUBLE_EQ(std::stod(f.at("--mem-fraction-static")), c.engine().memory_fraction);
  EXPECT_EQ(std::stoi(f.at("--max-running-requests")), c.engine().max_batch);
  EXPECT_EQ(std::stoi(f.at("--chunked-prefill-size")), c.engine().max_num_tokens);
  EXPECT_EQ(f.at("--kv-cache-dtype"), "fp8_e4m3");
  EXPECT_EQ(f.at("--quantization"), "fp8");
  // dp x tp x pp GPUs is FRAMEWORKS.md's unverified assumption: said so.
  EXPECT_NE(ex.script.find("NOT SETTLED"), std::string::npos);
}

TEST(ServeExport, TrtllmReadBackWithItsOptionsFile) {
  const ServingCost c = export_cost("mixtral-8x7b", "trtllm", {4, 2, 2, 1}, Precision::fp8, Precision::fp8);
  const std::string script = symtensor::testing::temp_path("trt_serve.sh");
  const ServeExport ex = export_serving(c, ServeExportTarget::trtllm, serve_options_path(script));
  const auto f = parse_serve_flags(ex.script, {"trtllm-serve", "$MODEL"}, trtllm_flags());
  EXPECT_EQ(f.at("--tp_size"), "4");
  EXPECT_EQ(f.at("--pp_size"), "2");
  EXPECT_EQ(f.at("--ep_size"), "2");
  EXPECT_EQ(std::stoi(f.at("--max_batch_size")), c.engine().max_batch);
  EXPECT_EQ(std::stoi(f.at("--max_num_tokens")), c.engine().max_num_tokens);
  EXPECT_DOUBLE_EQ(std::stod(f.at("--kv_cache_free_gpu_memory_fraction")), c.engine().memory_fraction);
  EXPECT_EQ(f.at("--extra_llm_api_options"), "$HERE/trt_serve.sh.llm_api_options.yaml");
  const YAML::Node y = YAML::Load(ex.options_yaml);
  // moe_tp x moe_ep = tp (FRAMEWORKS.md).
  EXPECT_EQ(y["moe_expert_parallel_size"].as<int>() * y["moe_tensor_parallel_size"].as<int>(), 4);
  EXPECT_EQ(y["moe_expert_parallel_size"].as<int>(), 2);
  EXPECT_FALSE(y["enable_attention_dp"].as<bool>());
  EXPECT_EQ(y["enable_chunked_prefill"].as<bool>(), c.engine().chunked_prefill);
  EXPECT_DOUBLE_EQ(y["kv_cache_config"]["free_gpu_memory_fraction"].as<double>(), c.engine().memory_fraction);
  // The unsettled max_batch_size default and the precision with no flag are said.
  EXPECT_NE(ex.script.find("256"), std::string::npos);
  EXPECT_NE(ex.script.find("no trtllm-serve flag"), std::string::npos);
  // Run without MODEL the script stops on the placeholder before launching anything.
  sim::write_file_atomically(script, ex.script);
  const std::string log = symtensor::testing::temp_path("trt_serve.log");
  const int rc = std::system(("env -u MODEL bash " + script + " > " + log + " 2>&1").c_str());
  EXPECT_NE(rc, 0);
  std::ifstream in(log);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("PLACEHOLDER"), std::string::npos) << said;
  EXPECT_EQ(said.find("trtllm-serve: command not found"), std::string::npos) << said;
}

TEST(ServeExport, WhatAnEngineCannotExpressIsRefusedInOneLine) {
  const auto refused = [](const ServingCost& c, ServeExportTarget t, const std::string& says) {
    try {
      export_serving(c, t, "x.yaml");
      ADD_FAILURE() << "not refused: " << says;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
    }
  };
  // Replicas: trtllm-serve has no data-parallel flag.
  refused(export_cost("llama3-70b", "trtllm", {4, 1, 1, 2}, Precision::bf16, Precision::bf16), ServeExportTarget::trtllm,
          "no data-parallel flag");
  // Priced with one engine, exported to another: its limits and memory fraction would be wrong.
  refused(export_cost("llama3-70b", "trtllm", {4, 1, 1, 1}, Precision::bf16, Precision::bf16), ServeExportTarget::vllm,
          "--stack vllm");
  // FP4 weights (a B200 has the rate): no FRAMEWORKS.md flag says them.
  refused(export_cost("llama3-70b", "sglang", {2, 1, 1, 1}, Precision::fp4, Precision::fp8, "dgx-b200"),
          ServeExportTarget::sglang, "fp4 weights");
  // An fp16 KV cache: not among SGLang's choices.
  refused(export_cost("llama3-70b", "sglang", {4, 1, 1, 1}, Precision::fp16, Precision::fp16), ServeExportTarget::sglang,
          "--kv-cache-dtype has no fp16");
}

}  // namespace
}  // namespace symtensor::compiler
