#!/usr/bin/env python3
"""Parses what `symtensor export` wrote with each target's own rules and reads it back.

Usage: export_checks.py TARGET FILE KEY=VALUE...  (the expected recipe: tp pp vp cp dp mb
accumulation batch zero recompute sp world). Exits non-zero with one line naming the problem.
Megatron and NeMo names and value types are those their argument parsers document (see
shared/reference/FRAMEWORKS.md); TOML goes through tomllib, JSON through json, Python files
through ast (Debian's torch 1.13 has no DTensor API to run them on), checked against a table
of the documented signatures.
"""
import ast
import json
import sys
import tomllib

INT, FLOAT, FLAG, STR = "int", "float", "flag", "str"
MEGATRON_ARGS = {
    "tensor-model-parallel-size": INT, "pipeline-model-parallel-size": INT, "context-parallel-size": INT,
    "expert-model-parallel-size": INT, "expert-tensor-parallel-size": INT, "num-experts": INT, "sequence-parallel": FLAG,
    "num-layers": INT, "num-layers-per-virtual-pipeline-stage": INT, "num-virtual-stages-per-pipeline-rank": INT,
    "decoder-first-pipeline-num-layers": INT, "decoder-last-pipeline-num-layers": INT,
    "cp-comm-type": ("p2p", "a2a", "allgather", "a2a+p2p"), "use-distributed-optimizer": FLAG,
    "overlap-grad-reduce": FLAG, "overlap-param-gather": FLAG, "use-megatron-fsdp": FLAG, "use-torch-fsdp2": FLAG,
    "data-parallel-sharding-strategy": ("no_shard", "optim", "optim_grads", "optim_grads_params"),
    "recompute-granularity": ("full", "selective"), "recompute-method": ("uniform", "block"),
    "recompute-num-layers": INT, "micro-batch-size": INT, "global-batch-size": INT, "seq-length": INT,
    "bf16": FLAG, "fp16": FLAG, "fp8-format": ("e4m3", "hybrid"),
    "fp8-recipe": ("tensorwise", "delayed", "mxfp8", "blockwise", "custom"), "fp4-format": ("e2m1",), "fp4-recipe": ("nvfp4",),
    # the model (FRAMEWORKS.md 1a, 1c) and a benchmark launch on mock data (1f)
    "hidden-size": INT, "ffn-hidden-size": INT, "num-attention-heads": INT, "group-query-attention": FLAG,
    "num-query-groups": INT, "kv-channels": INT, "swiglu": FLAG, "normalization": ("LayerNorm", "RMSNorm"),
    "norm-epsilon": FLOAT, "position-embedding-type": ("learned_absolute", "rope", "yarn", "mrope", "relative", "none"),
    "rotary-base": INT, "max-position-embeddings": INT, "untie-embeddings-and-output-weights": FLAG,
    "disable-bias-linear": FLAG, "add-qkv-bias": FLAG, "attention-dropout": FLOAT, "hidden-dropout": FLOAT,
    "make-vocab-size-divisible-by": INT, "vocab-size": INT, "moe-router-topk": INT, "moe-ffn-hidden-size": INT,
    "moe-token-dispatcher-type": ("allgather", "alltoall", "flex"), "moe-grouped-gemm": FLAG,
    "moe-expert-capacity-factor": FLOAT,
    "moe-router-load-balancing-type": ("aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none"),
    "moe-aux-loss-coeff": FLOAT, "account-for-embedding-in-pipeline-split": FLAG, "account-for-loss-in-pipeline-split": FLAG,
    "ckpt-format": ("torch", "torch_dist", "torch_dcp", "fsdp_dtensor"), "mock-data": FLAG,
    "tokenizer-type": ("NullTokenizer", "GPT2BPETokenizer", "HuggingFaceTokenizer"), "train-iters": INT, "lr": FLOAT,
    "min-lr": FLOAT, "lr-decay-style": ("constant", "linear", "cosine", "inverse-square-root", "WSD"),
    "lr-warmup-iters": INT, "weight-decay": FLOAT, "clip-grad": FLOAT, "adam-beta1": FLOAT, "adam-beta2": FLOAT,
    "eval-iters": INT, "eval-interval": INT, "log-interval": INT,
}
NEMO_STRATEGY = {"tensor_model_parallel_size": int, "pipeline_model_parallel_size": int,
                 "virtual_pipeline_model_parallel_size": (int, type(None)), "context_parallel_size": int,
                 "sequence_parallel": bool, "expert_model_parallel_size": int, "expert_tensor_parallel_size": int}
