#!/usr/bin/env bash
# Issue 17 on the GPU machine (H100): the cooperative-matrix GEMM conformance and the precision
# contract tests, then per model pp512 through bench_decode (fast = the default vs accurate), and a
# ~500-token prompt through qwen_generate's defaults, its old defaults (--prefill-chunk 128, f32) and
# --precision accurate, with the last-row logits of fast and accurate compared (relative L2, greedy ids).
#
#   BENCH_BIN=.carry-prefill/bin BENCH_TOKENIZER=.carry-prefill/qwen2-tokenizer \
#     bash .carry-prefill/prefill_bench.sh [tests] [models SHAPE-TYPE,...] [conformance]
# Results in $OUT: tests (*.txt), decode.jsonl, generate.jsonl, contract.jsonl, log.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${BENCH_BIN:-.carry-prefill/bin}
tok=${BENCH_TOKENIZER:-.carry-prefill/qwen2-tokenizer}
OUT=${OUT:-/tmp/prefill-out}
scratch=${BENCH_SCRATCH:-/tmp/octo-bench}
mkdir -p "$OUT" "$scratch"
log="$OUT/log.txt"
export XDG_CACHE_HOME=/tmp/octo-cache

if ! ldconfig -p | grep -q 'libvulkan\.so\.1 ' && compgen -G ".gl/*.deb" > /dev/null; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv_icd" ] && export VK_DRIVER_FILES=$nv_icd

step() {  # step NAME LIMIT OUTFILE CMD...
  local name=$1 limit=$2 file=$3; shift 3
  local t0; t0=$(date +%s)
  echo "=== $name: $*" >> "$log"
  timeout "$limit" "$@" >> "$file" 2>> "$log"
  echo "=== $name: exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$log" >&2
}

# A prompt of about 500 Qwen2 tokens.
prompt=$(python3 -c "print(' '.join('The quick brown fox jumps over the lazy dog number %d.' % i for i in range(37)))")

while [ $# -gt 0 ]; do
  case "$1" in
    tests)  # the cooperative-matrix GEMM at the contract's bounds, the model-level contract
      shift
      { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/env.txt" 2>&1
      step gemm_tiles 120 "$OUT/gemm_tiles.txt" "$bin/gpu_gemm_tiles" -d
      step prefill_head 120 "$OUT/prefill_head.txt" "$bin/gpu_prefill_head" -d ;;
    conformance)  # every kernel at the accurate precision against the reference VM
      shift
      for t in gpu_conformance gpu_conformance_gemv gpu_conformance_fused; do
        step "$t" "${CONFORMANCE_LIMIT:-120}" "$OUT/$t.txt" "$bin/$t" -d
      done ;;
    models)
      list=$2; shift 2
      for m in ${list//,/ }; do
        shape=${m%%-*} type=${m#*-}
        gguf="$scratch/qwen2.5-$shape-$type.gguf"
        if [ ! -f "$gguf" ]; then
          step "make $m" 240 "$log" bash "$here/make_bench_models.sh" --tokenizer "$tok" --shapes "$shape" --types "$type" \
            --scratch "$scratch" --bin "$bin" --keep --keep-hf --no-bench --convert-log "$OUT/convert.jsonl"
        fi
        [ -f "$gguf" ] || continue
        for prec in accurate fast; do
          step "bench $m $prec" 120 "$OUT/decode.jsonl" "$bin/bench_decode" --model "$gguf" --name "$m" \
            --prompt-tokens 512 --decode-tokens 16 --repeat 3 --precision "$prec"
        done
        for cfg in "default" "accurate" "old-default"; do
          args=(--model "$gguf" --prompt "$prompt" -n 32 --ignore-eos --json)
          case $cfg in
            default) args+=(--dump-logits "$OUT/logits-$m-fast.npy") ;;
            accurate) args+=(--precision accurate --dump-logits "$OUT/logits-$m-accurate.npy") ;;
            old-default) args+=(--prefill-chunk 128 --precision accurate) ;;
          esac
          step "generate $m $cfg" 120 "$OUT/tokens-$m-$cfg.jsonl" "$bin/qwen_generate" "${args[@]}"
          { printf '{"label":"%s","config":"%s","out":' "$m" "$cfg"; tail -n 1 "$OUT/tokens-$m-$cfg.jsonl" | tr -d '\n'; echo "}"; } >> "$OUT/generate.jsonl"
        done
        python3 - "$OUT" "$m" >> "$OUT/contract.jsonl" 2>> "$log" <<'PY'
import json, sys
import numpy as np
out, m = sys.argv[1], sys.argv[2]
f = np.load(f"{out}/logits-{m}-fast.npy").astype(np.float64)
a = np.load(f"{out}/logits-{m}-accurate.npy").astype(np.float64)
def ids(cfg):
    r = []
    for line in open(f"{out}/tokens-{m}-{cfg}.jsonl"):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if "id" in o: r.append(o["id"])
    return r
tf, ta = ids("default"), ids("accurate")
top = np.sort(a)[-2:]
first_diff = next((i for i, (x, y) in enumerate(zip(tf, ta)) if x != y), None)
print(json.dumps({"label": m, "rel_l2_fast_vs_accurate": float(np.linalg.norm(f - a) / np.linalg.norm(a)),
                  "max_abs_diff": float(np.max(np.abs(f - a))), "rms_diff": float(np.sqrt(np.mean((f - a) ** 2))),
                  "accurate_top2_gap": float(top[1] - top[0]), "argmax_fast": int(np.argmax(f)),
                  "argmax_accurate": int(np.argmax(a)), "greedy_ids_equal": tf == ta, "n_ids": len(ta),
                  "first_differing_id": first_diff}))
PY
      done ;;
    *) echo "prefill_bench.sh: unknown step '$1'" | tee -a "$log" >&2; shift ;;
  esac
done
ls -la "$OUT" >> "$log"
