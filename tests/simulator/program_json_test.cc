#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "simulator/program/program_json.h"
#include "simulator/program/synthetic.h"
#include "tests/temp_path.h"

namespace symtensor::sim {
namespace {

using nlohmann::json;

json small_program() {
  return json::parse(R"({
    "format": "symtensor-step-program", "version": 1, "name": "two stages",
    "mesh": [{"name": "pp", "size": 2, "level": 1}, {"name": "tp", "size": 2, "level": 0}],
    "rank_classes": [
      {"name": "s0", "ranks": [0, 1], "static_memory": {"params": 1e9, "grads": 1e9, "optimizer_state": 4e9, "reserved": 5e8},
       "tasks": [
         {"id": "a", "kind": "alloc", "stream": "compute", "bytes": 1e8, "tag": "activations mb0 layer0"},
         {"id": "f", "kind": "compute", "stream": "compute", "flops": 1e12, "bytes": 1e9, "precision": "bf16"},
         {"id": "ar", "kind": "collective", "stream": "comm_tp", "collective": "all_reduce", "bytes": 1e7,
          "group": ["tp"], "deps": ["f"], "algorithm": "ring"},
         {"id": "s", "kind": "send", "stream": "p2p", "peer": "s1", "bytes": 1e6, "deps": ["ar"]},
         {"id": "o", "kind": "optimizer", "stream": "compute", "duration_s": 0.001, "deps": ["ar"]}]},
      {"name": "s1", "ranks": [2, 3],
       "tasks": [
         {"id": "r", "kind": "recv", "stream": "p2p", "peer": "s0", "bytes": 1e6},
         {"id": "f", "kind": "compute", "stream": "compute", "flops": 1e12, "precision": "bf16", "deps": ["r"]}]}]
  })");
}

TEST(ProgramJson, ParsesAllTaskKinds) {
  Program p = program_from_json(small_program());
  ASSERT_EQ(p.mesh.size(), 2u);
  EXPECT_EQ(p.mesh[0].stride, 2);  // default row-major strides
  EXPECT_EQ(p.mesh[1].stride, 1);
  ASSERT_EQ(p.rank_classes.size(), 2u);
  const auto& t = p.rank_classes[0].tasks;
  EXPECT_EQ(t[0].kind, TaskKind::alloc);
  EXPECT_EQ(t[0].tag, "activations mb0 layer0");
  EXPECT_EQ(t[2].collective, hardware::Collective::all_reduce);
  EXPECT_EQ(t[2].algorithm, hardware::CollectiveAlgorithm::ring);
  EXPECT_EQ(t[2].group, std::vector<std::string>{"tp"});
  EXPECT_EQ(t[4].kind, TaskKind::optimizer);
  EXPECT_DOUBLE_EQ(*t[4].duration_s, 0.001);
  EXPECT_DOUBLE_EQ(p.rank_classes[0].static_memory.model_states(), 6e9);
  EXPECT_DOUBLE_EQ(p.rank_classes[0].static_memory.total(), 6.5e9);
}

TEST(ProgramJson, RoundTripIsLossless) {
  SyntheticConfig cfg;
  cfg.tp = 2;
  cfg.pp = 2;
  cfg.dp = 2;
  cfg.micro_batches = 3;
  cfg.layers = 2;
  cfg.gpus_per_node = 4;
  cfg.tp_allreduce_bytes = 1e6;
  cfg.layer_grad_bytes = 1e7;
  cfg.layer_activation_bytes = 1e8;
  Program p = synthetic_pipeline_program(cfg);
  p.mesh.front().inner_part = p.mesh.front().size;  // an axis reaching into the next level survives too
  json once = program_to_json(p);
  EXPECT_EQ(once["mesh"][0]["inner_part"], p.mesh.front().size);
  json twice = program_to_json(program_from_json(once));
  EXPECT_EQ(once, twice);
  auto path = symtensor::testing::temp_path("symtensor_sim_roundtrip.json");
  save_program(p, path);
  EXPECT_EQ(program_to_json(load_program(path)), once);
  std::remove(path.c_str());
}

// Each edit of the small program must fail with a message containing `needle`.
void expect_error(const std::function<void(json&)>& edit, const std::string& needle) {
  json j = small_program();
  edit(j);
  try {
    program_from_json(j);
    ADD_FAILURE() << "no error; expected one mentioning: " << needle;
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "multi-line error: " << what;
  }
}

TEST(ProgramJson, BadProgramsGiveOneLineErrorsNamingTheTask) {
  expect_error([](json& j) { j["rank_classes"][1]["tasks"][1]["deps"] = {"nope"}; }, "task 'f': unknown dependency 'nope'");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][1]["deps"] = {"o"}; }, "dependency cycle");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][1]["kind"] = "dance"; }, "unknown kind 'dance'");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][1]["flops"] = -1; }, "task 'f': 'flops' must be");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][1]["flopz"] = 1; }, "task 'f': unknown key 'flopz'");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][2]["group"] = {"ep"}; }, "task 'ar': group axis 'ep'");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][2]["collective"] = "allreduce"; }, "unknown collective");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][1]["stream"] = "comm_tp"; }, "task 'f': compute tasks run on stream");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][3]["peer"] = "s9"; }, "task 's': unknown peer rank class 's9'");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][3]["bytes"] = 5; }, "task 's': sends 5 bytes");
  expect_error([](json& j) { j["rank_classes"][1]["tasks"][0]["peer"] = "s1"; }, "peer is its own rank class");
  expect_error([](json& j) { j["rank_classes"][0]["tasks"][4]["id"] = "f"; }, "task 'f': duplicate task id");
  expect_error([](json& j) { j["rank_classes"][1]["ranks"] = {2}; }, "rank 3 belongs to no rank class");
  expect_error([](json& j) { j["rank_classes"][1]["ranks"] = {1, 2, 3}; }, "rank 1 is in rank classes 's0' and 's1'");
  expect_error([](json& j) { j["rank_classes"][1]["tasks"][1].erase("precision"); }, "missing key 'precision'");
  expect_error([](json& j) { j["mesh"][0]["stride"] = 2; }, "give 'stride' on every axis or on none");
  expect_error([](json& j) { j.erase("mesh"); }, "missing key 'mesh'");
}

TEST(ProgramJson, CollectiveMustExistOnEveryGroupMember) {
  json j = small_program();
  // Put rank 2 (class s1) in the tp group of class s0 by making tp span pp too.
  j["rank_classes"][0]["tasks"][2]["group"] = {"pp", "tp"};
  try {
    program_from_json(j);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("group member rank 2 (class 's1') has no task 'ar'"), std::string::npos)
        << e.what();
  }
}

TEST(ProgramJson, LoadNamesTheFile) {
  auto path = symtensor::testing::temp_path("symtensor_sim_bad.json");
  std::ofstream(path) << "{ not json";
  try {
    load_program(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace symtensor::sim