TITAN = {
    "parallelism": {"data_parallel_replicate_degree": int, "data_parallel_shard_degree": int,
                    "fsdp_reshard_after_forward": str, "tensor_parallel_degree": int, "pipeline_parallel_degree": int,
                    "pipeline_parallel_schedule": str, "pipeline_parallel_microbatch_size": int,
                    "pipeline_parallel_layers_per_stage": int, "context_parallel_degree": int,
                    "context_parallel_rotate_method": str, "expert_parallel_degree": int},
    "activation_checkpoint": {"mode": str, "selective_ac_option": str},
    "training": {"local_batch_size": int, "global_batch_size": int, "seq_len": int, "mixed_precision_param": str,
                 "mixed_precision_reduce": str, "steps": int, "dataset": str},
    "model": {"name": str, "flavor": str, "converters": list},
    "experimental": {"custom_import": str},
    "compile": {"enable": bool},
    "checkpoint": {"enable": bool},
    "quantize": {"linear": dict},
}
TITAN["parallelism"].update({"pipeline_parallel_first_stage_less_layers": int, "pipeline_parallel_last_stage_less_layers": int})
# Documented signatures (torch 2.6): positional parameters, keyword parameters.
TORCH_SIGNATURES = {
    "init_device_mesh": (["device_type", "mesh_shape"], {"mesh_dim_names"}),
    "parallelize_module": (["module", "device_mesh", "parallelize_plan"], set()),
    "ColwiseParallel": ([], {"input_layouts", "output_layouts", "use_local_output"}),
    "RowwiseParallel": ([], {"input_layouts", "output_layouts", "use_local_output"}),
    "SequenceParallel": ([], {"sequence_dim", "use_local_output"}),
    "fully_shard": (["module"], {"mesh", "reshard_after_forward", "mp_policy", "offload_policy"}),
    "replicate": (["module"], {"device_mesh"}),
    "checkpoint_wrapper": (["module"], {"checkpoint_impl", "checkpoint_fn"}),
    "Shard": (["dim"], set()), "Replicate": ([], set()),
}
TORCH_MODULES = {"torch.distributed.device_mesh": {"init_device_mesh"}, "torch.distributed.tensor": {"Replicate", "Shard"},
                 "torch.distributed.tensor.parallel": {"ColwiseParallel", "RowwiseParallel", "SequenceParallel",
                                                       "parallelize_module"},
                 "torch.distributed.fsdp": {"fully_shard"}, "torch.distributed._composable.replicate": {"replicate"},
                 "torch.distributed.algorithms._checkpoint.checkpoint_wrapper": {"checkpoint_wrapper"}}


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(name, got, want):
    if str(got) != str(want):
        fail(f"{name}: read back {got}, plan says {want}")


