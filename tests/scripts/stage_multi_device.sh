#!/usr/bin/env bash
# Stage files carry their sharding under ONNX 1.18's multi-device field names
# (symtensor.onnx_multi_device): read back with Python's onnx, q_proj's weight is split on
# its output dim into tp=2 shards, each held by the dp=2 ranks of its replica group; every
# value of symtensor.sharding.* has a spec; pipeline stages are recorded.
# Usage: bash stage_multi_device.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models llama2-70b-tiny -o "$work/l.onnx" >/dev/null
"$symtensor" compile "$work/l.onnx" --cluster dgx-a100 --nodes 2 --gpus 2 --bind batch=8,seq=16 \
  --megatron tp=2,pp=2 --onnx -o "$work/c" >/dev/null
/usr/bin/python3 - "$work/c" <<'PY' || fail "multi-device metadata"
import glob, json, sys
import onnx
files = sorted(glob.glob(sys.argv[1] + "/stage_*.onnx"))
assert files, "no stage files"
stages = set()
for f in files:
    m = onnx.load(f, load_external_data=False)
    meta = {p.key: p.value for p in m.metadata_props}
    md = json.loads(meta["symtensor.onnx_multi_device"])
    conf, node = md["configuration"], md["node_device_configuration"]
    assert conf["num_devices"] == 4 and len(conf["device"]) == 4, conf
    assert node["configuration_id"] == conf["name"]
    stage = node["pipeline_stage"]
    assert stage == int(meta["symtensor.stage"]), (stage, meta["symtensor.stage"])
    stages.add(stage)
    specs = {s["tensor_name"]: s for s in node["sharding_spec"]}
    ours = {k[len("symtensor.sharding."):] for k in meta if k.startswith("symtensor.sharding.")}
    assert ours == set(specs), ours ^ set(specs)
    for s in specs.values():
        groups = {e["key"]: e["value"] for e in s["index_to_device_group_map"]}
        assert sorted(groups) == sorted(s["device"]), s
        assert all(k < 0 for k in groups), s
        ranks = sorted(r for g in groups.values() for r in g)
        assert len(ranks) == len(set(ranks)) == 2, s   # the stage's two ranks, each in one group
        shards = 1
        for d in s["sharded_dim"]:
            (simple,) = d["simple_sharding"]
            shards *= simple["num_shards"]
        assert shards == len(groups), s
    if stage == 0:
        q = specs["model.layers.0.self_attn.q_proj.weight"]
        assert q["sharded_dim"] == [{"axis": 1, "simple_sharding": [{"dim_value": 64, "num_shards": 2}]}], q
        assert len(q["device"]) == 2 and all(len(v["value"]) == 1 for v in q["index_to_device_group_map"]), q
        assert q["symtensor_partial_axes"] == [], q
assert stages == {0, 1}, stages
PY
echo "stage_multi_device: ok"
