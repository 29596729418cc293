#!/usr/bin/env bash
# The catalogue of bad inputs, across every subcommand the binary has (`symtensor --help`).
# Usage: bash bad_inputs.sh SYMTENSOR_BINARY SOURCE_ROOT
#
# Every `bad` case must: exit non-zero (and not by a signal), print exactly ONE line on
# stderr beginning "symtensor: error:", and leave no file behind (each case runs in its own
# empty folder, into which its outputs point). A `robust` case is a legal but awkward
# request (1 GPU, a prime GPU count the plan can use): it may succeed, but if it fails it
# must fail the same clean way, and it never crashes.
# Commands that are not in the binary yet are listed as skipped. Every case is run and
# listed; the script fails at the end if any case failed.
set -uo pipefail
symtensor="$1"
root="$2"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

pass=0
failures=()
skipped=()
case_no=0

commands="$("$symtensor" --help 2>&1 | awk '/^Subcommands:/{on=1; next} on && NF {print $1}')"
has() { grep -qx "$1" <<<"$commands"; }

# ---- inputs ----------------------------------------------------------------------------
in="$work/inputs"
mkdir -p "$in"
"$symtensor" models gpt-1.7b-tiny -o "$in/tiny.onnx" >/dev/null               # 2 layers, hidden 64, 4 heads
"$symtensor" models gpt3-175b -o "$in/gpt3.onnx" >/dev/null                  # weight-free
"$symtensor" models gpt-1.7b --layers 2 --hidden 128 --heads 4 -o "$in/small.onnx" >/dev/null
head -c 4096 /dev/urandom >"$in/garbage.onnx"
head -c "$(($(stat -c %s "$in/tiny.onnx") / 2))" "$in/tiny.onnx" >"$in/truncated.onnx"
: >"$in/empty.onnx"
printf 'name: broken\ndevice: [unclosed\n' >"$in/bad_syntax.yaml"
printf 'name: no-device\ndescription: lacks device and topology\n' >"$in/missing_keys.yaml"
sed 's/memory_gb: [0-9.]*/memory_gb: lots/' "$root/hardware/profiles/dgx-a100.yaml" >"$in/bad_number.yaml"
sed 's/size: 8$/size: 0/' "$root/hardware/profiles/dgx-a100.yaml" >"$in/zero_size.yaml"
printf 'format: symtensor-plan/1\nstrategy: [\n' >"$in/bad_plan.yaml"
printf 'not a plan\n' >"$in/wrong_plan.yaml"
: >"$in/a_file"                    # a file where a folder is expected: nothing can be written below it
mkdir -p "$in/empty_dir"
chmod -R a-w "$in"

# ---- the checks --------------------------------------------------------------------------
run_case() {  # run_case KIND ARGS...   (KIND: bad | robust)
  local kind="$1"; shift
  case_no=$((case_no + 1))
  local dir="$work/case$case_no"
  mkdir -p "$dir"
  local rc
  (cd "$dir" && "$symtensor" "$@" >"$work/out" 2>"$work/err"); rc=$?
  local problems=()
  local lines
  lines="$(grep -c . "$work/err")"
  local first
  first="$(head -n 1 "$work/err")"
  if [ "$rc" -ge 128 ]; then
    problems+=("killed by signal $((rc - 128))")
  elif [ "$rc" -eq 0 ]; then
    [ "$kind" = bad ] && problems+=("exit status 0")
  fi
  if [ "$rc" -ne 0 ]; then
    [ "$lines" -eq 1 ] || problems+=("$lines lines on stderr")
    [[ "$first" == "symtensor: error: "* ]] || problems+=("stderr does not begin with 'symtensor: error:'")
    local left
    local leftover=()
    mapfile -t leftover < <(cd "$dir" && find . -mindepth 1)
    left="${leftover[*]:0:3}"
    [ -z "$left" ] || problems+=("left files: $left")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    pass=$((pass + 1))
    printf 'ok    %-6s symtensor %s\n' "$kind" "$*"
    [ "$rc" -ne 0 ] && printf '        %s\n' "$first"
  else
    local joined
    joined="$(IFS=';'; echo "${problems[*]}")"
    failures+=("symtensor $* -> $joined")
    printf 'FAIL  %-6s symtensor %s\n        %s\n' "$kind" "$*" "$joined"
    head -n 6 "$work/err" | sed 's/^/        | /'
  fi
  rm -rf "$dir"
}
bad() { run_case bad "$@"; }
robust() { run_case robust "$@"; }
skip() { skipped+=("$1"); }