def megatron(text, e):
    args, launch = {}, None
    for line in text.splitlines():
        if line.startswith("# launch:"):
            launch = line.split()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if not parts[0].startswith("--"):
            fail(f"not a flag: {line}")
        name = parts[0][2:]
        kind = MEGATRON_ARGS.get(name)
        if kind is None:
            fail(f"--{name} is not a documented Megatron-LM argument")
        if kind == FLAG:
            if len(parts) != 1:
                fail(f"--{name} takes no value: {line}")
            args[name] = True
        elif len(parts) != 2:
            fail(f"--{name} needs one value: {line}")
        elif kind == INT:
            if not parts[1].isdigit():
                fail(f"--{name} needs an integer: {parts[1]}")
            args[name] = int(parts[1])
        elif kind == FLOAT:
            try:
                args[name] = float(parts[1])
            except ValueError:
                fail(f"--{name} needs a number: {parts[1]}")
        elif parts[1] not in kind:
            fail(f"--{name} {parts[1]}: not one of {kind}")
        else:
            args[name] = parts[1]
    nodes = int(launch[launch.index("--nnodes") + 1]); gpus = int(launch[launch.index("--nproc-per-node") + 1])
    world = nodes * gpus
    tp, pp = args["tensor-model-parallel-size"], args["pipeline-model-parallel-size"]
    cp = args.get("context-parallel-size", 1)
    if world % (tp * pp * cp):
        fail(f"world {world} not divisible by tp*pp*cp = {tp * pp * cp}")
    dp = world // (tp * pp * cp)
    # Megatron-Core's expert grid: world % (etp * ep * pp) == 0, num_experts % ep == 0.
    ep, etp = args.get("expert-model-parallel-size", 1), args.get("expert-tensor-parallel-size", tp)
    if world % (etp * ep * pp):
        fail(f"world {world} not divisible by etp*ep*pp = {etp * ep * pp}")
    if args.get("num-experts", ep) % ep:
        fail(f"--num-experts {args.get('num-experts')} not divisible by ep {ep}")
    mbs, gbs = args["micro-batch-size"], args["global-batch-size"]
    if gbs % (mbs * dp):
        fail(f"global batch {gbs} % (micro-batch {mbs} x dp {dp}) != 0")
    layers = args.get("num-layers", 0)
    vp = args.get("num-virtual-stages-per-pipeline-rank", 1)
    if "num-layers-per-virtual-pipeline-stage" in args:
        vp = layers // pp // args["num-layers-per-virtual-pipeline-stage"]
    zero = 1 if "use-distributed-optimizer" in args else 0
    if args.get("data-parallel-sharding-strategy") == "optim_grads": zero = 2
    if args.get("data-parallel-sharding-strategy") == "optim_grads_params": zero = 3
    if "use-megatron-fsdp" in args and args.get("ckpt-format") != "fsdp_dtensor":
        fail("--use-megatron-fsdp without --ckpt-format fsdp_dtensor")
    got = dict(tp=tp, pp=pp, vp=vp, cp=cp, dp=dp, mb=mbs, accumulation=gbs // (mbs * dp), batch=gbs, zero=zero,
               recompute=args.get("recompute-granularity", "none"), sp=int("sequence-parallel" in args), world=world,
               ep=ep, etp=etp)
    if "decoder-first-pipeline-num-layers" in args:
        got["first"], got["last"] = args["decoder-first-pipeline-num-layers"], args["decoder-last-pipeline-num-layers"]
    return got


def call_kwargs(tree, func_name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == func_name:
            return node
    return None


def nemo(text, e):
    tree = ast.parse(text)
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            values[node.targets[0].id] = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords
                                          if isinstance(k.value, ast.Constant)}
    s = values.get("strategy_kwargs")
    if s is None:
        fail("no strategy_kwargs = dict(...)")
    for k, v in s.items():
        if k not in NEMO_STRATEGY:
            fail(f"MegatronStrategy has no argument {k}")
        if not isinstance(v, NEMO_STRATEGY[k]) or (NEMO_STRATEGY[k] is int and isinstance(v, bool)):
            fail(f"MegatronStrategy {k}={v!r}: wrong type")
    if call_kwargs(tree, "MegatronStrategy") is None:
        fail("no nl.MegatronStrategy call")
    t, d = values["trainer_kwargs"], values["data_kwargs"]
    world = t["devices"] * t["num_nodes"]
    tp, pp, cp = s["tensor_model_parallel_size"], s["pipeline_model_parallel_size"], s["context_parallel_size"]
    dp = world // (tp * pp * cp)
    mbs, gbs = d["micro_batch_size"], d["global_batch_size"]
    opt = call_kwargs(tree, "OptimizerConfig")
    distopt = any(k.arg == "use_distributed_optimizer" and k.value.value for k in opt.keywords)
    rec = values["model_config_overrides"].get("recompute_granularity") or "none"
    return dict(tp=tp, pp=pp, vp=s["virtual_pipeline_model_parallel_size"] or 1, cp=cp, dp=dp, mb=mbs,
                accumulation=gbs // (mbs * dp), batch=gbs, zero=int(distopt), recompute=rec,
                sp=int(s["sequence_parallel"]), world=world, ep=s.get("expert_model_parallel_size", 1),
                etp=s.get("expert_tensor_parallel_size", tp))