M="$in/tiny.onnx"
MB="batch=8,seq=16"

# ---- top level ---------------------------------------------------------------------------
bad no-such-command
bad inspect  # missing the model argument

# ---- inspect -----------------------------------------------------------------------------
if has inspect; then
  bad inspect "$in/missing.onnx"
  bad inspect "$in/garbage.onnx"
  bad inspect "$in/truncated.onnx"
  bad inspect "$in/empty.onnx"
  bad inspect "$in/empty_dir"
  bad inspect "$in/bad_syntax.yaml"
  bad inspect "$M" --bind batch=0
  bad inspect "$M" --bind batch=-4
  bad inspect "$M" --bind batch=abc
  bad inspect "$M" --bind batch=2.5
  bad inspect "$M" --bind nosuchdim=3
  bad inspect "$M" --bind batch
  bad inspect "$M" --top -1
else skip inspect; fi

# ---- models --------------------------------------------------------------------------------
if has models; then
  bad models no-such-model -o out.onnx
  bad models gpt-1.7b
  bad models gpt-1.7b --layers 0 -o out.onnx
  bad models gpt-1.7b --layers -2 -o out.onnx
  bad models gpt-1.7b --hidden 100 --heads 7 -o out.onnx
  bad models gpt-1.7b-tiny -o "$in/a_file/out.onnx"
  bad models gpt-1.7b-tiny -o /proc/symtensor/out.onnx
  bad models gpt-1.7b-tiny -o "$in/empty_dir"
else skip models; fi

# ---- hardware ------------------------------------------------------------------------------
if has hardware; then
  bad hardware show no-such-profile
  bad hardware show "$in/missing.yaml"
  bad hardware show "$in/bad_syntax.yaml"
  bad hardware show "$in/missing_keys.yaml"
  bad hardware show "$in/bad_number.yaml"
  bad hardware show "$in/zero_size.yaml"
  bad hardware show "$in/garbage.onnx"
  bad hardware show dgx-a100 --nodes 0
  bad hardware show dgx-a100 --nodes -3
  bad hardware show dgx-a100 --gpus 0
  bad hardware show dgx-a100 --gpus 9
  bad hardware show dgx-a100x0
  robust hardware show dgx-a100 --gpus 1
  robust hardware show dgx-a100 --gpus 7
  robust hardware show dgx-a100 --nodes 13
else skip hardware; fi

# ---- strategy commands: simulate, compile, search --------------------------------------------
# Arguments common to every command that plans a model on a cluster.
plan_cases() {  # plan_cases COMMAND [EXTRA ARGS...]  (EXTRA: how to ask for a strategy, an output)
  local cmd="$1"; shift
  bad "$cmd" "$in/missing.onnx" --cluster dgx-a100 --bind "$MB" "$@"
  bad "$cmd" "$in/garbage.onnx" --cluster dgx-a100 --bind "$MB" "$@"
  bad "$cmd" "$in/truncated.onnx" --cluster dgx-a100 --bind "$MB" "$@"
  bad "$cmd" "$M" --cluster no-such-profile --bind "$MB" "$@"
  bad "$cmd" "$M" --cluster "$in/bad_syntax.yaml" --bind "$MB" "$@"
  bad "$cmd" "$M" --cluster "$in/missing_keys.yaml" --bind "$MB" "$@"
  bad "$cmd" "$M" --cluster dgx-a100 --bind batch=0,seq=16 "$@"
  bad "$cmd" "$M" --cluster dgx-a100 --bind batch=-8,seq=16 "$@"
  bad "$cmd" "$M" --cluster dgx-a100 --bind seq=16 "$@"  # batch not bound
  bad "$cmd" "$M" --cluster dgx-a100 --gpus 0 --bind "$MB" "$@"
  bad "$cmd" "$M" --cluster dgx-a100 --nodes 0 --bind "$MB" "$@"
  bad "$cmd" "$M" --cluster dgx-a100 --nodes -1 --bind "$MB" "$@"
}