def torchtitan(text, e):
    doc = tomllib.loads(text)
    for section, keys in doc.items():
        if section not in TITAN:
            fail(f"[{section}] is not a torchtitan section this export may set")
        for k, v in keys.items():
            if k not in TITAN[section]:
                fail(f"[{section}] {k} is not a torchtitan key")
            want = TITAN[section][k]
            if not isinstance(v, want) or (isinstance(v, bool) and want is not bool):
                fail(f"[{section}] {k} = {v!r}: wrong type")
    p, t = doc["parallelism"], doc["training"]
    if doc["activation_checkpoint"]["mode"] not in ("none", "selective", "full"):
        fail("activation_checkpoint.mode")
    dp = p["data_parallel_replicate_degree"] * p["data_parallel_shard_degree"]
    pp = p["pipeline_parallel_degree"]
    # torchtitan: accumulation = global / (local x dp); with a pipeline each step runs
    # local / pipeline_parallel_microbatch_size micro-batches.
    local = t["local_batch_size"]
    mbs = p["pipeline_parallel_microbatch_size"] if pp > 1 else local
    if t["global_batch_size"] % (local * dp):
        fail(f"global_batch_size {t['global_batch_size']} % (local_batch_size {local} x dp {dp}) != 0")
    if local % mbs:
        fail(f"local_batch_size {local} % pipeline_parallel_microbatch_size {mbs} != 0")
    zero = 3 if p["data_parallel_shard_degree"] > 1 else 0
    return dict(tp=p["tensor_parallel_degree"], pp=pp, cp=p["context_parallel_degree"], dp=dp, mb=mbs,
                accumulation=t["global_batch_size"] // (local * dp) * (local // mbs), batch=t["global_batch_size"], zero=zero,
                recompute=doc["activation_checkpoint"]["mode"],
                world=dp * p["tensor_parallel_degree"] * pp * p["context_parallel_degree"],
                ep=p.get("expert_parallel_degree", 1))


def deepspeed(text, e):
    j = json.loads(text)
    for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        if not isinstance(j.get(k), int) or isinstance(j.get(k), bool):
            fail(f"{k} missing or not an integer")
    if j["zero_optimization"]["stage"] not in (0, 1, 2, 3):
        fail("zero_optimization.stage not 0..3")
    pipe = ast.parse(open(sys.argv[2] + ".pipeline.py").read())
    stages = [n.value.value for n in pipe.body if isinstance(n, ast.Assign) and n.targets[0].id == "NUM_STAGES"][0]
    if call_kwargs(pipe, "PipelineModule") is None:
        fail("no PipelineModule call beside the JSON")
    if j.get("pipeline", {}).get("stages") != stages:
        fail("pipeline.stages and PipelineModule's num_stages differ")
    tp = j.get("tensor_parallel", {}).get("autotp_size", 1)
    world = int(e["world"])
    dp = world // (stages * tp)
    mb, gas = j["train_micro_batch_size_per_gpu"], j["gradient_accumulation_steps"]
    if j["train_batch_size"] != mb * gas * dp:
        fail(f"train_batch_size {j['train_batch_size']} != {mb} x {gas} x dp {dp}")
    rec = "full" if "activation_checkpointing" in j else "none"
    return dict(tp=tp, pp=stages, cp=1, dp=dp, mb=mb, accumulation=gas, batch=j["train_batch_size"],
                zero=j["zero_optimization"]["stage"], recompute=rec, world=dp * stages * tp)


def check_signatures(tree):
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in TORCH_MODULES:
            for a in node.names:
                if a.name not in TORCH_MODULES[node.module]:
                    fail(f"{node.module} has no {a.name}")
                imported.add(a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in TORCH_SIGNATURES:
            positional, keywords = TORCH_SIGNATURES[node.func.id]
            if node.func.id not in imported:
                fail(f"{node.func.id} used but not imported")
            if len(node.args) > len(positional):
                fail(f"{node.func.id}: {len(node.args)} positional arguments, documented {positional}")
            for k in node.keywords:
                if k.arg not in keywords and k.arg not in positional:
                    fail(f"{node.func.id}: no keyword {k.arg}")


def module_constants(tree):
    out = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            try:
                out[n.targets[0].id] = ast.literal_eval(n.value)
            except ValueError:
                pass
    return out


def dtensor(text, e):
    tree = ast.parse(text)
    check_signatures(tree)
    c = module_constants(tree)
    dp, tp = c["MESH_SHAPE"]
    if c["MESH_DIM_NAMES"] != ("dp", "tp"):
        fail("mesh dim names")
    plan_fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "tp_plan"][0]
    styles = {}
    for node in ast.walk(plan_fn):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                styles[k.value] = v.func.id
    for fqn, style in e.get("styles", {}).items():
        expect(f"tp_plan[{fqn}]", styles.get(fqn), style)
    if tp > 1 and not styles:
        fail("tp > 1 but an empty parallelize plan")
    return dict(tp=tp, dp=dp, pp=1, cp=1, zero=3 if c["FULLY_SHARD"] else 0, world=dp * tp,
                recompute="full" if c["RECOMPUTE_LAYERS"] else "none", layers=len(c["LAYERS"]))


def jax(text, e):
    tree = ast.parse(text)
    c = module_constants(tree)
    world = 1
    for s in c["MESH_SHAPE"]:
        world *= s
    specs = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and n.targets[0].id == "PARAM_SPECS":
            for k, v in zip(n.value.keys, n.value.values):
                if not (isinstance(v, ast.Call) and v.func.id == "P"):
                    fail(f"{k.value}: not a PartitionSpec")
                entries = [ast.literal_eval(a) for a in v.args]
                for x in entries:
                    names = x if isinstance(x, tuple) else (x,)
                    for name in names:
                        if name is not None and name not in c["MESH_AXES"]:
                            fail(f"{k.value}: axis {name} not in the mesh")
                specs[k.value] = entries
    for name, want in e.get("specs", {}).items():
        expect(f"PARAM_SPECS[{name}]", specs.get(name), want)
    return dict(world=world, params=len(specs))


def main():
    target, path = sys.argv[1], sys.argv[2]
    expected = dict(a.split("=", 1) for a in sys.argv[3:] if "=" in a and not a.startswith("style:") and not a.startswith("spec:"))
    e = dict(expected)
    e["styles"] = dict(a[6:].split("=", 1) for a in sys.argv[3:] if a.startswith("style:"))
    e["specs"] = {k: ast.literal_eval(v) for k, v in (a[5:].split("=", 1) for a in sys.argv[3:] if a.startswith("spec:"))}
    text = open(path).read()
    got = {"megatron": megatron, "nemo": nemo, "torchtitan": torchtitan, "deepspeed": deepspeed, "dtensor": dtensor,
           "jax": jax}[target](text, e)
    for k, v in expected.items():
        if k not in got:
            fail(f"{target}: cannot read back {k}")
        expect(f"{target} {k}", got[k], v)


if __name__ == "__main__":
    main()