if has simulate; then
  plan_cases simulate --strategy dp
  bad simulate "$M" --cluster dgx-a100 --bind "$MB"                      # no strategy, no plan
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy nosuch
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --plan "$in/missing.yaml"
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --plan "$in/bad_plan.yaml"
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --plan "$in/wrong_plan.yaml"
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy megatron --megatron tp=3
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy megatron --megatron tp=8   # 4 heads
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy megatron --megatron tp=0
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy megatron --megatron pp=5
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy megatron --megatron bogus=1
  bad simulate "$M" --cluster dgx-a100 --gpus 7 --bind "$MB" --strategy dp        # 8 samples on 7 GPUs
  bad simulate "$M" --cluster dgx-a100 --nodes 13 --bind "$MB" --strategy dp      # 104 GPUs, 8 samples
  bad simulate "$M" --cluster dgx-a100x512 --bind "$MB" --strategy dp             # more devices than work
  bad simulate "$M" --cluster dgx-a100 --gpus 1 --bind "$MB" --strategy megatron --megatron tp=2
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy dp --mode sideways
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy dp --precision fp4
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy dp --bucket-mb 0
  bad simulate "$M" --cluster dgx-a100 --bind "$MB" --strategy dp --trace "$in/a_file/trace.json"
  robust simulate "$M" --cluster dgx-a100 --gpus 1 --bind "$MB" --strategy dp
  robust simulate "$M" --cluster dgx-a100 --gpus 7 --bind batch=14,seq=16 --strategy dp
  robust simulate "$M" --cluster dgx-a100 --nodes 13 --bind batch=104,seq=16 --strategy dp
  robust simulate "$in/gpt3.onnx" --cluster pcie-l4 --gpus 1 --bind batch=8,seq=2048 --strategy dp  # fits nowhere
else skip simulate; fi

if has compile; then
  plan_cases compile --strategy dp -o out
  bad compile "$M" --cluster dgx-a100 --bind "$MB" --strategy dp -o "$in/a_file/plan"
  bad compile "$M" --cluster dgx-a100 --bind "$MB" --strategy dp -o /proc/symtensor/plan
  bad compile "$M" --cluster dgx-a100 --bind "$MB" --strategy nosuch -o out
  bad compile "$M" --cluster dgx-a100 --bind "$MB" --strategy megatron --megatron tp=8 -o out
  bad compile "$M" --cluster dgx-a100 --gpus 7 --bind "$MB" --strategy dp -o out
  bad compile "$M" --cluster dgx-a100 --nodes 13 --bind "$MB" --strategy dp -o out
  bad compile "$M" --cluster dgx-a100x512 --bind "$MB" --strategy dp -o out
  bad compile "$in/gpt3.onnx" --cluster pcie-l4 --gpus 1 --bind batch=8,seq=2048 --strategy dp -o out
  bad compile "$in/gpt3.onnx" --cluster pcie-l4 --gpus 1 --bind batch=8,seq=2048 -o out   # search: fits nowhere
else skip compile; fi

if has search; then
  plan_cases search -o out
  bad search "$M" --cluster dgx-a100 --bind "$MB" -o "$in/a_file/plan"
  bad search "$M" --cluster dgx-a100x512 --bind "$MB" -o out
  bad search "$in/gpt3.onnx" --cluster pcie-l4 --gpus 1 --bind batch=8,seq=2048 -o out
  robust search "$M" --cluster dgx-a100 --gpus 7 --bind "$MB" -o out
  robust search "$M" --cluster dgx-a100 --nodes 13 --bind "$MB" -o out
else skip search; fi

# ---- reports: compare, sweep -------------------------------------------------------------
if has compare; then
  bad compare "$in/missing.onnx" --cluster dgx-a100 --bind "$MB" -o out
  bad compare "$in/garbage.onnx" --cluster dgx-a100 --bind "$MB" -o out
  bad compare "$M" --cluster no-such-profile --bind "$MB" -o out
  bad compare "$M" --cluster "$in/bad_syntax.yaml" --bind "$MB" -o out
  bad compare "$M" --cluster dgx-a100 --bind batch=0,seq=16 -o out
  bad compare "$M" --cluster dgx-a100 --bind batch=-8,seq=16 -o out
  bad compare "$M" --cluster dgx-a100 --gpus 0 --bind "$MB" -o out
  bad compare "$M" --cluster dgx-a100 --bind "$MB" --strategies nosuch -o out
  bad compare "$M" --cluster dgx-a100 --bind "$MB" --strategies "" -o out
  bad compare "$M" --cluster dgx-a100 --bind "$MB" -o "$in/a_file/report"
  bad compare "$M" --cluster dgx-a100 --bind "$MB" -o /proc/symtensor/report
  bad compare "$M" --cluster dgx-a100 --bind "$MB"                          # no output folder
else skip compare; fi

if has sweep; then
  bad sweep "$in/missing.onnx" --clusters dgx-a100 --bind "$MB" -o out
  bad sweep "$in/garbage.onnx" --clusters dgx-a100 --bind "$MB" -o out
  bad sweep "$M" --clusters no-such-profile --bind "$MB" -o out
  bad sweep "$M" --clusters "" --bind "$MB" -o out
  bad sweep "$M" --clusters dgx-a100 --gpus 0 --bind "$MB" -o out
  bad sweep "$M" --clusters dgx-a100 --gpus 8..4 --bind "$MB" -o out
  bad sweep "$M" --clusters dgx-a100 --gpus abc --bind "$MB" -o out
  bad sweep "$M" --clusters dgx-a100 --bind batch=0,seq=16 -o out
  bad sweep "$M" --clusters dgx-a100 --bind "$MB" --tokens -5 -o out
  bad sweep "$M" --clusters dgx-a100 --bind "$MB" --strategies nosuch -o out
  bad sweep "$M" --clusters dgx-a100 --bind "$MB" -o "$in/a_file/report"
else skip sweep; fi

# ---- verify, shard ---------------------------------------------------------------------------
if has verify; then
  bad verify "$in/missing.onnx" "$in/empty_dir"
  bad verify "$in/garbage.onnx" "$in/empty_dir"
  bad verify "$M" "$in/empty_dir"                 # no emulation.onnx
  bad verify "$M" "$in/missing_dir"
  bad verify "$M" "$in/empty_dir" --bind batch=0
  bad verify "$M" "$in/empty_dir" --rtol -1
else skip verify; fi

if has shard; then
  bad shard "$in/missing.onnx" -o out --tp 2 --bind batch=2,seq=8
  bad shard "$in/garbage.onnx" -o out --tp 2 --bind batch=2,seq=8
  bad shard "$M" -o out --tp 0 --bind batch=2,seq=8
  robust shard "$M" -o out --tp 3 --bind batch=2,seq=8       # 4 heads: only the fused QKV (3h) divides
  bad shard "$M" -o out --dp 2 --bind batch=3,seq=8          # 3 samples on 2 replicas
  bad shard "$M" -o out --tp 2 --bind batch=0,seq=8
  bad shard "$M" -o out --tp 2 --bind batch=2                # seq not bound
  bad shard "$M" -o out --pp 500 --bind batch=2,seq=8        # more stages than operators
  bad shard "$M" -o "$in/a_file/out" --tp 2 --bind batch=2,seq=8
  bad shard "$M" -o out --tp 2 --bind batch=2,seq=8 --cluster no-such-profile
  bad shard "$M" -o out --tp 2 --bind batch=2,seq=8 --mutate nonsense
else skip shard; fi

# ---- summary -------------------------------------------------------------------------------
echo
echo "bad_inputs: $pass of $case_no cases ok; ${#failures[@]} failed; commands not in this binary: ${skipped[*]:-none}"
if [ ${#failures[@]} -gt 0 ]; then
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
